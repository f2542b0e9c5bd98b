import ArgumentParser
import Foundation
import NIOCore
import NIOPosix

@main
struct Mauth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mauth",
        abstract: "FIDO UAF mobile authentication: server, virtual device and end-to-end demo.",
        subcommands: [ServerCommand.self, DemoCommand.self, LoadCommand.self, AdminCommand.self, DeviceCommand.self])

    /// ArgumentParser's own `main`, after one step: Swift concurrency's global executor becomes NIO's event loops.
    /// The server and `mauth load` are NIO programs; with the default executor, every request went from its
    /// connection's event loop to a concurrency thread and back, two thread switches (futex wake-ups) per request.
    /// With the event loops as the only threads, a handler no longer waits for a thread of a second pool to wake
    /// up; measured +18 to 25 % authentication flows/s. It must happen first, on the main thread, before any task is enqueued (NIO's condition for it).
    /// Nothing here blocks a thread waiting for a future, which an event loop must never do.
    static func main() async {
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }
}

/// Writes a line to standard output at once (unbuffered), so an operator or a log collector reading a pipe sees
/// each line when it happens, not when the process exits.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
