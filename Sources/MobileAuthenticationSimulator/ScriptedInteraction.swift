import Foundation
import MobileAuthenticationCore

/// Interaction objects that answer from a script instead of a UI: what the headless virtual device, load tests
/// and the SDK's own tests use. Each records the contexts it was shown.
public final class ScriptedAuthenticatorSelector: AuthenticatorSelector, @unchecked Sendable {
    private let lock = NSLock()
    private let choice: String?
    private var contexts: [any AuthenticatorSelectionContext] = []

    /// Picks `aaid`, or cancels when nil.
    public init(choose aaid: String?) { choice = aaid }

    public var shownContexts: [any AuthenticatorSelectionContext] { lock.withLock { contexts } }

    public func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        lock.withLock { contexts.append(context) }
        if let choice { handler.aaid(choice) } else { handler.cancel() }
    }
}

/// Answers successive questions with successive scripted values; `nil` cancels; past the end it stays silent
/// (to exercise the user-interaction timeout and task cancellation). `onShow` hears each context when it is shown,
/// before it is answered: what a narrator prints in the order things happen.
final class Script<Context, Answer>: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [Answer?]
    private var contexts: [Context] = []
    private let onShow: (@Sendable (Context) -> Void)?
    init(_ answers: [Answer?], onShow: (@Sendable (Context) -> Void)? = nil) {
        self.answers = answers
        self.onShow = onShow
    }

    /// Records `context` and plays the next scripted step: `answer` it, `cancel`, or nothing once the script ran out.
    func play(_ context: Context, answer: (Answer) -> Void, cancel: () -> Void) {
        onShow?(context)
        let next: Answer?? = lock.withLock {
            contexts.append(context)
            return answers.isEmpty ? .none : .some(answers.removeFirst())
        }
        switch next {
        case .some(.some(let value)): answer(value)
        case .some(.none): cancel()
        case .none: break
        }
    }

    var shown: [Context] { lock.withLock { contexts } }
}

public final class ScriptedPinEnroller: PinEnroller, @unchecked Sendable {
    private let script: Script<any PinEnrollmentContext, String>
    private let policy: PinPolicy

    /// Gives the PINs in order (each retry after a recoverable error takes the next one); nil cancels. `onShow` hears
    /// each context as it is shown.
    public init(pins: [String?], policy: PinPolicy = PinPolicy(), onShow: (@Sendable (any PinEnrollmentContext) -> Void)? = nil) {
        script = Script(pins, onShow: onShow)
        self.policy = policy
    }

    public var shownContexts: [any PinEnrollmentContext] { script.shown }
    public func pinPolicy() -> PinPolicy { policy }

    public func enrollPin(context: any PinEnrollmentContext, handler: any PinEnrollmentHandler) {
        script.play(context, answer: { pin in handler.pin(pin) }, cancel: handler.cancel)
    }
}

public final class ScriptedPinUserVerifier: PinUserVerifier, @unchecked Sendable {
    private let script: Script<any PinUserVerificationContext, String>

    /// Gives the PINs in order (each retry after a wrong PIN takes the next one); nil cancels. `onShow` hears each
    /// context as it is shown.
    public init(pins: [String?], onShow: (@Sendable (any PinUserVerificationContext) -> Void)? = nil) { script = Script(pins, onShow: onShow) }

    public var shownContexts: [any PinUserVerificationContext] { script.shown }

    public func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
        script.play(context, answer: { pin in handler.verify(pin) }, cancel: handler.cancel)
    }
}

public final class ScriptedPasswordEnroller: PasswordEnroller, @unchecked Sendable {
    private let script: Script<any PasswordEnrollmentContext, String>
    private let policy: any PasswordPolicy

    /// Gives the passwords in order (each retry after a recoverable error takes the next one); nil cancels. `onShow`
    /// hears each context as it is shown.
    public init(
        passwords: [String?], policy: any PasswordPolicy = ScriptedPasswordPolicy(),
        onShow: (@Sendable (any PasswordEnrollmentContext) -> Void)? = nil
    ) {
        script = Script(passwords, onShow: onShow)
        self.policy = policy
    }

    public var shownContexts: [any PasswordEnrollmentContext] { script.shown }
    public func passwordPolicy() -> any PasswordPolicy { policy }

    public func enrollPassword(context: any PasswordEnrollmentContext, handler: any PasswordEnrollmentHandler) {
        script.play(context, answer: { password in handler.password(password) }, cancel: handler.cancel)
    }
}

/// A password policy for the virtual device: at least `minimumLength` characters, with a letter and a digit.
public struct ScriptedPasswordPolicy: PasswordPolicy {
    public let minimumLength: Int
    public init(minimumLength: Int = 8) { self.minimumLength = minimumLength }

    func problem(_ password: String) -> String? {
        if password.count < minimumLength { return "The password must have at least \(minimumLength) characters." }
        if !password.contains(where: \.isLetter) || !password.contains(where: \.isNumber) { return "The password must contain a letter and a digit." }
        return nil
    }

    public func validatePasswordForEnrollment(
        _ password: String, onSuccess: @escaping @Sendable () -> Void,
        onError: @escaping @Sendable (PasswordEnrollmentValidationError) -> Void
    ) {
        if let problem = problem(password) { onError(.InvalidPassword(message: problem, cause: nil)) } else { onSuccess() }
    }

