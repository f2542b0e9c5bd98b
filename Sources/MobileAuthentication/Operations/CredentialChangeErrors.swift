import Foundation

/// Errors of ``PinChange``.
public enum PinChangeError: MobileAuthenticationClientError {
    case DeviceProtectionError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    /// Too many wrong PINs: the PIN authenticator is locked for good (delete it and register again).
    case PinLocked(cause: (any Error)?)
    /// The user has no PIN authenticator on this device.
    case PinNotEnrolled(cause: (any Error)?)
    case UserCanceled(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NoDeviceLockError: return noDeviceLockDescription
        case .PinLocked: return "The PIN is locked after too many failed attempts."
        case .PinNotEnrolled: return "No PIN is enrolled for this user."
        case .UserCanceled: return "The user cancelled the PIN change."
        case .Unknown(let cause): return "The PIN could not be changed\(cause.map { ": \($0)" } ?? "")."
        }
    }

    init(_ failure: ChangeFailure) {
        switch failure {
        case .locked: self = .PinLocked(cause: nil)
        case .notEnrolled: self = .PinNotEnrolled(cause: nil)
        case .operation(let error):
            switch error {
            case .DeviceProtectionError(let cause): self = .DeviceProtectionError(cause: cause)
            case .NoDeviceLockError(let cause): self = .NoDeviceLockError(cause: cause)
            case .FidoError(.userCanceled, let cause): self = .UserCanceled(cause: cause)
            default: self = .Unknown(cause: error)
            }
        }
    }
}

/// Errors of ``PasswordChange``.
public enum PasswordChangeError: MobileAuthenticationClientError {
    case DeviceProtectionError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    case PasswordLocked(cause: (any Error)?)
    case PasswordNotEnrolled(cause: (any Error)?)
    case UserCanceled(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NoDeviceLockError: return noDeviceLockDescription
        case .PasswordLocked: return "The password is locked after too many failed attempts."
        case .PasswordNotEnrolled: return "No password is enrolled for this user."
        case .UserCanceled: return "The user cancelled the password change."
        case .Unknown(let cause): return "The password could not be changed\(cause.map { ": \($0)" } ?? "")."
        }
    }

    init(_ failure: ChangeFailure) {
        switch PinChangeError(failure) {
        case .PinLocked(let cause): self = .PasswordLocked(cause: cause)
        case .PinNotEnrolled(let cause): self = .PasswordNotEnrolled(cause: cause)
        case .DeviceProtectionError(let cause): self = .DeviceProtectionError(cause: cause)
        case .NoDeviceLockError(let cause): self = .NoDeviceLockError(cause: cause)
        case .UserCanceled(let cause): self = .UserCanceled(cause: cause)
        case .Unknown(let cause): self = .Unknown(cause: cause)
        }
    }
}

extension PinChangeRecoverableError {
    init(_ problem: ChangeProblem) {
        switch problem {
        case .wrongOldSecret(let message): self = .InvalidPin(message: message)
        case .invalidNewSecret(let message): self = .InvalidPinFormat(message: message)
        case .sameSecret(let message): self = .OldPinEqualsNewPin(message: message)
        }
    }
}

extension PasswordChangeRecoverableError {
    init(_ problem: ChangeProblem) {
        switch problem {
        case .wrongOldSecret(let message): self = .InvalidPassword(message: message)
        case .invalidNewSecret(let message): self = .CustomValidationError(message: message)
        case .sameSecret(let message): self = .OldPasswordEqualsNewPassword(message: message)
        }
    }
}
