import Foundation
import Histogram

/// What one connection's loop measured in one phase; merged across connections at the end (no shared state while
/// measuring, so recording costs no lock).
struct PhaseRecorder: Sendable {
    /// Latencies in microseconds, per endpoint and for the whole flow.
    var endpoints: [String: Histogram<UInt64>] = [:]
    var flowLatency = PhaseRecorder.histogram()
    var flows = 0
    var failedFlows = 0
    var errors: [String: Int] = [:]
    /// Outcomes per whole second since the phase started (when they happened matters in a fault test).
    var timeline: [LoadReport.Second] = []
    let start: ContinuousClock.Instant

    init(start: ContinuousClock.Instant = .now) { self.start = start }

    private mutating func second(_ body: (inout LoadReport.Second) -> Void) {
        let index = max(0, Int((ContinuousClock.now - start).components.seconds))
        while timeline.count <= index { timeline.append(LoadReport.Second(second: timeline.count)) }
        body(&timeline[index])
    }

    /// 1 µs to 10 min at 3 significant digits.
    static func histogram() -> Histogram<UInt64> {
        Histogram<UInt64>(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }

    mutating func record(endpoint: String, microseconds: UInt64) {
        _ = endpoints[endpoint, default: Self.histogram()].record(min(microseconds, 600_000_000))
    }

    mutating func completed(flowMicroseconds: UInt64) {
        flows += 1
        _ = flowLatency.record(min(flowMicroseconds, 600_000_000))
        second { $0.flows += 1 }
    }

    mutating func failed(_ error: LoadFailure) {
        failedFlows += 1
        errors[error.key, default: 0] += 1
        second { second in
            second.failed += 1
            switch error {
            case .http(_, let status, _) where status >= 500: second.serverErrors += 1
            case .transport: second.connectionErrors += 1
            case .replayAccepted: second.replaysAccepted += 1
            default: break
            }
        }
    }

    mutating func merge(_ other: PhaseRecorder) {
        for (name, histogram) in other.endpoints { endpoints[name, default: Self.histogram()].add(histogram) }
        flowLatency.add(other.flowLatency)
        flows += other.flows
        failedFlows += other.failedFlows
        for (key, count) in other.errors { errors[key, default: 0] += count }
        while timeline.count < other.timeline.count { timeline.append(LoadReport.Second(second: timeline.count)) }
        for (index, second) in other.timeline.enumerated() { timeline[index].add(second) }
    }

    func report(name: String, seconds: Double, startedAt: Date) -> LoadReport.Phase {
        LoadReport.Phase(
            name: name, startedAtEpochSeconds: startedAt.timeIntervalSince1970, seconds: seconds, flows: flows, failedFlows: failedFlows,
            flowsPerSecond: seconds > 0 ? Double(flows) / seconds : 0,
            flowLatency: .init(flowLatency),
            endpoints: endpoints.keys.sorted().map { LoadReport.Endpoint(name: $0, latency: .init(endpoints[$0]!)) },
            errors: errors.keys.sorted().map { LoadReport.ErrorCount(kind: $0, count: errors[$0]!) }, timeline: timeline)
    }
}

/// Why a flow failed, grouped so the report can count them: by HTTP status, by UAF status code, or by what went
/// wrong before an answer arrived.
enum LoadFailure: Error, Sendable {
    /// `detail`: the server's own reason where the API gives one (the FIDO2 API's `errorMessage`), at most 160 bytes.
    case http(endpoint: String, status: Int, detail: String? = nil)
    case uaf(endpoint: String, statusCode: Int)
    case transport(endpoint: String, detail: String)
    case malformed(endpoint: String, detail: String)
    /// `--replay-check`: a second instance (or the same one) accepted a response that was already accepted once.
    case replayAccepted(endpoint: String)

