import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How the load generator's threads are scheduled when it shares the cores with the servers it measures.
///
/// Why: on Linux a thread woken by an answer preempts the thread running on its core when it has waited longer
/// (the fair scheduler's wake-up preemption). On a machine where `mauth load` and the servers share the cores, that is
/// the generator taking the core from a server event loop in the middle of a batch of requests, many times a
/// second. Under `SCHED_BATCH` a thread keeps its fair share of the CPU but never preempts on wake-up: it runs when
/// the running thread's slice ends or it blocks. Measured on the 2-core machine (authentication on SQLite, 32
/// connections, 16 alternated pairs): +3 to +13 % flows/s in 14 pairs and a whole-flow p99 0.6 to 2.1 ms lower in 15,
/// with the server's CPU per flow unchanged. Only the generator's process changes: the servers keep their own
/// scheduling.
public enum GeneratorScheduling {
    /// Linux's `SCHED_BATCH` (`<linux/sched.h>`). glibc declares it only under `_GNU_SOURCE`, which the Glibc
    /// module does not import.
    static let batchPolicy: Int32 = 3

    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// Not Linux: there is no `SCHED_BATCH`.
        case unavailable
        /// The kernel refused to change thread `thread` (`errno`).
        case refused(thread: Int32, errno: Int32)
        /// `/proc/self/task` could not be listed.
        case noThreadList(String)

        public var description: String {
            switch self {
            case .unavailable: return "SCHED_BATCH exists only on Linux"
            case .refused(let thread, let code): return "the kernel refused SCHED_BATCH for thread \(thread): \(String(cString: strerror(code)))"
            case .noThreadList(let reason): return "cannot list this process's threads (/proc/self/task): \(reason)"
            }
        }
    }

    /// Moves every thread of this process to `SCHED_BATCH`. Threads created later inherit the policy from the thread
    /// that creates them (glibc's default), so the whole generator runs under it. The list is read again until it
    /// holds no thread not yet moved: one started meanwhile by a thread that had not been moved yet would otherwise
    /// keep normal scheduling.
    public static func batchEveryThread() throws {
        var moved = Set<Int32>()
        for _ in 0..<8 {
            let fresh = try threadsOfThisProcess().filter { !moved.contains($0) }
            if fresh.isEmpty { break }
            _ = try moveToBatch(fresh)
            moved.formUnion(fresh)
        }
    }

    /// The ids of this process's threads (`/proc/self/task`).
    public static func threadsOfThisProcess() throws -> [Int32] {
        #if os(Linux)
        do {
            return try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap { Int32($0) }
        } catch {
            throw Failure.noThreadList("\(error)")
        }
        #else
        throw Failure.unavailable
        #endif
    }

    /// Moves each of `threads` to `SCHED_BATCH` (static priority 0, which needs no privilege) and returns how many it
    /// moved. A thread that ended since it was listed is skipped; any other refusal throws, so that a run never
    /// reports a scheduling it did not get.
    public static func moveToBatch(_ threads: [Int32]) throws -> Int {
        #if os(Linux)
        var moved = 0
        for thread in threads {
            var parameters = sched_param()
            parameters.sched_priority = 0
            if sched_setscheduler(thread, batchPolicy, &parameters) == 0 {
                moved += 1
            } else if errno != ESRCH {
                throw Failure.refused(thread: thread, errno: errno)
            }
        }
        return moved
        #else
        throw Failure.unavailable
        #endif
    }

    /// Whether `thread` (of any process) runs under `SCHED_BATCH`; nil when there is no such thread.
    public static func isBatch(_ thread: Int32) -> Bool? {
        #if os(Linux)
        let policy = sched_getscheduler(thread)
        return policy < 0 ? nil : policy == batchPolicy
        #else
        return nil
        #endif
    }

    /// The id of the calling thread (`/proc/thread-self` names `PID/task/TID`); nil where there is no such link.
    public static func currentThread() -> Int32? {
        guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") else { return nil }
        return link.split(separator: "/").last.flatMap { Int32($0) }
    }
}
