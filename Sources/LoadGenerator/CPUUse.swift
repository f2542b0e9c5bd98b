import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The CPU a measured phase cost: per flow for the load generator and each watched server (`--server-pid`), and for
/// the whole machine. Flows/s depends on the machine and on what else runs on it (here the generator shares the
/// cores); CPU per flow is what a flow costs wherever it runs, so it is the figure to size a deployment by: at
/// 0.5 ms of server CPU per flow, each core of server CPU serves about 2,000 flows/s.
public struct CPUUse: Codable, Sendable, Equatable {
    public struct Process: Codable, Sendable, Equatable {
        public var pid: Int32
        /// `load generator`, `load generator and embedded servers`, or `server`.
        public var role: String
        /// User plus system CPU time over the phase.
        public var cpuSeconds: Double
        public var millisecondsPerFlow: Double
        /// Average cores kept busy over the phase.
        public var cores: Double
    }

    /// The CPU of every process with one name (`--database-process`): a database on this machine, such as
    /// PostgreSQL's sessions and background workers.
    public struct Database: Codable, Sendable, Equatable {
        /// The process name (`comm`, as `pgrep -x` matches it).
        public var name: String
        /// How many such processes ran over the phase.
        public var processes: Int
        public var cpuSeconds: Double
        public var millisecondsPerFlow: Double
        public var cores: Double
    }

    public var processes: [Process]
    /// nil unless asked for (`--database-process`).
    public var database: Database?
    /// Cores the machine figures cover: the per-core lines of `/proc/stat`, else the cores this process may use.
    public var machineCores: Int
    /// Average cores busy over the phase, whatever ran on them; nil without `/proc/stat` (not Linux).
    public var machineCoresBusy: Double?
    public var machineMillisecondsPerFlow: Double?

    /// Server CPU per flow, all watched servers together; nil when none is watched.
    public var serverMillisecondsPerFlow: Double? {
        let servers = processes.filter { $0.role == Self.serverRole }
        return servers.isEmpty ? nil : servers.reduce(0) { $0 + $1.millisecondsPerFlow }
    }

    static let serverRole = "server"

    /// Why the processes named `name` cannot be watched (`--database-process`), or nil when at least one runs. A
    /// name that matches nothing would report a database that costs nothing, so it is refused before the run: the
    /// empty name, one longer than the 15 bytes Linux keeps of a command name, and one no running process has.
    public static func problem(watchingProcessesNamed name: String) -> String? {
        if name.isEmpty { return "the process name is empty" }
        if name.utf8.count > 15 { return "'\(name)' is longer than the 15 bytes Linux keeps of a process name (as pgrep -x matches it)" }
        if ProcFS.processes(named: name).isEmpty { return "no process named '\(name)' runs on this machine (as pgrep -x matches it)" }
        return nil
    }
}

/// Reads CPU counters at the start and the end of a phase.
struct CPUWatch: Sendable {
    /// The servers to watch (`--server-pid`).
    var serverPIDs: [Int32]
    /// The generator's own process also runs the servers (embedded, no `--url`).
    var embeddedServers: Bool
    /// The name of a database's processes to watch (`--database-process`), if any.
    var databaseProcess: String? = nil

    struct Reading: Sendable {
        var own: Double
        var servers: [Int32: Double]
        var machine: (busy: UInt64, total: UInt64, cores: Int)?
        /// CPU seconds so far of each process named `databaseProcess`.
        var database: [Int32: Double] = [:]
    }