    var key: String {
        switch self {
        case .http(let endpoint, let status, let detail): "HTTP \(status) on \(endpoint)" + (detail.map { ": \($0)" } ?? "")
        case .uaf(let endpoint, let code): "UAF \(code) on \(endpoint)"
        case .transport(let endpoint, let detail): "connection error on \(endpoint): \(detail)"
        case .malformed(let endpoint, let detail): "unreadable answer on \(endpoint): \(detail)"
        case .replayAccepted(let endpoint): "REPLAY ACCEPTED on \(endpoint): a response was accepted twice"
        }
    }
}

/// The result of a run, for people (``text``) and machines (Codable, `--json`).
public struct LoadReport: Codable, Sendable {
    public struct Latency: Codable, Sendable, Equatable {
        public var count: UInt64
        public var p50Milliseconds: Double
        public var p95Milliseconds: Double
        public var p99Milliseconds: Double
        public var maxMilliseconds: Double
        public var meanMilliseconds: Double

        init(_ histogram: Histogram<UInt64>) {
            func ms(_ microseconds: UInt64) -> Double { Double(microseconds) / 1000 }
            count = histogram.totalCount
            if count == 0 {
                p50Milliseconds = 0
                p95Milliseconds = 0
                p99Milliseconds = 0
                maxMilliseconds = 0
                meanMilliseconds = 0
            } else {
                p50Milliseconds = ms(histogram.valueAtPercentile(50))
                p95Milliseconds = ms(histogram.valueAtPercentile(95))
                p99Milliseconds = ms(histogram.valueAtPercentile(99))
                maxMilliseconds = ms(histogram.max)
                meanMilliseconds = histogram.mean / 1000
            }
        }
    }

    public struct Endpoint: Codable, Sendable {
        public var name: String
        public var latency: Latency
    }

    public struct ErrorCount: Codable, Sendable, Equatable {
        public var kind: String
        public var count: Int
        public init(kind: String, count: Int) {
            self.kind = kind
            self.count = count
        }
    }

    /// What happened in one second of a phase.
    public struct Second: Codable, Sendable, Equatable {
        public var second: Int
        public var flows = 0
        public var failed = 0
        /// HTTP 5xx answers.
        public var serverErrors = 0
        /// No answer at all (refused, reset, timed out).
        public var connectionErrors = 0
        public var replaysAccepted = 0

        init(second: Int) { self.second = second }

        mutating func add(_ other: Second) {
            flows += other.flows
            failed += other.failed
            serverErrors += other.serverErrors
            connectionErrors += other.connectionErrors
            replaysAccepted += other.replaysAccepted
        }
    }

    public struct Phase: Codable, Sendable {
        public var name: String
        /// Wall-clock start, to line the timeline up with events outside (a server killed, a database restarted).
        public var startedAtEpochSeconds: Double
        public var seconds: Double
        public var flows: Int
        public var failedFlows: Int
        public var flowsPerSecond: Double
        public var flowLatency: Latency
        public var endpoints: [Endpoint]
        public var errors: [ErrorCount]
        public var timeline: [Second]
        /// What the phase cost in CPU (the measured phase only).
        public var cpu: CPUUse?
    }

    /// Peak resident memory of a watched server process (`--server-pid`, ``LoadPlan/serverPIDs``), from `/proc/PID/status`.
    public struct ProcessMemory: Codable, Sendable {
        public var pid: Int32
        public var peakResidentMiB: Double
        public init(pid: Int32, peakResidentMiB: Double) {
            self.pid = pid
            self.peakResidentMiB = peakResidentMiB
        }
    }

    public var targets: [String]
    public var connections: Int
    public var flow: LoadPlan.Flow
    public var transactions: Bool
    /// What the virtual devices attested the app with (`App Attest`); nil: nothing.
    public var appAttestation: String?
    public var population: Int
    /// Registration of the population (authentication and passkey runs only).
    public var setup: Phase?
    public var measured: Phase
    /// `--verify`: every user the measured phase registered (answered 1200) authenticates once more afterwards.
    public var verification: Phase?
    /// `--replay-check` was on: each accepted response was sent again and had to be refused.
    public var replayChecked: Bool
    public var serverMemory: [ProcessMemory]
    /// How the generator's threads were scheduled (``LoadPlan/generatorScheduling``); nil: not stated.
    public var generatorScheduling: String?

