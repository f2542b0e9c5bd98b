import ArgumentParser
import Foundation

@main
struct Mauth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mauth",
        abstract: "FIDO UAF mobile authentication: server, virtual device and end-to-end demo.",
        subcommands: [ServerCommand.self, DemoCommand.self, LoadCommand.self, AdminCommand.self, DeviceCommand.self])

    /// ArgumentParser's own `main`, after the process-wide settings (``ProcessTuning``), which must come first.
    static func main() async {
        // A reader that goes away (`mauth demo | head -1`) makes a write fail with EPIPE, which ``OutputLine`` answers by
        // ending quietly, instead of a signal at whichever write comes first.
        signal(SIGPIPE, SIG_IGN)
        do {
            try ProcessTuning.apply()
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand { try await asyncCommand.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
    }
}
