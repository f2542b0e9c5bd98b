import ArgumentParser
import Foundation
import Primitives

@main
struct Mauth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mauth",
        abstract: "FIDO UAF mobile authentication: server, virtual device and end-to-end demo.",
        version: BuildDescription.text,
        subcommands: [ServerCommand.self, DemoCommand.self, LoadCommand.self, AdminCommand.self, DeviceCommand.self])

    /// ArgumentParser's own `main`. The process-wide settings (``ProcessTuning``) come before any task of the command
    /// runs, and only for the commands that serve or generate thousands of requests a second.
    static func main() async {
        // A reader that goes away (`mauth demo | head -1`) makes a write fail with EPIPE, which ``OutputLine`` answers by
        // ending quietly, instead of a signal at whichever write comes first.
        signal(SIGPIPE, SIG_IGN)
        var command: any ParsableCommand
        do { command = try parseAsRoot() } catch { exit(withError: error) }
        do {
            // NIO's event loops as the global executor suit a NIO program that never blocks; the other commands
            // (demo, device, admin) wait on files, SQLite and prompts, which must not hold an event loop.
            if command is ServerCommand || command is LoadCommand { try ProcessTuning.apply() }
            if var asyncCommand = command as? any AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch let error as ValidationError {
            // Refused while running (a file, a database, a key): the command line was well formed, so the reason
            // alone and exit 1, not the top-level usage and 64, which would hide the reason under a help text.
            note("Error: \(error.message)")
            Self.exit(withError: ExitCode.failure)
        } catch {
            exit(withError: error)
        }
    }
}
