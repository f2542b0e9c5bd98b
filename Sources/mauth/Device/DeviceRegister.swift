import ArgumentParser
import Foundation
import MobileAuthentication

struct DeviceRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Register a user: by username with a JWT or cookie, from a QR image or payload, or from an Auth Cloud enroll response or app link.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var verification: VerificationOptions
    @OptionGroup var source: PayloadOptions
    @Option(help: "Register this username in band (with --jwt or --cookie).") var username: String?
    @Option(help: "The relying party's JWT for the username (or MAUTH_DEVICE_JWT).") var jwt: String?
    @Option(help: "A session cookie, name=value.") var cookie: String?
    @Option(help: "An Auth Cloud enroll response (JSON, or @file).") var enrollResponse: String?
    @Option(help: "An Auth Cloud app link (appLinkUri).") var appLink: String?

    func run() async throws {
        try await runDeviceCommand("register", json: options.json) {
            let scanned = try source.scannedText()
            let sources = [username != nil, scanned != nil, enrollResponse != nil, appLink != nil].filter { $0 }.count
            guard sources == 1 else {
                throw DeviceCommandError("give exactly one of --username, --qr-image, --payload, --enroll-response, --app-link")
            }
            let kind = verification.authenticator ?? .pin
            let answers = try HeadlessAnswers.read(kind: kind, pin: verification.pin, password: verification.password, enrolling: true)
            let device = try HeadlessDevice.open(options)
            let selector = HeadlessSelector(kind: kind, registering: true)
            return try await answers.explaining(selector: selector) {
                try await device.withClient { client in
                    var report = DeviceReport()
                    let runner = OutOfBandRunner(device: device, client: client, selector: selector, answers: answers)
                    if let username {
                        var registration = client.operations.registration.username(username).deviceInformation(device.deviceInformation)
                            .authenticatorSelector(selector).pinEnroller(answers.pinEnroller).passwordEnroller(answers.passwordEnroller)
                            .biometricUserVerifier(answers.osVerifier).devicePasscodeUserVerifier(answers.osVerifier)
                            .fingerprintUserVerifier(answers.osVerifier)
                        if let provider = try device.authorization(jwt: jwt, cookie: cookie) {
                            registration = registration.authorizationProvider(provider)
                        }
                        do { try await registration.executeAsync() } catch let error as OperationError {
                            // The SDK names its own API (an authorizationProvider); this command's user needs its flags.
                            if case .NetworkError(let cause) = error, let refusal = cause as? ServerStatusError, refusal.httpStatus == 401 {
                                throw DeviceCommandError(
                                    jwt == nil && cookie == nil
                                        ? "the server requires a credential to register \(username): pass --jwt TOKEN (the relying party's; for development, mint one with `mauth admin token --key rp.pem --subject \(username)`) or --cookie NAME=VALUE (a session of \(username))"
                                        : "the server refused the credential for \(username): \(refusal.message ?? "HTTP 401")")
                            }
                            throw error
                        }
                        runner.reportRegistration(username: username, report: &report)
                    } else if let scanned {
                        try await runner.run(scanned, enrolling: true, report: &report)
                    } else if let appLink {
                        try await runner.authCloudRegistration(appLink: appLink, enrollResponse: nil, report: &report)
                    } else if let enrollResponse {
                        let text =
                            try enrollResponse.hasPrefix("@")
                            ? String(contentsOfFile: String(enrollResponse.dropFirst()), encoding: .utf8) : enrollResponse
                        try await runner.authCloudRegistration(appLink: nil, enrollResponse: text, report: &report)
                    }
                    return report
                }
            }
        }
    }
}
