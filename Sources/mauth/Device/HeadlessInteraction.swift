import ArgumentParser
import Foundation
import MobileAuthentication
import MobileAuthenticationCore
import MobileAuthenticationSimulator
import NevisProtocol
import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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

/// The device's "screen": shows the user, the operation and the transaction text (``DeviceScreen``) before any
/// question is asked, then picks the requested authenticator (or the first registered and allowed one), or
/// declines. It remembers what it showed, which the command reports. When nothing can be chosen it says why, so the
/// command does not report the SDK's "cancelled".
final class HeadlessSelector: AuthenticatorSelector, @unchecked Sendable {
    private let lock = NSLock()
    private let kind: DeviceAuthenticatorKind?
    let approve: Bool
    private let registering: Bool
    private var shown: (username: String, transaction: String?, aaid: String?)?
    private var noChoice: String?

    init(kind: DeviceAuthenticatorKind?, approve: Bool = true, registering: Bool = false) {
        self.kind = kind
        self.approve = approve
        self.registering = registering
    }

    var shownUsername: String? { lock.withLock { shown?.username } }
    var shownTransaction: String? { lock.withLock { shown?.transaction } }
    var chosenAaid: String? { lock.withLock { shown?.aaid } }
    /// Why no authenticator could be chosen, if that is why the selection was cancelled.
    var noChoiceReason: String? { lock.withLock { noChoice } }

    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        let username = context.account.username
        let candidates = context.authenticators.filter { authenticator in
            context.isPolicyCompliant(authenticatorAaid: authenticator.aaid)
                && (registering || authenticator.registration.isRegistered(username))
                && (kind?.matches(authenticator.aaid) ?? true)
        }
        let choice = candidates.first?.aaid
        let transaction = context.transactionConfirmationData.map { String(decoding: $0, as: UTF8.self) }
        lock.withLock {
            shown = (username, transaction, approve ? choice : nil)
            if approve && choice == nil { noChoice = Self.whyNoChoice(context, username: username, kind: kind, registering: registering) }
        }
        // The person reads what they are about to sign before anything asks for a PIN, a password or a finger: the
        // SDK selects first and verifies after, so this is the last moment before the first question.
        // On standard error, so that standard output keeps only the report.
        DeviceScreen.lines(username: username, operation: registering ? .registration : .authentication, transaction: transaction, approve: approve)
            .forEach(note)
        if approve, let choice { handler.aaid(choice) } else { handler.cancel() }
    }

    /// The first rule that left no authenticator: the kind the device lacks, the hardware, the server's policy,
    /// or (to authenticate) the registrations the user has.
    static func whyNoChoice(
        _ context: any AuthenticatorSelectionContext, username: String, kind: DeviceAuthenticatorKind?,
        registering: Bool
    ) -> String {
        let name = kind.map { "a \($0.rawValue) authenticator" } ?? "an authenticator"
        let ofKind = context.authenticators.filter { kind?.matches($0.aaid) ?? true }
        guard !ofKind.isEmpty else { return "this device's profile has no \(kind?.rawValue ?? "") authenticator" }
        if registering {
            if !ofKind.contains(where: \.isSupportedByHardware) { return "this device does not support \(name)" }
            return "the server's policy does not allow \(name) here"
        }
        let registered = context.authenticators.filter { $0.registration.isRegistered(username) }
        guard ofKind.contains(where: { $0.registration.isRegistered(username) }) else {
            let kinds = registered.map { DeviceAuthenticatorKind.of($0.aaid) }
            return "\(username) has no registered \(kind?.rawValue ?? "") authenticator"
                + (kinds.isEmpty ? "" : " (registered: \(kinds.joined(separator: ", ")))")
        }
        return "the server's policy does not allow \(name) of \(username) here"
    }
}

/// What the headless phone's screen shows before it asks anything: the user, the operation and, for a transaction
/// confirmation, the whole text as a phone renders it (``LimitedHTML/displayText(_:)``), each line escaped so that
/// a relying party's text cannot drive the terminal.
enum DeviceScreen {
    /// The lines for one operation; `username` nil when the server did not say (a pending operation of another server).
    static func lines(username: String?, operation: OutOfBandOperationKind?, transaction: String?, approve: Bool = true) -> [String] {
        let user = username.map { UntrustedText.quoted($0) } ?? "an account"
        let heading: String
        switch (operation, transaction, approve) {
        case (.registration, _, _): heading = "register \(user) on this device"
        case (.deregistration, _, _): heading = "deregister \(user) from this device"
        case (nil, nil, _): heading = "an operation for \(user)"
        case (.authentication, nil, true): heading = "log in as \(user)"
        case (_, nil, false): heading = "declining a login as \(user)"
        case (_, .some, true): heading = "confirm this transaction for \(user):"
        case (_, .some, false): heading = "declining this transaction for \(user):"
        }
        guard let transaction else { return [heading] }
        return [heading] + textLines(transaction).map { "  │ " + $0 }
    }

