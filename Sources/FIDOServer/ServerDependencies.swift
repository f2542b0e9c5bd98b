import Foundation
import Logging

/// What the server needs besides its configuration; tests substitute the clock.
public struct ServerDependencies: Sendable {
    public var logger: Logger
    /// The audit stream: one info line per security decision, with who, from where and the outcome as metadata.
    public var auditLogger: Logger
    public var clock: @Sendable () -> Date
    public var onDecision: @Sendable (ServerDecision) -> Void
    public init(
        logger: Logger = Logger(label: "mauth.server"), auditLogger: Logger = Logger(label: "mauth.audit"),
        clock: @escaping @Sendable () -> Date = { Date() }, onDecision: @escaping @Sendable (ServerDecision) -> Void = { _ in }
    ) {
        self.logger = logger
        self.auditLogger = auditLogger
        self.clock = clock
        self.onDecision = onDecision
    }
}
