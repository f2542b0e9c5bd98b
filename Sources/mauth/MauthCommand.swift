import ArgumentParser
import Foundation

@main
struct Mauth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mauth",
        abstract: "FIDO UAF mobile authentication: server, virtual device and end-to-end demo.",
        subcommands: [ServerCommand.self, DemoCommand.self])
}
