import Foundation
import Logging

/// What the server needs besides its configuration; tests substitute the clock.
public struct ServerDependencies: Sendable {
    public var logger: Logger
    /// The audit stream: one info line per security decision, with who, from where and the outcome as metadata.
    public var auditLogger: Logger
    public var clock: @Sendable () -> Date
    public var onDecision: @Sendable (ServerDecision) -> Void
    /// The trace ID of the request being served (W3C, 32 hex digits), for its audit line; nil without tracing. The
    /// tracer that knows it is chosen by the binary (`mauth server` with `observability.tracing`).
    public var traceID: @Sendable () -> String?
    public init(
        logger: Logger = Logger(label: "mauth.server"), auditLogger: Logger = Logger(label: "mauth.audit"),
        clock: @escaping @Sendable () -> Date = { Date() }, onDecision: @escaping @Sendable (ServerDecision) -> Void = { _ in },
        traceID: @escaping @Sendable () -> String? = { nil }
    ) {
        self.traceID = traceID
        self.logger = logger
        self.auditLogger = auditLogger
        self.clock = clock
        self.onDecision = onDecision
    }
}
