import Foundation
import Metrics
import Prometheus

/// The server's metrics (swift-metrics, exported by swift-prometheus at `GET /metrics`). Each server instance has
/// its own registry rather than the process-wide `MetricsSystem`, so several instances in one process (tests, the
/// load tool) each count only their own requests.
///
/// Series (all prefixed `mauth_`):
/// - `http_requests_total{method, route, status}` and `http_request_duration_seconds{method, route}`: `route` is
///   the matched route template (`/nevisfido/devices/credentials/{deviceId}`), or `NotFound`, so a caller cannot
///   create series by inventing paths;
/// - `http_requests_in_flight`;
/// - `decisions_total{operation, status_code}`: every decision a service takes, a UAF operation's by its UAF
///   status code (1200 accepted, 1498 bad signature, ...), a passkey ceremony's or another step's by its HTTP status;
/// - `database_operations_in_flight`, `database_pool_size`, `database_operation_duration_seconds` (which includes
///   the wait for a pooled connection, so a saturated pool shows as latency here first);
/// - `process_resident_memory_bytes`, read at each scrape;
/// - `connections_open`: connections held now, against the cap (`limits.maximumConnections`);
/// - `connections_refused_total`: connections closed on arrival at the connection cap;
/// - `connections_evicted_total`: idle connections closed to make room for a newcomer at a cap;
/// - with a Metadata Service: `metadata_blob_number` and `metadata_blob_next_update_timestamp_seconds` (the BLOB in
///   force; alert when the time passes the second by a day), and `metadata_reloads_total{outcome}` (`installed`,
///   `not_newer`, `refused`).
/// - `tls_certificate_not_after_timestamp_seconds` (the certificate in force ends then: alert weeks before) and,
///   with certificate files, `tls_reloads_total{outcome}` (`installed`, `refused`).
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let requestsInFlight: Metrics.Meter
    private let databaseInFlight: Metrics.Meter
    private let databaseDuration: Metrics.Timer
    private let databasePoolSize: Metrics.Gauge
    private let residentMemory: Metrics.Gauge
    private let connectionsOpen: Metrics.Gauge
    private let connectionsRefused: Metrics.Counter
    private let connectionsEvicted: Metrics.Counter
    private let metadataBLOBNumber: Metrics.Gauge
    private let metadataNextUpdate: Metrics.Gauge
    private let tlsNotAfter: Metrics.Gauge

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // UAF requests take about a millisecond on loopback; the buckets resolve that and a slow database alike.
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5),
        ]
        self.registry = registry
        self.factory = factory
        requestsInFlight = Metrics.Meter(label: "mauth_http_requests_in_flight", factory: factory)
        databaseInFlight = Metrics.Meter(label: "mauth_database_operations_in_flight", factory: factory)
        databaseDuration = Metrics.Timer(label: "mauth_database_operation_duration_seconds", factory: factory)
        databasePoolSize = Metrics.Gauge(label: "mauth_database_pool_size", factory: factory)
        residentMemory = Metrics.Gauge(label: "mauth_process_resident_memory_bytes", factory: factory)
        connectionsOpen = Metrics.Gauge(label: "mauth_connections_open", factory: factory)
        connectionsRefused = Metrics.Counter(label: "mauth_connections_refused_total", factory: factory)
        connectionsEvicted = Metrics.Counter(label: "mauth_connections_evicted_total", factory: factory)
        metadataBLOBNumber = Metrics.Gauge(label: "mauth_metadata_blob_number", factory: factory)
        metadataNextUpdate = Metrics.Gauge(label: "mauth_metadata_blob_next_update_timestamp_seconds", factory: factory)
        tlsNotAfter = Metrics.Gauge(label: "mauth_tls_certificate_not_after_timestamp_seconds", factory: factory)
    }

    /// A Metadata Service reload: its outcome, and the BLOB in force after it.
    package func metadataReloaded(outcome: String, number: Int?, nextUpdate: Date?) {
        Metrics.Counter(label: "mauth_metadata_reloads_total", dimensions: [("outcome", outcome)], factory: factory).increment()
        if let number { metadataBLOBNumber.record(number) }
        if let nextUpdate { metadataNextUpdate.record(nextUpdate.timeIntervalSince1970) }
    }

    /// The end of the TLS certificate in force (at start and after each reload).
    package func tlsCertificateInForce(notAfter: Date) { tlsNotAfter.record(notAfter.timeIntervalSince1970) }

    /// A TLS certificate reload that found changed files: `installed` or `refused`.
    package func tlsReloaded(outcome: String) {
        Metrics.Counter(label: "mauth_tls_reloads_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// Audit events not written to the database: `over_budget` (a caller without credentials past its per-minute
    /// budget; one summary row stands for them) or `queue_full` (the database fell behind).
    package func auditNotStored(reason: String, count: Int) {
        Metrics.Counter(label: "mauth_audit_events_not_stored_total", dimensions: [("reason", reason)], factory: factory).increment(by: Int64(count))
    }

    package func requestStarted() { requestsInFlight.increment() }

    /// The number of connections held, after one was admitted or left.
    package func connectionsHeld(_ count: Int) { connectionsOpen.record(count) }
    /// A connection closed on arrival because the connection cap was reached.
    package func connectionRefused() { connectionsRefused.increment() }
    /// An idle connection closed to make room for a newcomer at a connection cap.
    package func connectionEvicted() { connectionsEvicted.increment() }

    package func requestFinished(method: String, route: String, status: Int, duration: Duration) {
        requestsInFlight.decrement()
        let series = requestSeries.value(for: RequestKey(method: method, route: route, status: status)) {
            (
                Metrics.Counter(
                    label: "mauth_http_requests_total", dimensions: [("method", method), ("route", route), ("status", String(status))],
                    factory: factory),
                Metrics.Timer(label: "mauth_http_request_duration_seconds", dimensions: [("method", method), ("route", route)], factory: factory)
            )
        }
        series.requests.increment()
        series.duration.recordNanoseconds(duration.nanoseconds)
    }

    package func decided(_ decision: ServerDecision) {
        decisionSeries.value(for: DecisionKey(operation: decision.operation, statusCode: decision.statusCode)) {
            Metrics.Counter(
                label: "mauth_decisions_total",
                dimensions: [("operation", decision.operation.rawValue), ("status_code", String(decision.statusCode))],
                factory: factory)
        }.increment()
    }

    // The handles of labelled series, made once per label set: making one asks the registry under its lock and builds
    // the label key each time, which cost more than the count itself on every request. The label sets are bounded
    // (route templates, the HTTP methods the parser knows, status codes, decision names); the memory is bounded anyway,
    // and a handle made again after it starts over counts in the same series (the registry keys series by label set).
    private struct RequestKey: Hashable {
        var method: String
        var route: String
        var status: Int
    }
    private struct DecisionKey: Hashable {
        var operation: OperationName
        var statusCode: Int
    }
    private let requestSeries = BoundedMemory<RequestKey, (requests: Metrics.Counter, duration: Metrics.Timer)>(limit: 4096)
    private let decisionSeries = BoundedMemory<DecisionKey, Metrics.Counter>(limit: 4096)

    func databasePool(size: Int) { databasePoolSize.record(size) }

    /// Wraps one database operation (waiting for a connection included).
    func databaseOperation<T>(_ body: () async throws -> T) async throws -> T {
        databaseInFlight.increment()
        let start = ContinuousClock.now
        defer {
            databaseInFlight.decrement()
            databaseDuration.recordNanoseconds((ContinuousClock.now - start).nanoseconds)
        }
        return try await body()
    }

    /// The Prometheus text exposition (format 0.0.4) of every series.
    public func exposition() -> [UInt8] {
        if let bytes = Self.residentMemoryBytes() { residentMemory.record(bytes) }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }

    /// Resident set size from `/proc/self/statm` (pages × page size); nil where there is no procfs.
    static func residentMemoryBytes() -> Int64? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count >= 2, let pages = Int64(fields[1]) else { return nil }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }
}

extension Duration {
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
