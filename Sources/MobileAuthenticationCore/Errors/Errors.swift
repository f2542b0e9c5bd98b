import Foundation

/// Every error the SDK reports conforms to this protocol.
public protocol MobileAuthenticationClientError: LocalizedError, Sendable {
    /// The FIDO error code behind the error, whatever its type: its `FidoError` case, or the operation error it
    /// wraps. Nil when there is none.
    var fidoErrorCode: FidoErrorCode? { get }
    /// The failed HTTP request behind an error the server's answer (or its absence) decided: a `NetworkError`, a
    /// `ClockSkewTooBig`, an `OperationNotSupportedByBackend`, a server's refusal carried by a `FidoError`: what
    /// was asked and what came back. Nil for errors decided on the device.
    var httpError: HttpError? { get }
}

extension MobileAuthenticationClientError {
    public var fidoErrorCode: FidoErrorCode? { nil }
    public var httpError: HttpError? { nil }
    /// The server of the failed request, if the error has one.
    public var server: Server? { httpError?.server }
}

/// The request a `NetworkError`'s cause carries.
package func carriedHttpError(_ cause: (any Error)?) -> HttpError? { (cause as? any HttpErrorCarrying)?.carriedHttpError }

/// The FIDO code a `NetworkError`'s cause knows (an untrusted server's).
package func carriedFidoErrorCode(_ cause: (any Error)?) -> FidoErrorCode? { (cause as? any FidoCodedCause)?.fidoErrorCode }

/// A UAF status code (or HTTP failure) returned by the server, carried as the `cause` of a FIDO error.
public struct ServerStatusError: Error, Sendable, Equatable, CustomStringConvertible, HttpErrorCarrying {
    /// UAF status code (uaf-spec §1.7) or 0 if the server gave none.
    public let statusCode: Int
    /// HTTP status of the exchange.
    public let httpStatus: Int
    public let message: String?
    /// The request and its answer.
    public let httpError: HttpError?
    public init(statusCode: Int, httpStatus: Int, message: String?, httpError: HttpError? = nil) {
        self.statusCode = statusCode
        self.httpStatus = httpStatus
        self.message = message
        self.httpError = httpError
    }
    public var description: String {
        // No UAF status (a refusal of the FIDO2 API, an HTTP error): the HTTP status alone, not "answered 0".
        let status = statusCode == 0 ? "HTTP \(httpStatus)" : "\(statusCode) (HTTP \(httpStatus))"
        return "server answered \(status)\(message.map { ": \($0)" } ?? "")"
    }
    package var carriedHttpError: HttpError? { httpError }
    /// Equal statuses and messages; the captured request is diagnostics, not identity.
    public static func == (a: ServerStatusError, b: ServerStatusError) -> Bool {
        a.statusCode == b.statusCode && a.httpStatus == b.httpStatus && a.message == b.message
    }
}

/// The SDK's storage could not be unlocked on this device, so it was set aside and the next initialization starts
/// with empty storage. It happens after a backup of another device is restored onto this one: the storage's key
/// secret is a `…ThisDeviceOnly` Keychain item, which no backup carries, and the authenticator keys stayed on the
/// other device too, so nothing in the old storage could be used here. (A reset Keychain does the same.)
///
/// ``InitializationError/Unknown(cause:)`` carries it once, as its `cause`; show ``description`` and initialize
/// again, then let the user register this device:
/// ```swift
/// if case .Unknown(let cause as StorageResetError) = error { show(cause.description); initializeAgain() }
/// ```
/// The Nevis SDK's iOS `InitializationError` has no case of its own for it, so its three cases stay as they are.
public struct StorageResetError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The set-aside file (`….mauthstore.unreadable`, one copy kept, replaced by a later reset).
    public let setAsidePath: String
    package init(setAsidePath: String) { self.setAsidePath = setAsidePath }
    public var description: String {
        "This app's sign-in data came from another device (a restored backup) and cannot be used on this one. It was cleared: register this device again."
    }
}

