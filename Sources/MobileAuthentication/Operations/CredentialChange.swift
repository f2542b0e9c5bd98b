import Foundation
import UAF

/// Changes the PIN of a registered PIN authenticator (seed 002, "Change PIN"). Local only: no server is contacted.
public final class PinChange: Operation {
    struct Fields: Sendable {
        var username: Username?
        var changer: (any PinChanger)?
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (PinChangeError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func username(_ username: Username) -> Self {
        state.update { $0.username = username }
        return self
    }
    @discardableResult public func pinChanger(_ changer: any PinChanger) -> Self {
        state.update { $0.changer = changer }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (PinChangeError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(PinChangeError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    public func executeAsync() async throws(PinChangeError) {
        let fields = state.value
        guard let username = fields.username, !username.isEmpty else { throw .Unknown(cause: SDKMessage("username is required")) }
        guard let changer = fields.changer else { throw .Unknown(cause: SDKMessage("a pinChanger is required")) }
        let interaction = core.interaction
        let policy = await interaction.read { changer.pinPolicy() }
        do {
            try await CredentialChanger(core: core, factor: .pin, username: username).run(
                ask: { state, lastError throws(OperationError) in
                    let context = PinChangeContextValue(
                        username: username, authenticatorProtectionStatus: PinAuthenticatorProtectionStatus(state),
                        lastRecoverableError: lastError.map(PinChangeRecoverableError.init))
                    return try await interaction.ask(extraTime: TimeInterval(state.remainingCoolDown)) { gate in
                        changer.changePin(context: context, handler: SecretPairHandler(gate: gate))
                    }
                },
                validateNew: { pin async throws(OperationError) in policy.violation(pin) })
        } catch {
            throw PinChangeError(error)
        }
    }
}

/// Changes the password of a registered password authenticator (seed 002, "Change password").
public final class PasswordChange: Operation {
    struct Fields: Sendable {
        var username: Username?
        var changer: (any PasswordChanger)?
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (PasswordChangeError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func username(_ username: Username) -> Self {
        state.update { $0.username = username }
        return self
    }
    @discardableResult public func passwordChanger(_ changer: any PasswordChanger) -> Self {
        state.update { $0.changer = changer }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (PasswordChangeError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(PasswordChangeError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    public func executeAsync() async throws(PasswordChangeError) {
        let fields = state.value
        guard let username = fields.username, !username.isEmpty else { throw .Unknown(cause: SDKMessage("username is required")) }
        guard let changer = fields.changer else { throw .Unknown(cause: SDKMessage("a passwordChanger is required")) }
        let interaction = core.interaction
        let policy = await interaction.read { changer.passwordPolicy() }
        do {
            try await CredentialChanger(core: core, factor: .password, username: username).run(
                ask: { state, lastError throws(OperationError) in
                    let context = PasswordChangeContextValue(
                        username: username, authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus(state),
                        lastRecoverableError: lastError.map(PasswordChangeRecoverableError.init))
                    return try await interaction.ask(extraTime: TimeInterval(state.remainingCoolDown)) { gate in
                        changer.changePassword(context: context, handler: SecretPairHandler(gate: gate))
                    }
                },
                validateNew: { password async throws(OperationError) in
                    if let problem = PasswordRules.violation(password) { return problem }
                    let verdict: PasswordChangeValidationError? = try await interaction.ask { gate in
                        policy.validatePasswordForPasswordChange(
                            password, onSuccess: { gate.resolve(.answered(nil)) },
                            onError: { gate.resolve(.answered($0)) })
                    }
                    return verdict?.message
                })
        } catch {
            throw PasswordChangeError(error)
        }
    }
}

/// A recoverable problem of a change attempt, before it takes the factor's public error type.
enum ChangeProblem: Sendable, Equatable {
    case wrongOldSecret(String)
    case invalidNewSecret(String)
    case sameSecret(String)
}

/// Why a change failed for good.
enum ChangeFailure: Error {
    case locked
    case notEnrolled
    case operation(OperationError)
}

/// The change loop shared by PIN and password (seed 002): ask for the old and new secret; a new secret that breaks
/// the policy, equals the old one, or an old one that is wrong (while not locked) is a recoverable error and the
/// changer is asked again; during a cool-down the values are ignored and the changer is asked again without using
/// up a retry; at the lockout the operation fails.
struct CredentialChanger {
    let core: ClientCore
    let factor: KnowledgeVerifierStore.Factor
    let username: Username

    func run(
        ask: (ProtectionState, ChangeProblem?) async throws(OperationError) -> SecretPair,
        validateNew: (String) async throws(OperationError) -> String?
    ) async throws(ChangeFailure) {
        do { try core.checkIntegrity() } catch { throw .operation(error) }
        let store = core.knowledgeStore(factor)
        let noun = factor == .pin ? "PIN" : "password"
        var lastProblem: ChangeProblem?
        while true {
            let enrolled: ProtectionState?
            do { enrolled = try await store.state(username: username, now: core.platform.now()) } catch { throw .operation(.Unknown(cause: error)) }
            guard let state = enrolled else { throw .notEnrolled }
            if state == .lockedOut { throw .locked }
            let pair: SecretPair
            do { pair = try await ask(state, lastProblem) } catch { throw .operation(error) }
            do { try core.checkIntegrity() } catch { throw .operation(error) }
            // The new value is checked first: a malformed one costs no attempt of the old.
            do {
                if let problem = try await validateNew(pair.new) {
                    lastProblem = .invalidNewSecret(problem)
                    continue
                }
            } catch { throw .operation(error) }
            if pair.old == pair.new {
                lastProblem = .sameSecret("The new \(noun) must differ from the current one.")
                continue
            }
            let outcome: KnowledgeVerifierStore.Outcome
            do { outcome = try await store.verify(username: username, secret: pair.old, now: core.platform.now()) } catch {
                throw .operation(.Unknown(cause: error))
            }
            switch outcome {
            case .coolingDown:
                // Ignored (seed 002): asked again with the same status and the same last error.
                continue
            case .rejected:
                lastProblem = .wrongOldSecret("The current \(noun) is wrong.")
                continue
            case .lockedOut: throw .locked
            case .notEnrolled: throw .notEnrolled
            case .verified:
                do {
                    var changes = StateChanges()
                    try changes.set(try KnowledgeVerifierStore.record(for: pair.new), store.entry(username))
                    try await core.commit(changes) { _ in }
                } catch { throw .operation(.Unknown(cause: error)) }
                return
            }
        }
    }
}
