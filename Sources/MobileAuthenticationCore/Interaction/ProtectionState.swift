import Foundation

/// The protection state of a PIN or password authenticator, before it is shown as the public status type of its
/// authenticator (``PinAuthenticatorProtectionStatus`` or ``PasswordAuthenticatorProtectionStatus``).
package enum ProtectionState: Equatable, Sendable {
    case unlocked
    case lastAttemptFailed(remainingTries: Int, coolDownTimeInSeconds: Int)
    case lockedOut

    /// Seconds the user must still wait before an attempt is checked.
    package var remainingCoolDown: Int {
        if case .lastAttemptFailed(_, let coolDown) = self { return coolDown }
        return 0
    }
}
