import ArgumentParser
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator

struct DeviceChangePin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-pin", abstract: "Change the PIN of a user's PIN authenticator.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "The current PIN (or MAUTH_DEVICE_PIN, or a prompt).") var pin: String?
    @Option(help: "The new PIN (or MAUTH_DEVICE_NEW_PIN, or a prompt).") var newPin: String?

    func run() async throws {
        try await changeSecret("change-pin", secret: .pin, options: options, username: username, old: pin, new: newPin) { client, username, old, new in
            let changer = ScriptedPinChanger(pins: [(old, new), nil])
            do { try await client.operations.pinChange.username(username).pinChanger(changer).executeAsync() } catch {
                // The changer gives one pair; asked again, it was refused: say why instead of "cancelled".
                guard changer.shownContexts.count > 1, let last = changer.shownContexts.last else { throw error }
                throw ChangedSecret.pin.refusal(last.lastRecoverableError?.errorDescription, status: "\(last.authenticatorProtectionStatus)")
            }
        }
    }
}

struct DeviceChangePassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "change-password", abstract: "Change the password of a user's password authenticator.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "The current password (or MAUTH_DEVICE_PASSWORD, or a prompt).") var password: String?
    @Option(help: "The new password (or MAUTH_DEVICE_NEW_PASSWORD, or a prompt).") var newPassword: String?

    func run() async throws {
        try await changeSecret("change-password", secret: .password, options: options, username: username, old: password, new: newPassword) {
            client, username, old, new in
            let changer = ScriptedPasswordChanger(passwords: [(old, new), nil])
            do { try await client.operations.passwordChange.username(username).passwordChanger(changer).executeAsync() } catch {
                guard changer.shownContexts.count > 1, let last = changer.shownContexts.last else { throw error }
                throw ChangedSecret.password.refusal(last.lastRecoverableError?.errorDescription, status: "\(last.authenticatorProtectionStatus)")
            }
        }
    }
}

/// The secret a change command replaces: its name in messages and the environment variables it is read from.
enum ChangedSecret {
    case pin, password

    var name: String { self == .pin ? "PIN" : "password" }
    var variable: String { self == .pin ? "MAUTH_DEVICE_PIN" : "MAUTH_DEVICE_PASSWORD" }
    var newVariable: String { self == .pin ? "MAUTH_DEVICE_NEW_PIN" : "MAUTH_DEVICE_NEW_PASSWORD" }

    /// A change the SDK refused: its reason (a wrong current secret, a new one against the policy) and, when the
    /// authenticator counted a failure, its protection status.
    func refusal(_ reason: String?, status: String) -> DeviceCommandError {
        let counted = status == "Unlocked" ? "" : " (\(status))"
        return DeviceCommandError("the \(name) change was refused: \(reason ?? "no reason given")\(counted)")
    }
}

/// A PIN or password change: reads both secrets (flag, environment, prompt), opens the device, runs `change` for the
/// user (by default the device's only account) and reports it.
func changeSecret(_ command: String, secret: ChangedSecret, options: DeviceOptions, username: String?, old: String?, new: String?,
                  _ change: @escaping (any MobileAuthenticationClient, String, String, String) async throws -> Void) async throws {
    try await runDeviceCommand(command, json: options.json) {
        let old = try deviceSecret(old, environment: secret.variable, prompt: "Current \(secret.name)")
        let new = try deviceSecret(new, environment: secret.newVariable, prompt: "New \(secret.name)")
        let device = try HeadlessDevice.open(options)
        return try await device.withClient { client in
            let username = try username ?? onlyAccount(client)
            try await change(client, username, old, new)
            var report = DeviceReport()
            report["username"] = username
            report.line("\(secret.name) changed for \(username)")
            return report
        }
    }
}
