import Foundation

/// Protection state of the password authenticator (same cool-down table and lockout as the PIN).
public enum PasswordAuthenticatorProtectionStatus: Equatable, Encodable, Sendable, CustomStringConvertible {
    case Unlocked
    /// The last attempt failed; `coolDownTimeInSeconds` must pass before the next one (0: none).
    case LastAttemptFailed(remainingTries: Int, coolDownTimeInSeconds: Int)
    case LockedOut

    package init(_ state: ProtectionState) {
        switch state {
        case .unlocked: self = .Unlocked
        case .lastAttemptFailed(let remaining, let coolDown): self = .LastAttemptFailed(remainingTries: remaining, coolDownTimeInSeconds: coolDown)
        case .lockedOut: self = .LockedOut
        }
    }

    public var description: String { PinAuthenticatorProtectionStatus(state).description }

    /// The state this status shows.
    package var state: ProtectionState {
        switch self {
        case .Unlocked: return .unlocked
        case .LastAttemptFailed(let remaining, let coolDown): return .lastAttemptFailed(remainingTries: remaining, coolDownTimeInSeconds: coolDown)
        case .LockedOut: return .lockedOut
        }
    }
}

/// The app's password rules (required: only the app knows what a weak password is for its users). Call exactly
/// one of the callbacks; the SDK waits for it within the user-interaction timeout.
public protocol PasswordPolicy: Sendable {
    func validatePasswordForEnrollment(
        _ password: String, onSuccess: @escaping @Sendable () -> Void,
        onError: @escaping @Sendable (PasswordEnrollmentValidationError) -> Void)
    func validatePasswordForPasswordChange(
        _ password: String, onSuccess: @escaping @Sendable () -> Void,
        onError: @escaping @Sendable (PasswordChangeValidationError) -> Void)
}

public protocol PasswordEnrollmentContext: Sendable {
    var username: Username { get }
    var lastRecoverableError: PasswordEnrollmentError? { get }
}

public protocol PasswordEnrollmentHandler: Sendable {
    func password(_ password: String)
    func cancel()
}

/// Implemented by the app: asks the user for a new password.
public protocol PasswordEnroller: ValidCredentialsObserver {
    func enrollPassword(context: any PasswordEnrollmentContext, handler: any PasswordEnrollmentHandler)
    func passwordPolicy() -> any PasswordPolicy
}

public protocol PasswordUserVerificationContext: Sendable {
    var authenticator: any Authenticator { get }
    var authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus { get }
}

public protocol PasswordUserVerificationHandler: Sendable {
    func verify(_ password: String)
    func cancel()
}

/// Implemented by the app: asks the user for their password. Called again after a wrong one, with the new status.
public protocol PasswordUserVerifier: ValidCredentialsObserver {
    func verifyPassword(context: any PasswordUserVerificationContext, handler: any PasswordUserVerificationHandler)
}

public protocol PasswordChangeContext: Sendable {
    var username: Username { get }
    var authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus { get }
    var lastRecoverableError: PasswordChangeRecoverableError? { get }
}

public protocol PasswordChangeHandler: Sendable {
    func passwords(_ oldPassword: String, _ newPassword: String)
    func cancel()
}

/// Implemented by the app: asks the user for the current and a new password (seed 002, "Change password").
public protocol PasswordChanger: Sendable {
    func changePassword(context: any PasswordChangeContext, handler: any PasswordChangeHandler)
    func passwordPolicy() -> any PasswordPolicy
}

struct PasswordEnrollmentContextValue: PasswordEnrollmentContext {
    let username: Username
    let lastRecoverableError: PasswordEnrollmentError?
}

struct PasswordVerificationContextValue: PasswordUserVerificationContext {
    let authenticator: any Authenticator
    let authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus
}

package struct PasswordChangeContextValue: PasswordChangeContext {
    package let username: Username
    package let authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus
    package let lastRecoverableError: PasswordChangeRecoverableError?

    package init(
        username: Username, authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus,
        lastRecoverableError: PasswordChangeRecoverableError?
    ) {
        self.username = username
        self.authenticatorProtectionStatus = authenticatorProtectionStatus
        self.lastRecoverableError = lastRecoverableError
    }
}
