import FIDOServer
import Foundation
import NIOCore
import NIOPosix

/// Process-wide settings made once, before `mauth server` or `mauth load` runs, for a program that serves (or
/// generates) thousands of requests a second on a few cores; the other commands keep the defaults. Each was measured with `mauth load` (the FIDOServer documentation, "Scaling out" and "Load and fault testing").
enum ProcessTuning {
    /// Throws when `MAUTH_EVENT_LOOPS` is not a usable count (``EventLoopSetting``); then nothing is set.
    static func apply() throws {
        // The loops' count, before anything creates them: NIO fixes it when its event-loop group is first used.
        if let count = try EventLoopSetting.count(ProcessInfo.processInfo.environment[EventLoopSetting.variable]) {
            NIOSingletons.groupLoopCountSuggestion = count
        }
        // Swift concurrency's global executor becomes NIO's event loops. The server and `mauth load` are NIO
        // programs; with the default executor every request went from its connection's event loop to a thread of a
        // second pool and back, two thread wake-ups per request. Measured +18 to 25 % authentication flows/s. NIO's
        // conditions: called once, on the main thread, before any task is enqueued; and nothing may then block a
        // thread waiting for a future, which nothing here does.
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