    /// A transaction text as the screen shows it, on one line of a report (its lines joined with ` / `), quoted.
    static func oneLine(_ transaction: String) -> String {
        "\"" + textLines(transaction).joined(separator: " / ") + "\""
    }

    /// The rendered lines of a transaction text, each escaped.
    private static func textLines(_ transaction: String) -> [String] {
        LimitedHTML.displayText(transaction).split(separator: "\n", omittingEmptySubsequences: false).map { UntrustedText.escaped(String($0)) }
    }
}

/// A PIN or password as the command line gives it: the one from the option or environment first; then, with a
/// terminal, the user is asked again after a wrong one and waits out a cool-down that counts down on screen, as an
/// app would. Without a terminal it stops and says why (wrong secret and the attempts left, or the cool-down still
/// to run), instead of the SDK's "cancelled".
final class HeadlessSecretVerifier: PinUserVerifier, PasswordUserVerifier, @unchecked Sendable {
    let secret: ChangedSecret
    private let given: String?
    private let interactive: Bool
    private let lock = NSLock()
    private var asked = 0
    private var refusal: String?

    init(_ secret: ChangedSecret, given: String?, interactive: Bool = standardInputIsTerminal) {
        self.secret = secret
        self.given = given
        self.interactive = interactive
    }

    /// Why the verifier gave up, if it did.
    var refusalReason: String? { lock.withLock { refusal } }
    var timesAsked: Int { lock.withLock { asked } }

    func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
        answer(context.authenticatorProtectionStatus.state, verify: handler.verify, cancel: handler.cancel)
    }

    func verifyPassword(context: any PasswordUserVerificationContext, handler: any PasswordUserVerificationHandler) {
        answer(context.authenticatorProtectionStatus.state, verify: handler.verify, cancel: handler.cancel)
    }

    private func answer(_ state: ProtectionState, verify: @escaping @Sendable (String) -> Void, cancel: @escaping @Sendable () -> Void) {
        let attempt = lock.withLock {
            defer { asked += 1 }
            return asked
        }
        let coolDown = state.remainingCoolDown
        let lockedOut = state == .lockedOut
        let name = secret.name
        let left = secret.attemptsLeft(state)
        let stop = { @Sendable (reason: String) in
            self.lock.withLock { self.refusal = reason }
            cancel()
        }
        if lockedOut { return stop("the \(name) is locked after too many wrong attempts: register again") }
        // Typing and waiting block; the SDK's interaction continues on another thread.
        let interactive = interactive
        let given = given
        Thread.detachNewThread {
            if attempt > 0 && !interactive {
                let wait = coolDown > 0 ? "; the next attempt is possible in \(coolDown) s" : ""
                return stop("wrong \(name)\(left)\(wait)")
            }
            if coolDown > 0 {
                guard interactive else { return stop("the \(name) is cooling down after wrong attempts: try again in \(coolDown) s\(left)") }
                if attempt > 0 { note("wrong \(name)\(left)") }
                Self.countDown(seconds: coolDown, label: "\(name) cool-down")
            } else if attempt > 0 {
                note("wrong \(name)\(left)")
            }
            if attempt == 0, let given { return verify(given) }
            guard interactive else { return stop("a \(name) is needed: \(self.secret.hint)") }
            guard let text = self.secret.ask("\(self.secret.label): ") else { return stop("no \(name) was typed") }
            verify(text)
        }
    }

    /// Counts `seconds` down on standard error (one line, rewritten each second), then one more second: the
    /// SDK's clock decides when the cool-down is over.
    static func countDown(seconds: Int, label: String) {
        for remaining in stride(from: seconds, to: 0, by: -1) {
            noteInline("\(label): \(remaining) s ")
            Thread.sleep(forTimeInterval: 1)
        }
        Thread.sleep(forTimeInterval: 1)
        noteInline("\(label): over\n")
    }
}

extension ChangedSecret {
    /// The SDK's verifier of this secret.
    var factor: KnowledgeVerifierStore.Factor { self == .pin ? .pin : .password }

    /// ` (N attempts left before the PIN locks)` after a wrong attempt, or nothing.
    func attemptsLeft(_ state: ProtectionState) -> String {
        guard case .lastAttemptFailed(let tries, _) = state else { return "" }
        return " (\(tries) attempt\(tries == 1 ? "" : "s") left before the \(name) locks)"
    }
}

/// A new PIN or password as the command line gives it: the one from the option, environment or first prompt; when
/// the policy refuses it, a person at a terminal is told why and asked again (as an app asks its enroller again with
/// the recoverable error); without a terminal the command stops with the reason.
final class HeadlessSecretEnroller: PinEnroller, PasswordEnroller, @unchecked Sendable {
    let secret: ChangedSecret
    private let given: String?
    private let interactive: Bool
    private let lock = NSLock()
    private var refusal: String?

