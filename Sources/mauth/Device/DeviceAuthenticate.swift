import ArgumentParser
import Foundation
import MobileAuthentication

struct DeviceAuthenticate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticate", abstract: "Log in (in band), optionally confirming a transaction text.")
    @OptionGroup var options: DeviceOptions
    @OptionGroup var verification: VerificationOptions
    @Option(help: "The user to authenticate (default: the device's only account).") var username: String?
    @Option(help: "A transaction text to confirm.") var transaction: String?

    func run() async throws {
        try await runDeviceCommand("authenticate", json: options.json) {
            let answers = try HeadlessAnswers.read(kind: verification.authenticator, pin: verification.pin, password: verification.password)
            let device = try HeadlessDevice.open(options)
            let selector = HeadlessSelector(kind: verification.authenticator)
            return try await answers.explaining(selector: selector) {
                try await device.withClient { client in
                    let username = try username ?? onlyAccount(client)
                    var authentication = client.operations.authentication.username(username).authenticatorSelector(selector)
                        .pinUserVerifier(answers.pinVerifier).passwordUserVerifier(answers.passwordVerifier).biometricUserVerifier(answers.osVerifier)
                        .devicePasscodeUserVerifier(answers.osVerifier).fingerprintUserVerifier(answers.osVerifier)
                    if let transaction { authentication = authentication.transactionConfirmation(text: transaction) }
                    let provider = try await authentication.executeAsync()
                    var report = DeviceReport()
                    report["username"] = username
                    report["aaid"] = selector.chosenAaid ?? ""
                    report.line(
                        "authenticated \(username) with \(DeviceAuthenticatorKind.of(selector.chosenAaid ?? "?")) (\(selector.chosenAaid ?? "?"))")
                    if let transaction {
                        report["transaction"] = transaction
                        report.line("transaction confirmed: \(DeviceScreen.oneLine(transaction))")
                    }
                    if let jwt = provider as? JwtAuthorizationProvider {
                        report["token"] = jwt.jwt
                        report.line("token: \(jwt.jwt)")
                    } else if let cookies = provider as? CookieAuthorizationProvider {
                        report["cookies"] = cookies.cookies.map { "\($0.name)=\($0.value)" }
                        report.line("session cookie(s): \(cookies.cookies.map(\.name).joined(separator: ", "))")
                    }
                    return report
                }
            }
        }
    }
}
