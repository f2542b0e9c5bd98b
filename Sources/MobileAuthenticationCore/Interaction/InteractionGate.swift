import Foundation

/// Why waiting for the app ended without an answer.
package enum InteractionOutcome<Value: Sendable>: Sendable {
    case answered(Value)
    case cancelled
    case timedOut
}

/// One pending question to the app: resolved exactly once, by the app's handler, by `cancel()`, or by the
/// user-interaction timeout (which fails the operation with `userNotResponsive`). Later calls are ignored, so a
/// handler called twice, or after a timeout, cannot corrupt the operation.
package final class InteractionGate<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<InteractionOutcome<Value>, Never>?
    private var result: InteractionOutcome<Value>?

    /// Whether the question has its outcome (an answer, a cancel or the timeout).
    package var isResolved: Bool { lock.withLock { result != nil } }

    package func resolve(_ outcome: InteractionOutcome<Value>) {
        lock.lock()
        guard result == nil else {
            lock.unlock()
            return
        }
        result = outcome
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(returning: outcome)
    }

    /// Asks (by running `ask`, which hands a handler to the app) and waits for the answer, the timeout, or the
    /// cancellation of the awaiting task (which ends the pending prompt at once, as the handler's `cancel()` does).
    /// The timeout timer starts only if the app did not answer while being asked (scripted devices answer at once).
    func wait(timeout: TimeInterval, ask: () -> Void) async -> InteractionOutcome<Value> {
        let timer = TimerSlot()
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                lock.lock()
                if let result {
                    lock.unlock()
                    continuation.resume(returning: result)
                    return
                }
                self.continuation = continuation
                lock.unlock()
                ask()
                if lock.withLock({ result == nil }) {
                    timer.set(
                        Task { [weak self] in
                            try await Task.sleep(nanoseconds: UInt64(max(timeout, 0) * 1_000_000_000))
                            self?.resolve(.timedOut)
                        })
                }
            }
        } onCancel: {
            self.resolve(.cancelled)
        }
    }
}

/// The timeout task of one wait, cancelled when the wait ends.
private final class TimerSlot: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, any Error>?
    private var cancelled = false

    func set(_ task: Task<Void, any Error>) {
        let cancelNow = lock.withLock { () -> Bool in
            self.task = task
            return cancelled
        }
        if cancelNow { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock { () -> Task<Void, any Error>? in
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}

/// The handler the SDK hands the app for a question answered with text (an AAID, a username, a PIN or a
/// password): every answer method resolves the pending question, `cancel()` cancels it.
struct TextAnswerHandler: AuthenticatorSelectionHandler, AccountSelectionHandler, PinEnrollmentHandler, PinUserVerificationHandler,
    PasswordEnrollmentHandler, PasswordUserVerificationHandler, UserVerificationHandler
{
    let gate: InteractionGate<String>
    func aaid(_ aaid: String) { gate.resolve(.answered(aaid)) }
    func username(_ username: Username) { gate.resolve(.answered(username)) }
    func pin(_ pin: String) { gate.resolve(.answered(pin)) }
    func password(_ password: String) { gate.resolve(.answered(password)) }
    func verify(_ secret: String) { gate.resolve(.answered(secret)) }
    func cancel() { gate.resolve(.cancelled) }
}

/// The handler of a PIN or password change: the old and the new secret.
package struct SecretPairHandler: PinChangeHandler, PasswordChangeHandler {
    let gate: InteractionGate<SecretPair>
    package init(gate: InteractionGate<SecretPair>) { self.gate = gate }
    package func pins(_ oldPin: String, _ newPin: String) { gate.resolve(.answered(SecretPair(old: oldPin, new: newPin))) }
    package func passwords(_ oldPassword: String, _ newPassword: String) { gate.resolve(.answered(SecretPair(old: oldPassword, new: newPassword))) }
    package func cancel() { gate.resolve(.cancelled) }
}

/// The handler of an OS-verified authenticator: the app starts the OS prompt (with its texts, or the
/// authenticator's `defaultPrompt`) or cancels.
struct OSPromptHandler: BiometricUserVerificationHandler, DevicePasscodeUserVerificationHandler, FingerprintUserVerificationHandler,
    UserVerificationHandler
{
    let gate: InteractionGate<OSPromptRequest>
    let defaultPrompt: OSPromptRequest
    func verify(using options: BiometricPromptOptions) {
        gate.resolve(
            .answered(
                OSPromptRequest(
                    reason: options.reason, fallbackButtonTitle: options.fallbackButtonTitle, cancelButtonTitle: options.cancelButtonTitle)))
    }
    func verify(using options: DevicePasscodePromptOptions) {
        gate.resolve(.answered(OSPromptRequest(reason: options.reason, fallbackButtonTitle: nil, cancelButtonTitle: nil)))
    }
    func verify() { gate.resolve(.answered(defaultPrompt)) }
    func listenForOsCredentials() { gate.resolve(.answered(defaultPrompt)) }
    func cancel() { gate.resolve(.cancelled) }
}
