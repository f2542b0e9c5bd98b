import Foundation

/// The app's interaction objects for one operation.
package struct InteractionObjects: Sendable {
    package var accountSelector: (any AccountSelector)?
    package var authenticatorSelector: (any AuthenticatorSelector)?
    package var pinEnroller: (any PinEnroller)?
    package var pinUserVerifier: (any PinUserVerifier)?
    package var passwordEnroller: (any PasswordEnroller)?
    package var passwordUserVerifier: (any PasswordUserVerifier)?
    package var biometricUserVerifier: (any BiometricUserVerifier)?
    package var devicePasscodeUserVerifier: (any DevicePasscodeUserVerifier)?
    package var fingerprintUserVerifier: (any FingerprintUserVerifier)?
    package init() {}
}

/// Asks the app and waits: for its handler's answer, its `cancel()`, the user-interaction timeout, or the
/// cancellation of the task running the operation.
package struct Interaction: Sendable {
    let timeout: TimeInterval
    let callbacks: CallbackQueue

    package init(timeout: TimeInterval, callbacks: CallbackQueue = CallbackQueue(nil)) {
        self.timeout = timeout
        self.callbacks = callbacks
    }

    /// Tells the app something that needs no answer (`onValidCredentialsProvided()`), on the callback queue.
    package func tell(_ body: @escaping @Sendable () -> Void) { callbacks.run(body) }

    /// Reads a value from the app's object (a policy) on the callback queue, where every call into the app is made:
    /// a `@MainActor` type that adopts a protocol with `@preconcurrency` is checked at run time to be on the main
    /// actor, even for a getter.
    package func read<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        guard callbacks.queue != nil else { return body() }
        return await withCheckedContinuation { continuation in callbacks.run { continuation.resume(returning: body()) } }
    }

    /// Hands a handler to the app through `ask`, on the callback queue, and waits. `extraTime` extends the timeout,
    /// for a prompt shown during a cool-down (seed 000: the user must be able to wait it out without the operation
    /// timing out).
    package func ask<T: Sendable>(
        extraTime: TimeInterval = 0, _ ask: @escaping @Sendable (InteractionGate<T>) -> Void
    ) async throws(OperationError) -> T {
        let gate = InteractionGate<T>()
        switch await gate.wait(
            timeout: timeout + max(extraTime, 0),
            ask: {
                // A question that ended (timed out, cancelled) while it waited for the queue is not shown any more.
                callbacks.run { if !gate.isResolved { ask(gate) } }
            })
        {
        case .answered(let value): return value
        case .cancelled: throw OperationError.FidoError(errorCode: .userCanceled, cause: nil)
        case .timedOut: throw OperationError.FidoError(errorCode: .userNotResponsive, cause: nil)
        }
    }
}
