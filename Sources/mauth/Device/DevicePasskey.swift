import ArgumentParser
import Foundation
import MobileAuthentication

/// `mauth device passkey`: the device's passkeys for the server's relying party, through the SDK's passkey
/// operations and the simulated phone's platform authenticator (what an iPhone app does with
/// `ASAuthorizationPlatformPublicKeyCredentialProvider`). The server must accept the app's origin,
/// `https://<rpId>`, among its `fido2.origins`.
struct DevicePasskey: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passkey", abstract: "Add a passkey for a signed-in user, or sign in with one (nevisFIDO's FIDO2 API).",
        subcommands: [DevicePasskeyRegister.self, DevicePasskeyAuthenticate.self])
}

struct DevicePasskeyRegister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "register",
        abstract: "Add a passkey for a user, with a session of hers (--jwt from `mauth device authenticate`, or --cookie) or the relying party's JWT."
    )
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user the passkey is for (default: the device's only account).") var username: String?
    @Option(help: "The name the passkey manager shows (default: the username).") var displayName: String?
    @Option(help: "A session JWT of the user, or the relying party's (or MAUTH_DEVICE_JWT).") var jwt: String?
    @Option(help: "A session cookie of the user, name=value.") var cookie: String?

    func run() async throws {
        try await runDeviceCommand("passkey register", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let username = try username ?? onlyAccount(client)
                var registration = client.operations.passkeyRegistration.username(username).friendlyName(device.profile.name)
                if let displayName { registration = registration.displayName(displayName) }
                guard let provider = try device.authorization(jwt: jwt, cookie: cookie) else {
                    throw DeviceCommandError(
                        "the server adds a passkey only with a recent session of \(username): pass --jwt TOKEN (the token `mauth device authenticate` prints) or --cookie NAME=VALUE"
                    )
                }
                let credentialID = try await registration.authorizationProvider(provider).executeAsync()
                var report = DeviceReport()
                report["username"] = username
                report["credentialId"] = credentialID
                report.line("added a passkey for \(username): credential \(credentialID)")
                return report
            }
        }
    }
}

struct DevicePasskeyAuthenticate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authenticate", abstract: "Sign in with one of the device's passkeys; prints the session's token.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user signing in; without it, any of the device's passkeys for the server (a discoverable sign-in).")
    var username: String?
    @Flag(help: "Ask as the username field's AutoFill suggestion does.") var autofill = false

    func run() async throws {
        try await runDeviceCommand("passkey authenticate", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                var authentication = client.operations.passkeyAuthentication.mediation(autofill ? .autoFill : .modal)
                if let username { authentication = authentication.username(username) }
                let provider = try await authentication.executeAsync()
                var report = DeviceReport()
                report.line("signed in with a passkey" + (username.map { " as \($0)" } ?? ""))
                if let jwt = provider as? JwtAuthorizationProvider {
                    report["token"] = jwt.jwt
                    report.line("token: \(jwt.jwt)")
                }
                return report
            }
        }
    }
}
