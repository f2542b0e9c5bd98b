import Foundation

/// Why an out-of-band payload could not be decoded (sdk-api.md (c)).
public enum OutOfBandPayloadError: MobileAuthenticationClientError {
    /// Encrypted, but it does not decrypt with this device's key: tampered, or for another device.
    case DecryptionError(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    /// Not an out-of-band payload in one of the documented forms.
    case MalformedPayload(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .DecryptionError: return "The code or message is not for this device, or it was altered."
        case .DeviceProtectionError: return "The device failed its integrity checks."
        case .MalformedPayload: return "The code or link is not a valid out-of-band payload."
        case .NoDeviceLockError: return "The device has no screen lock. Set a device passcode and try again."
        case .Unknown(let cause): return "The payload could not be read\(cause.map { ": \($0)" } ?? "")."
        }
    }
}

/// Why an out-of-band operation could not start (redeeming its token).
public enum OutOfBandOperationError: MobileAuthenticationClientError {
    case DeviceProtectionError(cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    /// The token was used already (or never existed): each code or message works once.
    case TokenAlreadyRedeemed(cause: (any Error)?)
    /// The token's time ran out before it was used.
    case TokenExpired(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .DeviceProtectionError: return "The device failed its integrity checks."
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return "The device has no screen lock. Set a device passcode and try again."
        case .TokenAlreadyRedeemed: return "This code was already used. Ask for a new one."
        case .TokenExpired: return "This code has expired. Ask for a new one."
        case .Unknown(let cause): return "The operation could not start\(cause.map { ": \($0)" } ?? "")."
        }
    }
}
