import Foundation

/// The app's interaction objects for one operation.
struct InteractionObjects: Sendable {
    var accountSelector: (any AccountSelector)?
    var authenticatorSelector: (any AuthenticatorSelector)?
    var pinEnroller: (any PinEnroller)?
    var pinUserVerifier: (any PinUserVerifier)?
    var passwordEnroller: (any PasswordEnroller)?
    var passwordUserVerifier: (any PasswordUserVerifier)?
    var biometricUserVerifier: (any BiometricUserVerifier)?
    var devicePasscodeUserVerifier: (any DevicePasscodeUserVerifier)?
    var fingerprintUserVerifier: (any FingerprintUserVerifier)?
}

/// Asks the app and waits: for its handler's answer, its `cancel()`, the user-interaction timeout, or the
/// cancellation of the task running the operation.
struct Interaction: Sendable {
    let timeout: TimeInterval

    /// Hands a handler to the app through `ask` and waits. `extraTime` extends the timeout, for a prompt shown
    /// during a cool-down (seed 000: the user must be able to wait it out without the operation timing out).
    func ask<T: Sendable>(extraTime: TimeInterval = 0, _ ask: (InteractionGate<T>) -> Void) async throws(OperationError) -> T {
        let gate = InteractionGate<T>()
        switch await gate.wait(timeout: timeout + max(extraTime, 0), ask: { ask(gate) }) {
        case .answered(let value): return value
        case .cancelled: throw OperationError.FidoError(errorCode: .userCanceled, cause: nil)
        case .timedOut: throw OperationError.FidoError(errorCode: .userNotResponsive, cause: nil)
        }
    }
}
