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
        case .DeviceProtectionError: return deviceProtectionDescription
        case .MalformedPayload: return "The code or link is not a valid out-of-band payload."
        case .NoDeviceLockError: return noDeviceLockDescription
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
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .TokenAlreadyRedeemed: return "This code was already used. Ask for a new one."
        case .TokenExpired: return "This code has expired. Ask for a new one."
        case .Unknown(let cause): return "The operation could not start\(cause.map { ": \($0)" } ?? "")."
        }
    }

    /// The FIDO code of the operation error an `Unknown` wraps (an untrusted server is `insecureTransport`).
    public var fidoErrorCode: FidoErrorCode? {
        if case .Unknown(let cause) = self { return (cause as? OperationError)?.fidoErrorCode }
        return nil
    }

    public var httpError: HttpError? { if case .NetworkError(let cause) = self { carriedHttpError(cause) } else { nil } }
}

/// The errors of the operations that talk to the Device Service. The failures every one of them meets alike (a
/// clock too far off, no network or an untrusted server, a server that limits requests) become the same cases here,
/// once; each error decides what a refusal, a name taken or a server without a Device Service means for its operation.
protocol DeviceServiceOperationError: MobileAuthenticationClientError {
    static func ClockSkewTooBig(cause: (any Error)?) -> Self
    static func NetworkError(cause: (any Error)?) -> Self
}

extension DeviceServiceOperationError {
    /// The case of a failure every Device Service operation meets alike, or nil for one the operation decides.
    static func common(_ failure: DeviceServiceFailure) -> Self? {
        switch failure.kind {
        case .clockSkew: .ClockSkewTooBig(cause: failure)
        case .network, .insecure: .NetworkError(cause: failure)
        case .rateLimited(let limit): .NetworkError(cause: limit)
        case .refused, .notSupported, .nameTaken, .noDispatchTarget, .other: nil
        }
    }
}