    init(_ secret: ChangedSecret, given: String?, interactive: Bool = standardInputIsTerminal) {
        self.secret = secret
        self.given = given
        self.interactive = interactive
    }

    /// Why the enroller gave up, if it did.
    var refusalReason: String? { lock.withLock { refusal } }

    func passwordPolicy() -> any PasswordPolicy { ScriptedPasswordPolicy() }

    func enrollPin(context: any PinEnrollmentContext, handler: any PinEnrollmentHandler) {
        answer(refused: context.lastRecoverableError?.errorDescription, give: handler.pin, cancel: handler.cancel)
    }

    func enrollPassword(context: any PasswordEnrollmentContext, handler: any PasswordEnrollmentHandler) {
        answer(refused: context.lastRecoverableError?.errorDescription, give: handler.password, cancel: handler.cancel)
    }

    private func answer(refused: String?, give: @escaping @Sendable (String) -> Void, cancel: @escaping @Sendable () -> Void) {
        let name = secret.name
        if refused == nil, let given { return give(given) }
        let reason = refused.map { "the \(name) was refused: \($0)" }
        guard interactive else {
            return stop(reason ?? "a new \(name) is needed: \(secret.hint)", cancel)
        }
        // Typing blocks; the SDK's interaction continues on another thread.
        Thread.detachNewThread {
            if let reason { note(reason) }
            guard let text = self.secret.ask("\(self.secret.label): ") else { return self.stop("no \(name) was typed", cancel) }
            give(text)
        }
    }

    private func stop(_ reason: String, _ cancel: @Sendable () -> Void) {
        lock.withLock { refusal = reason }
        cancel()
    }
}

/// The user-verification and enrollment answers a command line carries: the PIN or password (see
/// ``HeadlessSecretVerifier``), biometrics and the device passcode always accepted, and one PIN or password to
/// enroll. It keeps what it was shown, so a failure is reported with its reason, not as "the user cancelled".
struct HeadlessAnswers {
    var pin: String?
    var password: String?
    let pinVerifier: HeadlessSecretVerifier
    let passwordVerifier: HeadlessSecretVerifier
    let osVerifier = ScriptedOSVerifier()
    let pinEnroller: HeadlessSecretEnroller
    let passwordEnroller: HeadlessSecretEnroller

    init(pin: String? = nil, password: String? = nil) {
        self.pin = pin
        self.password = password
        pinVerifier = HeadlessSecretVerifier(.pin, given: pin)
        passwordVerifier = HeadlessSecretVerifier(.password, given: password)
        pinEnroller = HeadlessSecretEnroller(.pin, given: pin)
        passwordEnroller = HeadlessSecretEnroller(.password, given: password)
    }

    /// Reads only the secret the chosen authenticator needs (a biometric registration asks for none). To
    /// authenticate, a missing PIN or password is asked for when the authenticator asks (with a terminal).
    static func read(kind: DeviceAuthenticatorKind?, pin: String?, password: String?, enrolling: Bool = false) throws -> HeadlessAnswers {
        let environment = ProcessInfo.processInfo.environment
        switch kind {
        case .pin where enrolling: return HeadlessAnswers(pin: try deviceSecret(pin, environment: "MAUTH_DEVICE_PIN", prompt: "PIN"))
        case .password where enrolling:
            return HeadlessAnswers(password: try deviceSecret(password, environment: "MAUTH_DEVICE_PASSWORD", prompt: "Password"))
        case .biometric, .fingerprint, .passcode: return HeadlessAnswers()
        default:
            return HeadlessAnswers(pin: pin ?? environment["MAUTH_DEVICE_PIN"], password: password ?? environment["MAUTH_DEVICE_PASSWORD"])
        }
    }

    /// Runs `body`; when it fails because an answer was refused or missing, or no authenticator could be chosen,
    /// that reason replaces the SDK's "cancelled".
    func explaining<T>(selector: HeadlessSelector? = nil, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            if let reason = selector?.noChoiceReason { throw DeviceCommandError(reason) }
            if let reason = pinEnroller.refusalReason ?? passwordEnroller.refusalReason ?? pinVerifier.refusalReason ?? passwordVerifier.refusalReason
            {
                throw DeviceCommandError(reason)
            }
            throw error
        }
    }
}

/// Options of the commands that verify the user: which authenticator, and its PIN or password.
struct VerificationOptions: ParsableArguments {
    @Option(help: "Authenticator: \(DeviceAuthenticatorKind.allCases.map(\.rawValue).joined(separator: ", ")).") var authenticator:
        DeviceAuthenticatorKind?
    @Option(help: "The PIN (or MAUTH_DEVICE_PIN, or a prompt).") var pin: String?
    @Option(help: "The password (or MAUTH_DEVICE_PASSWORD, or a prompt).") var password: String?
}