    /// The human-readable report.
    public var text: String {
        var lines: [String] = []
        lines.append("targets     \(targets.joined(separator: ", "))")
        lines.append(
            "flow        \(flow.rawValue)\(transactions ? " with a transaction text" : "")"
                + (appAttestation.map { ", the app attested with \($0)" } ?? "") + ", \(connections) connections"
                + (flow == .authentication || flow == .passkey ? ", \(population) users" : ""))
        if let generatorScheduling { lines.append("generator   \(generatorScheduling)") }
        for phase in [setup, measured, verification].compactMap({ $0 }) {
            lines.append("")
            lines.append(
                "\(phase.name): \(phase.flows) flows completed in \(String(format: "%.2f", phase.seconds)) s = \(String(format: "%.0f", phase.flowsPerSecond)) completed/s; \(phase.failedFlows) failed (not in the rate)"
            )
            let width = max(24, phase.endpoints.map(\.name.count).max() ?? 0)
            lines.append(
                "  " + "latency (ms)".padding(toLength: width, withPad: " ", startingAt: 0) + "    count      p50      p95      p99      max")
            func row(_ name: String, _ latency: Latency) -> String {
                "  " + name.padding(toLength: width, withPad: " ", startingAt: 0)
                    + String(
                        format: " %8llu %8.2f %8.2f %8.2f %8.2f", latency.count, latency.p50Milliseconds, latency.p95Milliseconds,
                        latency.p99Milliseconds, latency.maxMilliseconds)
            }
            lines.append(row("whole flow", phase.flowLatency))
            for endpoint in phase.endpoints { lines.append(row(endpoint.name, endpoint.latency)) }
            if let cpu = phase.cpu { lines.append(contentsOf: Self.lines(cpu)) }
            if phase.errors.isEmpty {
                lines.append("  errors: none")
            } else {
                lines.append("  errors:")
                for error in phase.errors { lines.append("    \(error.count) × \(error.kind)") }
            }
        }
        if replayChecked {
            let accepted = [measured, verification].compactMap { $0 }.flatMap(\.timeline).reduce(0) { $0 + $1.replaysAccepted }
            lines.append("")
            lines.append("replay check: every accepted response was sent again to the next server; accepted twice: \(accepted)")
        }
        for memory in serverMemory {
            lines.append("")
            lines.append("server pid \(memory.pid): peak RSS \(String(format: "%.1f", memory.peakResidentMiB)) MiB")
        }
        return lines.joined(separator: "\n")
    }

    /// `CPU per flow (ms): …` and, with watched servers, what one core of server CPU serves at that cost.
    static func lines(_ cpu: CPUUse) -> [String] {
        func ms(_ value: Double) -> String { String(format: "%.3f", value) }
        var parts = cpu.processes.map { process in
            (process.role == CPUUse.serverRole ? "server pid \(process.pid)" : process.role)
                + " \(ms(process.millisecondsPerFlow)) (\(String(format: "%.2f", process.cores)) cores)"
        }
        if let database = cpu.database {
            parts.append(
                "database (\(database.name), \(database.processes) process\(database.processes == 1 ? "" : "es")) \(ms(database.millisecondsPerFlow)) "
                    + "(\(String(format: "%.2f", database.cores)) cores)")
        }
        if let machine = cpu.machineMillisecondsPerFlow, let busy = cpu.machineCoresBusy {
            parts.append("machine \(ms(machine)) (\(String(format: "%.2f", busy)) of \(cpu.machineCores) cores busy)")
        }
        var lines = ["  CPU per flow (ms): " + parts.joined(separator: ", ")]
        if let server = cpu.serverMillisecondsPerFlow, server > 0 {
            lines.append(
                "  at \(ms(server)) ms of server CPU per flow, one core of server CPU serves about "
                    + "\(String(format: "%.0f", 1000 / server)) flows/s")
        }
        return lines
    }
}