    func read() -> Reading {
        var servers: [Int32: Double] = [:]
        for pid in serverPIDs {
            if let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let ticks = ProcFS.processTicks(text) {
                servers[pid] = Double(ticks) / ProcFS.ticksPerSecond
            }
        }
        let machine = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)).flatMap(ProcFS.machineTicks)
        let database = databaseProcess.map { ProcFS.processes(named: $0).mapValues { Double($0) / ProcFS.ticksPerSecond } } ?? [:]
        return Reading(own: Self.ownCPUSeconds(), servers: servers, machine: machine, database: database)
    }

    /// What the phase between `start` and `end` cost per flow. A server that ended (or was never there) is left out.
    func use(from start: Reading, to end: Reading, flows: Int, seconds: Double) -> CPUUse {
        let perFlow = { (cpu: Double) in flows > 0 ? cpu * 1000 / Double(flows) : 0 }
        let cores = { (cpu: Double) in seconds > 0 ? cpu / seconds : 0 }
        let own = max(0, end.own - start.own)
        var processes = [
            CPUUse.Process(
                pid: ProcessInfo.processInfo.processIdentifier,
                role: embeddedServers ? "load generator and embedded servers" : "load generator",
                cpuSeconds: own, millisecondsPerFlow: perFlow(own), cores: cores(own))
        ]
        for pid in serverPIDs {
            guard let before = start.servers[pid], let after = end.servers[pid] else { continue }
            let cpu = max(0, after - before)
            processes.append(.init(pid: pid, role: CPUUse.serverRole, cpuSeconds: cpu, millisecondsPerFlow: perFlow(cpu), cores: cores(cpu)))
        }
        var use = CPUUse(processes: processes, machineCores: end.machine?.cores ?? ProcessInfo.processInfo.activeProcessorCount)
        if let name = databaseProcess {
            // A process that started during the phase counts whole; one that ended during it is not seen at the end,
            // so its share is missing (PostgreSQL's sessions live as long as the servers' connections).
            let cpu = end.database.reduce(0.0) { sum, process in sum + max(0, process.value - (start.database[process.key] ?? 0)) }
            use.database = .init(
                name: name, processes: Set(start.database.keys).union(end.database.keys).count, cpuSeconds: cpu,
                millisecondsPerFlow: perFlow(cpu), cores: cores(cpu))
        }
        if let before = start.machine, let after = end.machine, after.total > before.total {
            let busy = Double(after.busy - before.busy)
            let total = Double(after.total - before.total)
            // /proc/stat counts every core's ticks: busy/total is the busy share of all cores.
            use.machineCoresBusy = busy / total * Double(use.machineCores)
            use.machineMillisecondsPerFlow = perFlow(busy / ProcFS.ticksPerSecond)
        }
        return use
    }

    /// This process's user plus system CPU time (getrusage: microsecond resolution, also on Apple platforms).
    static func ownCPUSeconds() -> Double {
        var usage = rusage()
        #if canImport(Glibc)
        let who = __rusage_who_t(RUSAGE_SELF.rawValue)
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// What `mauth load` reads from Linux's procfs (proc(5)): `/proc/PID/stat`, `/proc/stat` and `/proc/PID/status`.
enum ProcFS {
    static let ticksPerSecond = Double(max(1, sysconf(Int32(_SC_CLK_TCK))))

    /// utime + stime (fields 14 and 15) of a `/proc/PID/stat` line, in clock ticks. Field 2, the command name in
    /// parentheses, may itself hold spaces and parentheses, so fields are counted after its last `)`.
    static func processTicks(_ text: String) -> UInt64? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        // After ")": field 3 (state) is the first, so utime (14) and stime (15) are the 12th and 13th.
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 13, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        return user + system
    }

    /// The command name of a `/proc/PID/stat` line: field 2, between the first `(` and the last `)`.
    static func commandName(_ text: String) -> Substring? {
        guard let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")"), open < close else { return nil }
        return text[text.index(after: open)..<close]
    }

    /// The CPU ticks so far (``processTicks(_:)``) of every process whose command name is `name`, by pid; empty where
    /// there is no procfs. A process that ends while it is read is left out.
    static func processes(named name: String) -> [Int32: UInt64] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [:] }
        var found: [Int32: UInt64] = [:]
        for entry in entries {
            guard let pid = Int32(entry), let text = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                commandName(text) == Substring(name), let ticks = processTicks(text)
            else { continue }
            found[pid] = ticks
        }
        return found
    }

    /// Busy and total ticks of all cores, from the `cpu ` line of `/proc/stat` (user nice system idle iowait irq
    /// softirq steal …), and how many cores that line covers (its `cpuN` lines; a container may be allowed fewer
    /// than the machine has). Idle and iowait are the not-busy ones; guest time is already inside user and nice.
    static func machineTicks(_ text: String) -> (busy: UInt64, total: UInt64, cores: Int)? {
        let lines = text.split(separator: "\n")
        guard let line = lines.first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        let cores = lines.filter { $0.hasPrefix("cpu") && $0.dropFirst(3).first?.isNumber == true }.count
        let fields = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().prefix(8)
        let values = fields.compactMap { UInt64($0) }
        guard values.count >= 5, values.count == fields.count else { return nil }
        let idle = values[3] + values[4]
        let total = values.reduce(0, +)
        return (total - idle, total, max(1, cores))
    }

    /// The peak resident memory of a process (VmHWM in `/proc/PID/status`), in MiB; nil where there is no procfs.
    static func peakResidentMiB(pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 2, let kib = Double(fields[1]) { return kib / 1024 }
        }
        return nil
    }
}
