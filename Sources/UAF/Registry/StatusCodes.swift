/// UAF status codes sent by a server in `ServerResponse.statusCode` (uaf-spec §1.7).
public enum UAFStatusCode: Int, Codable, Sendable, CaseIterable {
    case ok = 1200
    case accepted = 1202
    case badRequest = 1400
    case unauthorized = 1401
    case forbidden = 1403
    case notFound = 1404
    case requestTimeout = 1408
    case unknownAAID = 1480
    case unknownKeyID = 1481
    case channelBindingRefused = 1490
    case requestInvalid = 1491
    case unacceptableAuthenticator = 1492
    case revokedAuthenticator = 1493
    case unacceptableKey = 1494
    case unacceptableAlgorithm = 1495
    case unacceptableAttestation = 1496
    case unacceptableClientCapabilities = 1497
    case unacceptableContent = 1498
    case internalServerError = 1500

    public var reasonPhrase: String {
        switch self {
        case .ok: return "OK. Operation completed"
        case .accepted: return "Accepted. Message accepted, but not completed at this time"
        case .badRequest: return "Bad Request. The server did not understand the message"
        case .unauthorized:
            return "Unauthorized. The userid must be authenticated to perform this operation, or this KeyID is not associated with this UserID"
        case .forbidden: return "Forbidden. The userid is not allowed to perform this operation"
        case .notFound: return "Not Found"
        case .requestTimeout: return "Request Timeout"
        case .unknownAAID: return "Unknown AAID. The server was unable to locate authoritative metadata for the AAID"
        case .unknownKeyID: return "Unknown KeyID. The server was unable to locate a registration for the given UserID and KeyID combination"
        case .channelBindingRefused: return "Channel Binding Refused"
        case .requestInvalid:
            return
                "Request Invalid. The server refused to service the request because the message nonce was unknown, expired or the server has previously serviced a message with the same nonce and user ID"
        case .unacceptableAuthenticator: return "Unacceptable Authenticator"
        case .revokedAuthenticator: return "Revoked Authenticator"
        case .unacceptableKey: return "Unacceptable Key"
        case .unacceptableAlgorithm: return "Unacceptable Algorithm"
        case .unacceptableAttestation: return "Unacceptable Attestation"
        case .unacceptableClientCapabilities: return "Unacceptable Client Capabilities"
        case .unacceptableContent: return "Unacceptable Content. There was a problem with the contents of the message"
        case .internalServerError: return "Internal Server Error"
        }
    }
}

/// UAF client `ErrorCode` values (uaf-spec §1.8).
public enum UAFErrorCode: UInt16, Sendable, CaseIterable {
    case noError = 0x00
    case waitUserAction = 0x01
    case insecureTransport = 0x02
    case userCancelled = 0x03
    case unsupportedVersion = 0x04
    case noSuitableAuthenticator = 0x05
    case protocolError = 0x06
    case untrustedFacetID = 0x07
    case keyDisappearedPermanently = 0x09
    case authenticatorAccessDenied = 0x0C
    case invalidTransactionContent = 0x0D
    case userNotResponsive = 0x0E
    case insufficientAuthenticatorResources = 0x0F
    case userLockout = 0x10
    case userNotEnrolled = 0x11
    case systemInterrupted = 0x12
    case unknown = 0xFF
}

/// ASM status codes (uaf-spec §1.8).
public enum ASMStatusCode: UInt16, Sendable, CaseIterable {
    case ok = 0x00
    case error = 0x01
    case accessDenied = 0x02
    case userCancelled = 0x03
    case cannotRenderTransactionContent = 0x04
    case keyDisappearedPermanently = 0x09
    case authenticatorDisconnected = 0x0B
    case userNotResponsive = 0x0E
    case insufficientAuthenticatorResources = 0x0F
    case userLockout = 0x10
    case userNotEnrolled = 0x11
    case systemInterrupted = 0x12
}
