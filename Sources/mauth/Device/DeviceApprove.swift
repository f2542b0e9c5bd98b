import ArgumentParser
import Foundation
import MobileAuthentication

struct DeviceApprove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "approve", abstract: "Approve an out-of-band operation: a QR code, a pushed payload, or the newest pending one.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var verification: VerificationOptions
    @OptionGroup var source: PayloadOptions
    @Option(help: "Which pending operation (1 = oldest; default the newest).") var index: Int?
    @Option(help: "An app link that carries the operation (https://…?dispatchTokenResponse=…), as a phone opens it.") var appLink: String?

    func run() async throws {
        try await runDeviceCommand("approve", json: options.json) {
            let answers = try HeadlessAnswers.read(kind: verification.authenticator, pin: verification.pin, password: verification.password)
            let source = try source.with(appLink: appLink)
            return try await OutOfBandDecision(approve: true).run(
                options: options, answers: answers, kind: verification.authenticator, source: source, index: index)
        }
    }
}

struct DeviceDeny: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deny", abstract: "Decline an out-of-band authentication: nothing is signed.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var source: PayloadOptions
    @Option(help: "Which pending operation (1 = oldest; default the newest).") var index: Int?
    @Option(help: "An app link that carries the operation (https://…?dispatchTokenResponse=…).") var appLink: String?

    func run() async throws {
        try await runDeviceCommand("deny", json: options.json) {
            let source = try source.with(appLink: appLink)
            return try await OutOfBandDecision(approve: false).run(
                options: options, answers: HeadlessAnswers(), kind: nil, source: source, index: index)
        }
    }
}