/// Errors of the client initializer.
public enum InitializationError: MobileAuthenticationClientError {
    /// The device's integrity checks failed (debugger attached, tampering).
    case DeviceProtectionError(cause: (any Error)?)
    /// The device has no screen lock; the user can fix this by setting one.
    case NoDeviceLockError(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .DeviceProtectionError(let cause): return "The device failed its integrity checks\(cause.map { ": \($0)" } ?? "")."
        case .NoDeviceLockError: return noDeviceLockDescription
        case .Unknown(let cause): return "The client could not be initialized\(cause.map { ": \($0)" } ?? "")."
        }
    }
}

/// Errors of registration, deregistration and out-of-band operations.
public enum OperationError: MobileAuthenticationClientError {
    case FidoError(errorCode: FidoErrorCode, cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    case UserAlreadyRegisteredInAnotherServer(cause: (any Error)?)
    case UserNotRegisteredInServer(cause: (any Error)?)
    /// The device clock differs too much from the server's for a device-signed request: a deregistration with a
    /// `JwsAuthorizationProvider` refused (401) by a server whose `Date` is more than 300 s away.
    case ClockSkewTooBig(cause: (any Error)?)
    /// The server has no endpoint for the operation (404 or 405 without a UAF answer): an older backend, or one that
    /// does not offer it.
    case OperationNotSupportedByBackend(cause: (any Error)?)
    /// The app could not prove it is genuine: App Attest failed on the device, or the server's policy requires an
    /// attestation it did not get (UAF status 1497; the cause is the server's answer). See ``AppAttestation``.
    case AppAttestationError(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .FidoError(let code, let cause): return code.errorDescription + (cause.map { " (\($0))" } ?? "")
        case .ClockSkewTooBig: return deviceClockDescription
        case .OperationNotSupportedByBackend: return "The server does not support this operation."
        case .AppAttestationError(let cause): return "The app could not prove its integrity\(cause.map { ": \($0)" } ?? "")."
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NoDeviceLockError: return noDeviceLockDescription
        case .UserAlreadyRegisteredInAnotherServer: return "The user is already registered with another server on this device."
        case .UserNotRegisteredInServer: return "The user is not registered with this server."
        case .Unknown(let cause): return "The operation failed\(cause.map { ": \($0)" } ?? "")."
        }
    }

    /// The FIDO error code, if this is a FIDO error.
    public var fidoErrorCode: FidoErrorCode? {
        if case .FidoError(let code, _) = self { return code }
        return nil
    }

    public var httpError: HttpError? { carriedHttpError(cause) }

    /// The underlying error of any case.
    public var cause: (any Error)? {
        switch self {
        case .FidoError(_, let cause), .NetworkError(let cause), .DeviceProtectionError(let cause), .NoDeviceLockError(let cause),
            .UserAlreadyRegisteredInAnotherServer(let cause), .UserNotRegisteredInServer(let cause), .ClockSkewTooBig(let cause),
            .OperationNotSupportedByBackend(let cause), .AppAttestationError(let cause), .Unknown(let cause):
            return cause
        }
    }
}

/// Errors of in-band authentication. Note the arities: `FidoError` has three values, `NetworkError` two.
public enum AuthenticationError: MobileAuthenticationClientError {
    case FidoError(errorCode: FidoErrorCode, cause: (any Error)?, sessionProvider: (any SessionProvider)?)
    case NetworkError(cause: (any Error)?, sessionProvider: (any SessionProvider)?)
    case NoDeviceLockError(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    /// The app could not prove it is genuine (see ``OperationError/AppAttestationError(cause:)``).
    case AppAttestationError(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .FidoError(let code, let cause, _): return code.errorDescription + (cause.map { " (\($0))" } ?? "")
        case .AppAttestationError(let cause): return "The app could not prove its integrity\(cause.map { ": \($0)" } ?? "")."
        case .NetworkError(let cause, _): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .DeviceProtectionError: return deviceProtectionDescription
        case .Unknown(let cause): return "The authentication failed\(cause.map { ": \($0)" } ?? "")."
        }
    }

