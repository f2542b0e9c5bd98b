import FIDOServerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How many connections the server holds open at once, and the descriptor limit that bound comes from.
///
/// Why: every connection is a descriptor, and when the process runs out of descriptors it does not merely refuse
/// connections: libdispatch aborts the process when it cannot get one. So the server raises its soft descriptor limit
/// to the hard limit at start-up, keeps ``reserve`` descriptors for everything that is not a client connection
/// (database files and connections, the TLS material, the log, outgoing push connections), and holds at most the rest
/// as connections. At the cap, ``ConnectionCap`` closes a new connection on arrival while the server keeps serving
/// the connections it has; each of those is bounded in time by the request deadline and the idle timeout, so a place
/// comes free within seconds.
struct ConnectionBudget: Sendable, Equatable {
    /// Descriptors kept for what is not a client connection.
    static let reserve = 256

    /// The soft and hard descriptor limits after raising.
    var softLimit: UInt64
    var hardLimit: UInt64
    /// The configured cap.
    var configured: Int
    /// The cap in force: the configured one, lowered to the soft limit less ``reserve``.
    var maximumConnections: Int
    var wasLowered: Bool { maximumConnections < configured }

    /// Raises this process's soft descriptor limit to its hard limit (a process-wide change; it never lowers it) and
    /// computes the cap. Nil where the limit cannot be read.
    static func establish(configured: Int) -> ConnectionBudget? {
        guard var limit = descriptorLimit() else { return nil }
        if limit.soft < limit.hard {
            var raised = rlimit(rlim_cur: rlim_t(limit.hard), rlim_max: rlim_t(limit.hard))
            if setDescriptorLimit(&raised), let after = descriptorLimit() { limit = after }
        }
        return ConnectionBudget(soft: limit.soft, hard: limit.hard, configured: configured)
    }

    init(soft: UInt64, hard: UInt64, configured: Int) {
        softLimit = soft
        hardLimit = hard
        self.configured = configured
        let available = soft > UInt64(Self.reserve + 1) ? Int(clamping: soft) - Self.reserve : 1
        maximumConnections = max(1, min(configured, available))
    }

    static func descriptorLimit() -> (soft: UInt64, hard: UInt64)? {
        var limit = rlimit()
        #if canImport(Glibc)
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        #else
        guard getrlimit(RLIMIT_NOFILE, &limit) == 0 else { return nil }
        #endif
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    private static func setDescriptorLimit(_ limit: inout rlimit) -> Bool {
        #if canImport(Glibc)
        return setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0
        #else
        return setrlimit(RLIMIT_NOFILE, &limit) == 0
        #endif
    }
}
