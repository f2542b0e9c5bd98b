import Foundation

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
/// (to exercise the user-interaction timeout).
final class Script<Context>: @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [String?]
    private(set) var contexts: [Context] = []
    init(_ answers: [String?]) { self.answers = answers }
    func next(_ context: Context) -> String?? {
        lock.withLock {
            contexts.append(context)
            return answers.isEmpty ? .none : .some(answers.removeFirst())
        }
    }
    var shown: [Context] { lock.withLock { contexts } }
}

public final class ScriptedPinEnroller: PinEnroller, @unchecked Sendable {
    private let script: Script<any PinEnrollmentContext>
    private let policy: PinPolicy

    /// Gives the PINs in order (each retry after a recoverable error takes the next one); nil cancels.
    public init(pins: [String?], policy: PinPolicy = PinPolicy()) {
        script = Script(pins); self.policy = policy
    }

    public var shownContexts: [any PinEnrollmentContext] { script.shown }
    public func pinPolicy() -> PinPolicy { policy }

    public func enrollPin(context: any PinEnrollmentContext, handler: any PinEnrollmentHandler) {
        switch script.next(context) {
        case .some(.some(let pin)): handler.pin(pin)
        case .some(.none): handler.cancel()
        case .none: break
        }
    }
}

public final class ScriptedPinUserVerifier: PinUserVerifier, @unchecked Sendable {
    private let script: Script<any PinUserVerificationContext>

    /// Gives the PINs in order (each retry after a wrong PIN takes the next one); nil cancels.
    public init(pins: [String?]) { script = Script(pins) }

    public var shownContexts: [any PinUserVerificationContext] { script.shown }

    public func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
        switch script.next(context) {
        case .some(.some(let pin)): handler.verify(pin)
        case .some(.none): handler.cancel()
        case .none: break
        }
    }
}
