import ArgumentParser
import Foundation
import MobileAuthentication

struct DeviceList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Show the device: accounts, authenticators, device information.")
    @OptionGroup var options: DeviceOptions

    func run() async throws {
        try await runDeviceCommand("list", json: options.json) {
            let device = try HeadlessDevice.open(options)
            return try await device.withClient { client in
                var report = DeviceReport()
                let profile = device.profile
                report["device"] =
                    [
                        "name": profile.name, "profile": profile.profile, "server": profile.server, "facetId": profile.facetId,
                        "pushToken": profile.pushToken ?? NSNull(),
                    ] as [String: Any]
                report.line("device \"\(profile.name)\" (\(profile.profile)), server \(profile.server)")
                let accounts = client.localData.accounts
                report["accounts"] = accounts.map { ["username": $0.username, "server": $0.server.baseUrl.absoluteString] }
                report.line(accounts.isEmpty ? "accounts: none" : "accounts: \(accounts.map(\.username).joined(separator: ", "))")
                let authenticators = client.localData.authenticators
                report["authenticators"] = authenticators.map { authenticator in
                    [
                        "aaid": authenticator.aaid, "kind": DeviceAuthenticatorKind.of(authenticator.aaid),
                        "registeredUsers": authenticator.registration.registeredAccounts.map(\.username),
                        "supported": authenticator.isSupportedByHardware,
                    ] as [String: Any]
                }
                for authenticator in authenticators where authenticator.isSupportedByHardware {
                    let users = authenticator.registration.registeredAccounts.map(\.username)
                    report.line(
                        "  \(authenticator.aaid) \(DeviceAuthenticatorKind.of(authenticator.aaid)): \(users.isEmpty ? "not registered" : users.joined(separator: ", "))"
                    )
                }
                if let information = client.localData.deviceInformation {
                    report["deviceInformation"] =
                        [
                            "name": information.name, "deviceId": information.deviceId,
                            "fcmRegistrationToken": information.fcmRegistrationToken ?? NSNull(),
                            "dispatchTargets": information.idUsernamePairs.map { ["id": $0.identifier, "username": $0.username] },
                        ] as [String: Any]
                    report.line(
                        "device information: \(information.name), id \(information.deviceId), push \(information.fcmRegistrationToken ?? "off"), \(information.idUsernamePairs.count) dispatch target(s)"
                    )
                } else {
                    report.line("device information: none published")
                }
                return report
            }
        }
    }
}
