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
        try await changeSecret("change-pin", secret: .pin, options: options, username: username, old: pin, new: newPin) {
            client, username, old, new in
            let changer = HeadlessSecretChanger(.pin, old: old, new: new)
            do { try await client.operations.pinChange.username(username).pinChanger(changer).executeAsync() } catch {
                // Asked again without a terminal, the changer stops: say why instead of "cancelled".
                if let refusal = changer.refusal { throw refusal }
                throw error
            }
        }
    }
}

struct DeviceChangePassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "change-password", abstract: "Change the password of a user's password authenticator.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The user (default: the device's only account).") var username: String?
    @Option(help: "The current password (or MAUTH_DEVICE_PASSWORD, or a prompt).") var password: String?
    @Option(help: "The new password (or MAUTH_DEVICE_NEW_PASSWORD, or a prompt).") var newPassword: String?

    func run() async throws {
        try await changeSecret("change-password", secret: .password, options: options, username: username, old: password, new: newPassword) {
            client, username, old, new in
            let changer = HeadlessSecretChanger(.password, old: old, new: new)
            do { try await client.operations.passwordChange.username(username).passwordChanger(changer).executeAsync() } catch {
                if let refusal = changer.refusal { throw refusal }
                throw error
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
    /// The prompt's word, capitalized as a prompt starts.
    var label: String { self == .pin ? "PIN" : "Password" }
    /// How to give it without a prompt.
    var hint: String { "pass --\(self == .pin ? "pin" : "password") or set \(variable)" }

    /// Asks on the terminal (without echo); nil when nothing was typed.
    func ask(_ prompt: String) -> String? {
        guard let typed = getpass(prompt), case let text = String(cString: typed), !text.isEmpty else { return nil }
        return text
    }

    /// A change the SDK refused: its reason (a wrong current secret, a new one against the policy) and, when the
    /// authenticator counted a failure, its protection status.
    func refusal(_ reason: String?, status: String) -> DeviceCommandError {
        let counted = status == "Unlocked" ? "" : " (\(status))"
        return DeviceCommandError("the \(name) change was refused: \(reason ?? "no reason given")\(counted)")
    }
}

/// The current and new PIN or password as the command line gives them. When the SDK refuses the pair, a person at a
/// terminal is told why and asked again for the one that was wrong (the current one, or the new one against the
/// policy), after any cool-down, counted down; without a terminal the command stops with the reason.
final class HeadlessSecretChanger: PinChanger, PasswordChanger, @unchecked Sendable {
    let secret: ChangedSecret
    private let interactive: Bool
    private let lock = NSLock()
    private var pair: (old: String, new: String)
    private var stopped: DeviceCommandError?

    init(_ secret: ChangedSecret, old: String, new: String, interactive: Bool = standardInputIsTerminal) {
        self.secret = secret
        self.interactive = interactive
        pair = (old, new)
    }

    /// Why the changer gave up, if it did.
    var refusal: DeviceCommandError? { lock.withLock { stopped } }

    func passwordPolicy() -> any PasswordPolicy { ScriptedPasswordPolicy() }

    func changePin(context: any PinChangeContext, handler: any PinChangeHandler) {
        let wrongCurrent = if case .InvalidPin? = context.lastRecoverableError { true } else { false }
        answer(
            refused: context.lastRecoverableError, wrongCurrent: wrongCurrent, status: context.authenticatorProtectionStatus, give: handler.pins,
            cancel: handler.cancel)
    }

    func changePassword(context: any PasswordChangeContext, handler: any PasswordChangeHandler) {
        let wrongCurrent = if case .InvalidPassword? = context.lastRecoverableError { true } else { false }
        answer(
            refused: context.lastRecoverableError, wrongCurrent: wrongCurrent, status: context.authenticatorProtectionStatus, give: handler.passwords,
            cancel: handler.cancel)
    }

    /// `status` is the PIN's or password's protection status: its text for the message, its state for the wait.
    private func answer(
        refused: (any LocalizedError)?, wrongCurrent: Bool, status: some ProtectionStatusText,
        give: @escaping @Sendable (String, String) -> Void, cancel: @escaping @Sendable () -> Void
    ) {
        let current = lock.withLock { pair }
        guard let refused else { return give(current.old, current.new) }
        let state = status.state
        let refusal = secret.refusal(refused.errorDescription ?? "\(refused)", status: "\(status)")
        guard interactive, state != .lockedOut else {
            lock.withLock { stopped = refusal }
            return cancel()
        }
        let name = secret.name
        // Typing and waiting block; the SDK's interaction continues on another thread.
        Thread.detachNewThread {
            note(refusal.description)
            if state.remainingCoolDown > 0 { HeadlessSecretVerifier.countDown(seconds: state.remainingCoolDown, label: "\(name) cool-down") }
            guard let text = self.secret.ask(wrongCurrent ? "Current \(name): " : "New \(name): ") else {
                self.lock.withLock { self.stopped = DeviceCommandError("no \(name) was typed") }
                return cancel()
            }
            let next = self.lock.withLock {
                if wrongCurrent { self.pair.old = text } else { self.pair.new = text }
                return self.pair
            }
            give(next.old, next.new)
        }
    }
}

/// The PIN's and the password's protection status, as the changer reads them.
protocol ProtectionStatusText: CustomStringConvertible {
    var state: ProtectionState { get }
}

extension PinAuthenticatorProtectionStatus: ProtectionStatusText {}
extension PasswordAuthenticatorProtectionStatus: ProtectionStatusText {}

/// A PIN or password change: reads both secrets (flag, environment, prompt), opens the device, runs `change` for the
/// user (by default the device's only account) and reports it.
func changeSecret(
    _ command: String, secret: ChangedSecret, options: DeviceOptions, username: String?, old: String?, new: String?,
    _ change: @escaping (any MobileAuthenticationClient, String, String, String) async throws -> Void
) async throws {
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
