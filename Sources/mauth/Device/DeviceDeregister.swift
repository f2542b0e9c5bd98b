import ArgumentParser
import Foundation
import MobileAuthentication

struct DeviceDeregister: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deregister", abstract: "Deregister a user's authenticator (or all of them) on the server and on the device.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "Only this authenticator (default: all of the user's).") var authenticator: DeviceAuthenticatorKind?
    @Option(help: "The relying party's JWT (default: the device signs the request itself).") var jwt: String?

    func run() async throws {
        try await runDeviceCommand("deregister", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                let username = try username ?? onlyAccount(client)
                var deregistration = client.operations.deregistration.username(username)
                if let authenticator {
                    guard
                        let aaid = client.localData.authenticators.first(where: {
                            authenticator.matches($0.aaid) && $0.registration.isRegistered(username)
                        })?.aaid
                    else {
                        throw DeviceCommandError("\(username) has no \(authenticator.rawValue) authenticator on this device")
                    }
                    deregistration = deregistration.aaid(aaid)
                }
                // Without a JWT the device authorizes the removal with its own dispatch-target key (Device-Signature).
                let provider: any AuthorizationProvider =
                    (jwt ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_JWT"]).map { JwtAuthorizationProvider(jwt: $0) }
                    ?? JwsAuthorizationProvider()
                try await deregistration.authorizationProvider(provider).executeAsync()
                var report = DeviceReport()
                report["username"] = username
                report["authenticator"] = authenticator?.rawValue ?? "all"
                report.line("deregistered \(username) (\(authenticator?.rawValue ?? "all authenticators"))")
                return report
            }
        }
    }
}
