import FIDOServerCore
import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Whether this instance wants new traffic. It turns false when graceful shutdown begins, before the server stops
/// accepting connections, so a balancer polling `/health/ready` moves traffic away while in-flight requests drain.
public final class Readiness: Sendable {
    private let accepting = NIOLockedValueBox(true)
    public init() {}
    public var isAccepting: Bool { accepting.withLockedValue { $0 } }
    func stopAccepting() { accepting.withLockedValue { $0 = false } }
}

/// The first service the group shuts down (it is last in the list): on SIGTERM it marks the instance not ready and
/// waits `drain` before the HTTP server itself stops accepting and finishes the requests under way.
struct DrainService: Service {
    let readiness: Readiness
    let drain: Duration
    let logger: Logger

    func run() async throws {
        // Runs until graceful shutdown begins (a cancelled task ends it too).
        try? await gracefulShutdown()
        readiness.stopAccepting()
        logger.notice("shutting down: readiness is now 503; serving for \(drain) more before draining in-flight requests")
        if drain > .zero { try? await Task.sleep(for: drain) }
    }
}

/// `GET /health/live`, `GET /health/ready` and `GET /health`: liveness (the process answers) and readiness (the
/// instance accepts traffic and its database answers a query within two seconds). Not rate-limited and not
/// authorized: balancers and orchestrators call them, and they reveal nothing but up or down.
struct HealthController {
    struct Answer: Encodable {
        var status: String
        var checks: [String: String]
    }

    let readiness: Readiness
    let database: StoreDatabase
    let metrics: ServerMetrics?
    /// The metadata in force: a configured Metadata Service whose BLOB is not loaded is reported, not a failure
    /// (the instance serves what needs no metadata; the reason is in the log).
    var metadata: MetadataSource? = nil

    static let livePath = "/health/live", readyPaths = ["/health/ready", "/health"], metricsPath = "/metrics"
    /// The paths this controller serves: the rate limit never refuses them (a balancer's probes, the scraper).
    static let paths = Set([livePath, metricsPath] + readyPaths)

    func add(to router: Router<ServerRequestContext>) {
        router.get(RouterPath(Self.livePath)) { _, _ in
            Wire.json(Answer(status: "UP", checks: [:]), contentType: Wire.jsonContentType)
        }
        for path in Self.readyPaths { router.get(RouterPath(path)) { _, _ in await ready() } }
        if let metrics {
            router.get(RouterPath(Self.metricsPath)) { _, _ in
                Response(
                    status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                    body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
            }
        }
    }

    func ready() async -> Response {
        var checks: [String: String] = [:]
        var up = true
        if !readiness.isAccepting {
            checks["shutdown"] = "in progress"
            up = false
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await database.ping() }
                group.addTask {
                    try await Task.sleep(for: .seconds(2))
                    throw HealthTimeout()
                }
                try await group.next()
                group.cancelAll()
            }
            checks["database"] = "UP"
        } catch {
            // The detail stays in the log: a probe answer should not describe the database to whoever asks.
            checks["database"] = error is HealthTimeout ? "DOWN (no answer within 2 s)" : "DOWN"
            up = false
        }
        if let metadata, metadata.service != nil {
            checks["metadata"] = metadata.blob.map { "UP (BLOB no \($0.number))" } ?? "UNAVAILABLE"
        }
        return Wire.json(
            Answer(status: up ? "UP" : "DOWN", checks: checks), status: up ? .ok : .serviceUnavailable,
            contentType: Wire.jsonContentType)
    }

    private struct HealthTimeout: Error {}
}