    public var fidoErrorCode: FidoErrorCode? {
        if case .FidoError(let code, _, _) = self { return code }
        return nil
    }

    public var httpError: HttpError? {
        switch self {
        case .NetworkError(let cause, _), .FidoError(_, let cause, _): carriedHttpError(cause)
        default: nil
        }
    }

    package init(_ error: OperationError, sessionProvider: (any SessionProvider)? = nil) {
        switch error {
        case .FidoError(let code, let cause): self = .FidoError(errorCode: code, cause: cause, sessionProvider: sessionProvider)
        case .NetworkError(let cause): self = .NetworkError(cause: cause, sessionProvider: sessionProvider)
        case .NoDeviceLockError(let cause): self = .NoDeviceLockError(cause: cause)
        case .DeviceProtectionError(let cause): self = .DeviceProtectionError(cause: cause)
        case .AppAttestationError(let cause): self = .AppAttestationError(cause: cause)
        case .UserAlreadyRegisteredInAnotherServer(let cause), .UserNotRegisteredInServer(let cause), .Unknown(let cause):
            self = .Unknown(cause: cause ?? error)
        case .ClockSkewTooBig, .OperationNotSupportedByBackend:
            // Authentication has no such case: the whole error is the cause, so the app can still tell it.
            self = .Unknown(cause: error)
        }
    }
}

/// Recoverable errors during PIN enrollment: the SDK asks the enroller again with this error in the context.
public enum PinEnrollmentError: MobileAuthenticationClientError, Equatable {
    /// The PIN does not satisfy the ``PinPolicy`` (length or non-digits).
    case InvalidPinFormat(message: String)
    /// The app's own validation rejected it.
    case CustomValidationError(message: String)

    public var errorDescription: String? {
        switch self {
        case .InvalidPinFormat(let message), .CustomValidationError(let message): return message
        }
    }
}

/// Removed from the verification context in 4.0 (the protection status tells a wrong PIN); kept for source compatibility.
public enum PinUserVerificationError: MobileAuthenticationClientError, Equatable {
    case InvalidPin(message: String)
    public var errorDescription: String? {
        if case .InvalidPin(let message) = self { return message }
        return nil
    }
}

/// Thrown by `LocalData/deleteAuthenticator(username:aaid:)`.
public enum DeleteAuthenticatorError: MobileAuthenticationClientError {
    case InvalidAaid(aaid: String)
    case Unknown(cause: (any Error)?)
    public var errorDescription: String? {
        switch self {
        case .InvalidAaid(let aaid): return "\"\(aaid)\" is not an authenticator of this SDK."
        case .Unknown(let cause): return "The authenticator could not be deleted\(cause.map { ": \($0)" } ?? "")."
        }
    }
}

/// A network error's text: a refusal of the request's authorization (HTTP 401/403) is not a connection problem.
/// The descriptions every error type with these cases shares.
package let deviceProtectionDescription = "The device failed its integrity checks."
package let noDeviceLockDescription = "The device has no screen lock. Set a device passcode and try again."
package let deviceClockDescription = "The device clock differs too much from the server's. Correct the date and time and try again."

/// A cause that knows its FIDO code (the Device Service's failures): an untrusted server reads as one everywhere.
package protocol FidoCodedCause: Error {
    var fidoErrorCode: FidoErrorCode? { get }
}

package func networkErrorDescription(_ cause: (any Error)?) -> String {
    if let code = carriedFidoErrorCode(cause), let cause { return code.errorDescription + " (\(cause))" }
    if let limited = cause as? RateLimitError {
        return "The server is busy with too many requests" + (limited.retryAfterSeconds.map { ": try again in \($0) s." } ?? ": try again later.")
    }
    if let status = cause as? ServerStatusError, status.httpStatus == 401 || status.httpStatus == 403 {
        return "The server refused the request's authorization (HTTP \(status.httpStatus))\(status.message.map { ": \($0)" } ?? "")."
    }
    return "The server could not be reached\(cause.map { ": \($0)" } ?? ""). Check the connection and try again."
}

/// A plain message used as an error cause.
public struct SDKMessage: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
