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
        do {
            try ProcessTuning.apply()
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