    public func validatePasswordForPasswordChange(
        _ password: String, onSuccess: @escaping @Sendable () -> Void,
        onError: @escaping @Sendable (PasswordChangeValidationError) -> Void
    ) {
        if let problem = problem(password) { onError(.InvalidPassword(message: problem, cause: nil)) } else { onSuccess() }
    }
}

public final class ScriptedPasswordUserVerifier: PasswordUserVerifier, @unchecked Sendable {
    private let script: Script<any PasswordUserVerificationContext, String>
    /// Gives the passwords in order (each retry after a wrong one takes the next); nil cancels.
    public init(passwords: [String?]) { script = Script(passwords) }
    public var shownContexts: [any PasswordUserVerificationContext] { script.shown }

    public func verifyPassword(context: any PasswordUserVerificationContext, handler: any PasswordUserVerificationHandler) {
        script.play(context, answer: { password in handler.verify(password) }, cancel: handler.cancel)
    }
}

/// Gives (old, new) pairs in order; nil cancels; past the end it stays silent.
public final class ScriptedPinChanger: PinChanger, @unchecked Sendable {
    private let script: Script<any PinChangeContext, (String, String)>
    private let policy: PinPolicy
    public init(pins: [(String, String)?], policy: PinPolicy = PinPolicy(), onShow: (@Sendable (any PinChangeContext) -> Void)? = nil) {
        script = Script(pins, onShow: onShow)
        self.policy = policy
    }
    public var shownContexts: [any PinChangeContext] { script.shown }
    public func pinPolicy() -> PinPolicy { policy }

    public func changePin(context: any PinChangeContext, handler: any PinChangeHandler) {
        script.play(context, answer: { pair in handler.pins(pair.0, pair.1) }, cancel: handler.cancel)
    }
}

public final class ScriptedPasswordChanger: PasswordChanger, @unchecked Sendable {
    private let script: Script<any PasswordChangeContext, (String, String)>
    private let policy: any PasswordPolicy
    public init(passwords: [(String, String)?], policy: any PasswordPolicy = ScriptedPasswordPolicy()) {
        script = Script(passwords)
        self.policy = policy
    }
    public var shownContexts: [any PasswordChangeContext] { script.shown }
    public func passwordPolicy() -> any PasswordPolicy { policy }

    public func changePassword(context: any PasswordChangeContext, handler: any PasswordChangeHandler) {
        script.play(context, answer: { pair in handler.passwords(pair.0, pair.1) }, cancel: handler.cancel)
    }
}

/// What a scripted OS-verification screen does when asked.
public enum ScriptedOSAnswer: Sendable {
    /// Starts the OS prompt with these texts.
    case verify(reason: String)
    case cancel
    /// Never answers (to exercise the timeout and task cancellation).
    case silent
}

/// One verifier object for the biometric, device passcode and Android fingerprint authenticators: it answers each
/// prompt with the next scripted answer (then keeps verifying) and records the authenticators it was shown.
public final class ScriptedOSVerifier: BiometricUserVerifier, DevicePasscodeUserVerifier, FingerprintUserVerifier, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [ScriptedOSAnswer]
    private var shown: [String] = []

    public init(_ answers: [ScriptedOSAnswer] = []) { self.answers = answers }

    /// The AAIDs of the authenticators the verifier was asked about, in order.
    public var shownAuthenticators: [String] { lock.withLock { shown } }

    private func next(_ context: any UserVerificationContext) -> ScriptedOSAnswer {
        lock.withLock {
            shown.append(context.authenticator.aaid)
            return answers.isEmpty ? .verify(reason: "Confirm with your device") : answers.removeFirst()
        }
    }

    public func verifyBiometric(context: any BiometricUserVerificationContext, handler: any BiometricUserVerificationHandler) {
        switch next(context) {
        case .verify(let reason):
            handler.verify(using: BiometricPromptOptions(reason: reason, fallbackButtonTitle: "Enter Passcode", cancelButtonTitle: "Cancel"))
        case .cancel: handler.cancel()
        case .silent: break
        }
    }

    public func verifyDevicePasscode(context: any DevicePasscodeUserVerificationContext, handler: any DevicePasscodeUserVerificationHandler) {
        switch next(context) {
        case .verify(let reason): handler.verify(using: DevicePasscodePromptOptions(reason: reason))
        case .cancel: handler.cancel()
        case .silent: break
        }
    }

    public func verifyFingerprint(context: any FingerprintUserVerificationContext, handler: any FingerprintUserVerificationHandler) {
        switch next(context) {
        case .verify: handler.listenForOsCredentials()
        case .cancel: handler.cancel()
        case .silent: break
        }
    }
}

/// Picks `username`, or cancels when nil, and records the contexts it was shown.
public final class ScriptedAccountSelector: AccountSelector, @unchecked Sendable {
    private let lock = NSLock()
    private let choice: Username?
    private var contexts: [any AccountSelectionContext] = []
    public init(choose username: Username?) { choice = username }
    public var shownContexts: [any AccountSelectionContext] { lock.withLock { contexts } }

    public func selectAccount(context: any AccountSelectionContext, handler: any AccountSelectionHandler) {
        lock.withLock { contexts.append(context) }
        if let choice { handler.username(choice) } else { handler.cancel() }
    }
}
