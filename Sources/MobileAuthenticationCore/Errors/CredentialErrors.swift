import Foundation

/// Recoverable errors of a PIN change: the SDK asks the changer again with this error in the context.
public enum PinChangeRecoverableError: MobileAuthenticationClientError, Equatable {
    /// The current PIN is wrong (the protection status tells the tries left and the cool-down).
    case InvalidPin(message: String)
    /// The new PIN breaks the ``PinPolicy``.
    case InvalidPinFormat(message: String)
    case OldPinEqualsNewPin(message: String)
    case CustomValidationError(message: String)

    public var errorDescription: String? {
        switch self {
        case .InvalidPin(let message), .InvalidPinFormat(let message), .OldPinEqualsNewPin(let message), .CustomValidationError(let message):
            return message
        }
    }
}

/// Recoverable errors of a password change.
public enum PasswordChangeRecoverableError: MobileAuthenticationClientError, Equatable {
    case InvalidPassword(message: String)
    /// The app's ``PasswordPolicy`` (or the SDK's floor) rejected the new password.
    case CustomValidationError(message: String)
    case OldPasswordEqualsNewPassword(message: String)

    public var errorDescription: String? {
        switch self {
        case .InvalidPassword(let message), .CustomValidationError(let message), .OldPasswordEqualsNewPassword(let message): return message
        }
    }
}

/// Recoverable errors during password enrollment: the enroller is asked again with this error in the context.
public enum PasswordEnrollmentError: MobileAuthenticationClientError, Equatable {
    case CustomValidationError(message: String)
    public var errorDescription: String? {
        if case .CustomValidationError(let message) = self { return message }
        return nil
    }
}

/// The app's ``PasswordPolicy`` verdict on a password to enroll.
public enum PasswordEnrollmentValidationError: MobileAuthenticationClientError {
    case InvalidPassword(message: String, cause: (any Error)?)
    public var message: String {
        if case .InvalidPassword(let message, _) = self { return message }
        return ""
    }
    public var errorDescription: String? { message }
}

/// The app's ``PasswordPolicy`` verdict on a new password during a change.
public enum PasswordChangeValidationError: MobileAuthenticationClientError {
    case InvalidPassword(message: String, cause: (any Error)?)
    public var message: String {
        if case .InvalidPassword(let message, _) = self { return message }
        return ""
    }
    public var errorDescription: String? { message }
}
