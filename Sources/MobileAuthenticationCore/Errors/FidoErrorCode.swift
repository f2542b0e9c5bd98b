import UAF

/// FIDO UAF client error codes (uaf-spec §1.8), with the Swift spellings of the Nevis SDK. The numbers are those
/// of `UAF.UAFErrorCode` (Swift needs them as literals here; a test checks that every case maps).
public enum FidoErrorCode: Int, Sendable, CaseIterable, CustomStringConvertible {
    case noError = 0x00
    case waitUserAction = 0x01
    case insecureTransport = 0x02
    case userCanceled = 0x03
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
    case unknown = 0xFF

    /// What happened and what to do next.
    public var errorDescription: String {
        switch self {
        case .noError: return "No error."
        case .waitUserAction: return "Waiting for the user to act."
        case .insecureTransport: return "The connection is not secure (plain HTTP or an untrusted certificate); use HTTPS with a trusted certificate."
        case .userCanceled: return "The user cancelled the operation."
        case .unsupportedVersion: return "The server offers no supported FIDO UAF version."
        case .noSuitableAuthenticator: return "No authenticator on this device satisfies the server's policy."
        case .protocolError: return "The server's message or answer violates the FIDO UAF protocol, or it rejected the operation."
        case .untrustedFacetID: return "This application is not among the server's trusted facets."
        case .keyDisappearedPermanently:
            return "The authenticator's key is gone (e.g. biometrics changed); delete the registration and register again."
        case .authenticatorAccessDenied: return "Access to the authenticator was denied."
        case .invalidTransactionContent: return "The transaction content cannot be shown."
        case .userNotResponsive: return "The user did not respond in time."
        case .insufficientAuthenticatorResources: return "The authenticator has no room for another key."
        case .userLockout: return "The authenticator is locked after too many failed attempts."
        case .userNotEnrolled: return "The user is not enrolled with this authenticator."
        case .unknown: return "An unknown error occurred."
        }
    }

    public var description: String { errorDescription }

    /// The protocol-level code this case stands for.
    public var uafErrorCode: UAFErrorCode { UAFErrorCode(rawValue: UInt16(rawValue)) ?? .unknown }
}
