import ArgumentParser
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator

/// The kinds of authenticator a command line names; the AAID follows from the device profile (iOS `F1D0#100x`,
/// Android `F1D0#000x`), so the last digit identifies the kind.
enum DeviceAuthenticatorKind: String, ExpressibleByArgument, CaseIterable {
    case pin, password, biometric, fingerprint, passcode

    var aaidSuffix: String {
        switch self {
        case .pin: return "1"
        case .fingerprint: return "2"
        case .biometric: return "3"
        case .passcode: return "4"
        case .password: return "5"
        }
    }

    func matches(_ aaid: String) -> Bool { aaid.hasPrefix("F1D0#") && aaid.hasSuffix(aaidSuffix) }

    static func of(_ aaid: String) -> String {
        allCases.first { $0.matches(aaid) }?.rawValue ?? aaid
    }
}

/// The device's "screen": picks the requested authenticator (or the first registered and allowed one), or
/// declines, and remembers the transaction text it was shown, which the command prints.
final class HeadlessSelector: AuthenticatorSelector, @unchecked Sendable {
    private let lock = NSLock()
    private let kind: DeviceAuthenticatorKind?
    let approve: Bool
    private let registering: Bool
    private var shown: (username: String, transaction: String?, aaid: String?)?

    init(kind: DeviceAuthenticatorKind?, approve: Bool = true, registering: Bool = false) {
        self.kind = kind; self.approve = approve; self.registering = registering
    }

    var shownUsername: String? { lock.withLock { shown?.username } }
    var shownTransaction: String? { lock.withLock { shown?.transaction } }
    var chosenAaid: String? { lock.withLock { shown?.aaid } }

    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        let username = context.account.username
        let candidates = context.authenticators.filter { authenticator in
            context.isPolicyCompliant(authenticatorAaid: authenticator.aaid)
                && (registering || authenticator.registration.isRegistered(username))
                && (kind?.matches(authenticator.aaid) ?? true)
        }
        let choice = candidates.first?.aaid
        lock.withLock {
            shown = (username, context.transactionConfirmationData.map { String(decoding: $0, as: UTF8.self) }, approve ? choice : nil)
        }
        if approve, let choice { handler.aaid(choice) } else { handler.cancel() }
    }
}

/// The user-verification answers a command line carries: one PIN or password (a wrong one is asked for again,
/// and the script then cancels instead of waiting), biometrics and the device passcode always accepted. It keeps
/// what it was shown, so a cancellation after a refused PIN is reported as that, not as "the user cancelled".
struct HeadlessAnswers {
    var pin: String?
    var password: String?
    let pinVerifier: ScriptedPinUserVerifier
    let passwordVerifier: ScriptedPasswordUserVerifier
    let osVerifier = ScriptedOSVerifier()
    let pinEnroller: ScriptedPinEnroller
    let passwordEnroller: ScriptedPasswordEnroller

    init(pin: String? = nil, password: String? = nil) {
        self.pin = pin; self.password = password
        pinVerifier = ScriptedPinUserVerifier(pins: [pin, nil])
        passwordVerifier = ScriptedPasswordUserVerifier(passwords: [password, nil])
        pinEnroller = ScriptedPinEnroller(pins: [pin, nil])
        passwordEnroller = ScriptedPasswordEnroller(passwords: [password, nil])
    }

    /// Reads only the secret the chosen authenticator needs (a biometric registration asks for none).
    static func read(kind: DeviceAuthenticatorKind?, pin: String?, password: String?) throws -> HeadlessAnswers {
        switch kind {
        case .pin: return HeadlessAnswers(pin: try deviceSecret(pin, environment: "MAUTH_DEVICE_PIN", prompt: "PIN"))
        case .password: return HeadlessAnswers(password: try deviceSecret(password, environment: "MAUTH_DEVICE_PASSWORD", prompt: "Password"))
        case .biometric, .fingerprint, .passcode: return HeadlessAnswers()
        case nil:
            // Any registered authenticator may be chosen: take what was given, ask for nothing.
            return HeadlessAnswers(pin: pin ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_PIN"],
                                   password: password ?? ProcessInfo.processInfo.environment["MAUTH_DEVICE_PASSWORD"])
        }
    }

    /// Runs `body`; when it fails after a PIN or password was asked for a second time, the real reason replaces
    /// the SDK's "cancelled" (the script cancels the second question).
    func explaining<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            if pinEnroller.shownContexts.count > 1 {
                throw DeviceCommandError("the PIN was refused: \(pinEnroller.shownContexts.last?.lastRecoverableError.map { String(describing: $0) } ?? "policy")")
            }
            if passwordEnroller.shownContexts.count > 1 {
                throw DeviceCommandError("the password was refused: \(passwordEnroller.shownContexts.last?.lastRecoverableError.map { String(describing: $0) } ?? "policy")")
            }
            if let last = pinVerifier.shownContexts.last, pinVerifier.shownContexts.count > 1 {
                throw DeviceCommandError("wrong PIN (\(last.authenticatorProtectionStatus))")
            }
            if let last = passwordVerifier.shownContexts.last, passwordVerifier.shownContexts.count > 1 {
                throw DeviceCommandError("wrong password (\(last.authenticatorProtectionStatus))")
            }
            if pinVerifier.shownContexts.count == 1 && pin == nil { throw DeviceCommandError("a PIN is needed: pass --pin or set MAUTH_DEVICE_PIN") }
            if passwordVerifier.shownContexts.count == 1 && password == nil {
                throw DeviceCommandError("a password is needed: pass --password or set MAUTH_DEVICE_PASSWORD")
            }
            throw error
        }
    }
}

/// Options of the commands that verify the user: which authenticator, and its PIN or password.
struct VerificationOptions: ParsableArguments {
    @Option(help: "Authenticator: \(DeviceAuthenticatorKind.allCases.map(\.rawValue).joined(separator: ", ")).") var authenticator: DeviceAuthenticatorKind?
    @Option(help: "The PIN (or MAUTH_DEVICE_PIN, or a prompt).") var pin: String?
    @Option(help: "The password (or MAUTH_DEVICE_PASSWORD, or a prompt).") var password: String?
}
