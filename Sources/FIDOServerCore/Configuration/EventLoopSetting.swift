import Foundation

/// `MAUTH_EVENT_LOOPS`: how many event loops (threads) `mauth server` and `mauth load` serve on. Unset, one per core.
///
/// Why a setting: the default suits one process per machine. Several instances on one machine each start one loop
/// per core, so more threads compete for the same cores than there are cores, and an instance waiting on PostgreSQL
/// puts a loop to sleep and wakes it again for every statement. Two instances on one PostgreSQL on a 2-core machine,
/// alternated in three pairs: with one loop each, 2,079 to 2,156 logins/s and 0.45 to 0.47 ms of server CPU per login,
/// against 1,776 to 2,024 and 0.53 to 0.56 ms with two each (the FIDOServer documentation, "Scaling out" and "Load and fault testing"). Give each instance about its
/// share of the cores.
///
/// Why an environment variable and not a configuration key: the loops are Swift concurrency's executor too, which
/// is installed before the command line is read; the count must be known then.
public enum EventLoopSetting {
    /// The environment variable.
    public static let variable = "MAUTH_EVENT_LOOPS"
    /// More loops than this is a typo, not a machine.
    public static let maximum = 1024

    /// The count `text` asks for: nil when unset; a whole number from 1 to ``maximum``, else an error that says why.
    public static func count(_ text: String?) throws -> Int? {
        guard let text else { return nil }
        guard let count = Int(text.trimmingCharacters(in: .whitespaces)), (1...maximum).contains(count) else {
            throw ServerConfiguration.ConfigurationError.invalid(
                "\(variable) must be a whole number of event loops from 1 to \(maximum), not \"\(text)\"")
        }
        return count
    }
}