/// Why the pending out-of-band operations of one server could not be fetched.
public enum PendingOutOfBandOperationsError: MobileAuthenticationClientError, DeviceServiceOperationError {
    case ClockSkewTooBig(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    case OperationNotSupportedByBackend(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    init(_ failure: DeviceServiceFailure) {
        self =
            Self.common(failure)
            ?? (failure.kind == .notSupported ? .OperationNotSupportedByBackend(cause: failure) : .Unknown(cause: failure))
    }

    public var errorDescription: String? {
        switch self {
        case .ClockSkewTooBig: return deviceClockDescription
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .OperationNotSupportedByBackend: return "The server does not support fetching pending operations."
        case .Unknown(let cause): return "The pending operations could not be fetched\(cause.map { ": \($0)" } ?? "")."
        }
    }

    /// `insecureTransport` when the server's TLS was not trusted (a ``DeviceServiceFailure`` of that kind).
    public var fidoErrorCode: FidoErrorCode? { if case .NetworkError(let cause) = self { carriedFidoErrorCode(cause) } else { nil } }

    public var httpError: HttpError? {
        switch self {
        case .NetworkError(let cause), .ClockSkewTooBig(let cause), .OperationNotSupportedByBackend(let cause): carriedHttpError(cause)
        default: nil
        }
    }
}

/// Why the device information could not be changed.
public enum DeviceInformationChangeError: MobileAuthenticationClientError, DeviceServiceOperationError {
    case ClockSkewTooBig(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    /// Another device of one of the users already has this name.
    case NameAlreadyExists(cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    /// The device has no device information (no registration yet), or a server does not know it.
    case NotFound(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    init(_ failure: DeviceServiceFailure) {
        self =
            Self.common(failure)
            ?? {
                switch failure.kind {
                case .nameTaken: .NameAlreadyExists(cause: failure)
                case .refused, .noDispatchTarget, .notSupported: .NotFound(cause: failure)
                default: .Unknown(cause: failure)
                }
            }()
    }

    public var errorDescription: String? {
        switch self {
        case .ClockSkewTooBig: return deviceClockDescription
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NameAlreadyExists: return "Another device already has this name. Choose another name."
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .NotFound: return "The server does not know this device."
        case .Unknown(let cause): return "The device information could not be changed\(cause.map { ": \($0)" } ?? "")."
        }
    }

    /// `insecureTransport` when the server's TLS was not trusted (a ``DeviceServiceFailure`` of that kind).
    public var fidoErrorCode: FidoErrorCode? { if case .NetworkError(let cause) = self { carriedFidoErrorCode(cause) } else { nil } }

    public var httpError: HttpError? {
        switch self {
        case .NetworkError(let cause), .ClockSkewTooBig(let cause): carriedHttpError(cause)
        default: nil
        }
    }
}

/// Why one server's device information could not be checked.
public enum DeviceInformationCheckError: MobileAuthenticationClientError, DeviceServiceOperationError {
    case ClockSkewTooBig(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    /// The server refused the device's signature: it knows none of the device's dispatch targets.
    case Forbidden(cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    case OperationNotSupportedByBackend(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    init(_ failure: DeviceServiceFailure) {
        self =
            Self.common(failure)
            ?? {
                switch failure.kind {
                case .notSupported: .OperationNotSupportedByBackend(cause: failure)
                case .refused, .noDispatchTarget: .Forbidden(cause: failure)
                default: .Unknown(cause: failure)
                }
            }()
    }

    public var errorDescription: String? {
        switch self {
        case .ClockSkewTooBig: return deviceClockDescription
        case .DeviceProtectionError: return deviceProtectionDescription
        case .Forbidden: return "The server does not recognise this device."
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .OperationNotSupportedByBackend: return "The server does not support checking device information."
        case .Unknown(let cause): return "The device information could not be checked\(cause.map { ": \($0)" } ?? "")."
        }
    }

    /// `insecureTransport` when the server's TLS was not trusted (a ``DeviceServiceFailure`` of that kind).
    public var fidoErrorCode: FidoErrorCode? { if case .NetworkError(let cause) = self { carriedFidoErrorCode(cause) } else { nil } }

    public var httpError: HttpError? {
        switch self {
        case .NetworkError(let cause), .ClockSkewTooBig(let cause), .OperationNotSupportedByBackend(let cause): carriedHttpError(cause)
        default: nil
        }
    }
}

/// Why one mismatch could not be resolved.
public enum DeviceInformationSyncError: MobileAuthenticationClientError, DeviceServiceOperationError {
    case ClockSkewTooBig(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    case OperationNotSupportedByBackend(cause: (any Error)?)
    case Unknown(cause: (any Error)?)

    init(_ failure: DeviceServiceFailure) {
        self =
            Self.common(failure)
            ?? (failure.kind == .notSupported ? .OperationNotSupportedByBackend(cause: failure) : .Unknown(cause: failure))
    }

    public var errorDescription: String? {
        switch self {
        case .ClockSkewTooBig: return deviceClockDescription
        case .DeviceProtectionError: return deviceProtectionDescription
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .OperationNotSupportedByBackend: return "The server does not support synchronising device information."
        case .Unknown(let cause): return "A difference could not be resolved\(cause.map { ": \($0)" } ?? "")."
        }
    }

    /// `insecureTransport` when the server's TLS was not trusted (a ``DeviceServiceFailure`` of that kind).
    public var fidoErrorCode: FidoErrorCode? { if case .NetworkError(let cause) = self { carriedFidoErrorCode(cause) } else { nil } }

    public var httpError: HttpError? {
        switch self {
        case .NetworkError(let cause), .ClockSkewTooBig(let cause), .OperationNotSupportedByBackend(let cause): carriedHttpError(cause)
        default: nil
        }
    }
}

/// Why an Auth Cloud API registration failed (sdk-api.md (c)).
public enum AuthCloudApiError: MobileAuthenticationClientError {
    /// The enrollment was encrypted, but not to this device.
    case DecryptionError(cause: (any Error)?)
    case DeviceProtectionError(cause: (any Error)?)
    case FidoError(errorCode: FidoErrorCode, cause: (any Error)?)
    /// The enroll response or app link is not one (or is empty).
    case MalformedPayload(cause: (any Error)?)
    case NetworkError(cause: (any Error)?)
    case NoDeviceLockError(cause: (any Error)?)
    /// The enrollment was used already: each enroll response registers once.
    case TokenAlreadyRedeemed(cause: (any Error)?)
    /// The enrollment's time ran out before it was used.
    case TokenExpired(cause: (any Error)?)
    case Unknown(cause: (any Error)?)
    case UserAlreadyRegisteredInAnotherServer(cause: (any Error)?)

    public var errorDescription: String? {
        switch self {
        case .DecryptionError: return "The enrollment is not for this device, or it was altered."
        case .DeviceProtectionError: return deviceProtectionDescription
        case .FidoError(let code, let cause): return code.errorDescription + (cause.map { " (\($0))" } ?? "")
        case .MalformedPayload: return "The enroll response or link is not a valid enrollment."
        case .NetworkError(let cause): return networkErrorDescription(cause)
        case .NoDeviceLockError: return noDeviceLockDescription
        case .TokenAlreadyRedeemed: return "This enrollment was already used. Ask for a new one."
        case .TokenExpired: return "This enrollment has expired. Ask for a new one."
        case .Unknown(let cause): return "The registration failed\(cause.map { ": \($0)" } ?? "")."
        case .UserAlreadyRegisteredInAnotherServer: return "The user is already registered with another server on this device."
        }
    }

    public var fidoErrorCode: FidoErrorCode? {
        switch self {
        case .FidoError(let code, _): return code
        case .Unknown(let cause): return (cause as? any MobileAuthenticationClientError)?.fidoErrorCode
        default: return nil
        }
    }

    public var httpError: HttpError? { if case .NetworkError(let cause) = self { carriedHttpError(cause) } else { nil } }
}
