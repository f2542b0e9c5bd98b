import FIDOAttestation

/// Why the relying party rejected a UAF response. Callers compare with the static values
/// (`error == .signatureInvalid`) or use ``statusCode``. The reasons behind them are internal, so the module can add
/// one without breaking a caller's `switch`.
public struct UAFVerificationError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Reason: Hashable, Sendable {
        case unsupportedVersion(Version)
        case notAMessageArray
        case malformedMessage(String)
        case malformedServerData
        case malformedHeader(String)
        case operationMismatch
        case malformedFinalChallengeParams
        case appIDMismatch(String)
        case untrustedFacetID(String)
        case challengeMismatch
        case channelBindingMismatch
        case noAssertions
        case unsupportedAssertionScheme(String)
        case malformedAssertion(TLVError)
        case unknownAAID(String)
        case algorithmNotAllowed(SignatureAlgorithm)
        case keyEncodingNotAllowed(PublicKeyEncoding)
        case authenticatorVersionTooLow(found: UInt16, minimum: UInt16)
        case finalChallengeHashMismatch
        case invalidAuthenticationMode(UInt8)
        case attestationTypeNotAllowed(AttestationType)
        case attestationTypeNotSupported(AttestationType)
        case attestationSignatureInvalid
        case attestationCertificateInvalid(String)
        case unacceptablePublicKey
        case policyNotSatisfied
        case keyIDAlreadyRegistered
        case unknownKeyID
        case keyIDBelongsToAnotherUser
        case signatureInvalid
        case counterRegression(stored: UInt32, received: UInt32)
        case counterNotKept
        case unknownRequiredExtension(String)
        case nonceTooShort(Int)
        case transactionMismatch(String)
        case duplicateAssertion
        case transactionNotDisplayable(String)
        case authenticatorRevoked(aaid: String, status: AuthenticatorStatus)
    }

    let reason: Reason
    init(_ reason: Reason) { self.reason = reason }

    /// The protocol version `version` is not supported (uaf-spec §5 step 1).
    public static func unsupportedVersion(_ version: Version) -> Self { Self(.unsupportedVersion(version)) }
    /// `uafResponse` is not a JSON array of at least one message: the envelope did not parse.
    public static let notAMessageArray = Self(.notAMessageArray)
    /// A message whose structure is wrong once the envelope parsed: a member missing or of the wrong JSON type.
    public static func malformedMessage(_ why: String) -> Self { Self(.malformedMessage(why)) }
    /// `header.serverData` is missing, empty or longer than ``OperationHeader/maximumServerDataLength``.
    public static let malformedServerData = Self(.malformedServerData)
    /// A header member out of its bounds, or a header extension this server reads that is malformed.
    public static func malformedHeader(_ why: String) -> Self { Self(.malformedHeader(why)) }
    /// The response is for a different operation.
    public static let operationMismatch = Self(.operationMismatch)
    /// `fcParams` is not base64url JSON FinalChallengeParams with a non-empty challenge.
    public static let malformedFinalChallengeParams = Self(.malformedFinalChallengeParams)
    /// The response's `appID` is not this server's appID.
    public static func appIDMismatch(_ appID: String) -> Self { Self(.appIDMismatch(appID)) }
    /// `facetID` is not a trusted facet.
    public static func untrustedFacetID(_ facetID: String) -> Self { Self(.untrustedFacetID(facetID)) }
    /// The challenge is not the one this server issued.
    public static let challengeMismatch = Self(.challengeMismatch)
    /// Channel binding does not match the TLS connection.
    public static let channelBindingMismatch = Self(.channelBindingMismatch)
    /// The response carries no assertion.
    public static let noAssertions = Self(.noAssertions)
    /// The assertion scheme `scheme` is not supported.
    public static func unsupportedAssertionScheme(_ scheme: String) -> Self { Self(.unsupportedAssertionScheme(scheme)) }
    /// The assertion's UAFV1TLV does not decode: `error` says where.
    public static func malformedAssertion(_ error: TLVError) -> Self { Self(.malformedAssertion(error)) }
    /// No metadata for AAID `aaid`.
    public static func unknownAAID(_ aaid: String) -> Self { Self(.unknownAAID(aaid)) }
    /// The metadata does not allow `algorithm` for this authenticator.
    public static func algorithmNotAllowed(_ algorithm: SignatureAlgorithm) -> Self { Self(.algorithmNotAllowed(algorithm)) }
    /// The metadata does not allow the public key encoding `encoding` for this authenticator.
    public static func keyEncodingNotAllowed(_ encoding: PublicKeyEncoding) -> Self { Self(.keyEncodingNotAllowed(encoding)) }
    /// Authenticator version `found` is below `minimum`.
    public static func authenticatorVersionTooLow(found: UInt16, minimum: UInt16) -> Self {
        Self(.authenticatorVersionTooLow(found: found, minimum: minimum))
    }
    /// The final challenge hash does not match fcParams.
    public static let finalChallengeHashMismatch = Self(.finalChallengeHashMismatch)
    /// The authentication mode `mode` is not valid here.
    public static func invalidAuthenticationMode(_ mode: UInt8) -> Self { Self(.invalidAuthenticationMode(mode)) }
    /// The metadata does not allow the attestation type `type`.
    public static func attestationTypeNotAllowed(_ type: AttestationType) -> Self { Self(.attestationTypeNotAllowed(type)) }
    /// The metadata allows the type, but this relying party cannot verify it (ECDAA).
    public static func attestationTypeNotSupported(_ type: AttestationType) -> Self { Self(.attestationTypeNotSupported(type)) }
    /// The attestation signature does not verify.
    public static let attestationSignatureInvalid = Self(.attestationSignatureInvalid)
    /// The attestation certificate is not trusted: `why`.
    public static func attestationCertificateInvalid(_ why: String) -> Self { Self(.attestationCertificateInvalid(why)) }
    /// The public key cannot be decoded.
    public static let unacceptablePublicKey = Self(.unacceptablePublicKey)
    /// The authenticators used do not satisfy the policy.
    public static let policyNotSatisfied = Self(.policyNotSatisfied)
    /// This KeyID is already registered.
    public static let keyIDAlreadyRegistered = Self(.keyIDAlreadyRegistered)
    /// No registration for this KeyID.
    public static let unknownKeyID = Self(.unknownKeyID)
    /// This KeyID is registered to another user.
    public static let keyIDBelongsToAnotherUser = Self(.keyIDBelongsToAnotherUser)
    /// The assertion signature does not verify.
    public static let signatureInvalid = Self(.signatureInvalid)
    /// The sign counter went from `stored` to `received`: possibly a cloned authenticator.
    public static func counterRegression(stored: UInt32, received: UInt32) -> Self { Self(.counterRegression(stored: stored, received: received)) }
    /// A sign counter of 0 ("no counter") from an authenticator the relying party requires to count.
    public static let counterNotKept = Self(.counterNotKept)
    /// An extension marked `fail_if_unknown` that the relying party does not understand.
    public static func unknownRequiredExtension(_ id: String) -> Self { Self(.unknownRequiredExtension(id)) }
    /// The authenticator's nonce of `length` bytes is shorter than 8.
    public static func nonceTooShort(_ length: Int) -> Self { Self(.nonceTooShort(length)) }
    /// The confirmed transaction is not the one the server sent: `why`.
    public static func transactionMismatch(_ why: String) -> Self { Self(.transactionMismatch(why)) }
    /// The same authenticator appears twice.
    public static let duplicateAssertion = Self(.duplicateAssertion)
    /// A transaction confirmed by an authenticator whose metadata names no transaction display.
    public static func transactionNotDisplayable(_ aaid: String) -> Self { Self(.transactionNotDisplayable(aaid)) }
    /// The Metadata Service reports the authenticator revoked or compromised (a `StatusReport` in force).
    public static func authenticatorRevoked(aaid: String, status: AuthenticatorStatus) -> Self {
        Self(.authenticatorRevoked(aaid: aaid, status: status))
    }

    /// The UAF status code the server answers with (uaf-spec §1.7). Where the spec names no code, the choice
    /// is the closest one, documented in the server DocC ("Status codes").
    public var statusCode: UAFStatusCode {
        switch reason {
        // The envelope and the version (uaf-spec §5 step 1) are 1400; past them, the conformance tool's rule: a
        // message whose structure is wrong is 1498 ("Status codes" in the server's DocC).
        case .unsupportedVersion, .notAMessageArray: return .badRequest
        case .challengeMismatch: return .requestInvalid
        case .channelBindingMismatch: return .channelBindingRefused
        case .unknownAAID: return .unknownAAID
        case .algorithmNotAllowed: return .unacceptableAlgorithm
        case .keyEncodingNotAllowed, .unacceptablePublicKey, .keyIDAlreadyRegistered: return .unacceptableKey
        case .authenticatorVersionTooLow, .policyNotSatisfied, .transactionNotDisplayable: return .unacceptableAuthenticator
        case .attestationTypeNotAllowed, .attestationTypeNotSupported, .attestationSignatureInvalid, .attestationCertificateInvalid:
            return .unacceptableAttestation
        case .unknownKeyID: return .unknownKeyID
        case .authenticatorRevoked: return .revokedAuthenticator
        case .keyIDBelongsToAnotherUser: return .unauthorized
        case .operationMismatch, .malformedMessage, .malformedServerData, .malformedHeader, .malformedFinalChallengeParams, .noAssertions,
            .appIDMismatch, .untrustedFacetID, .unsupportedAssertionScheme, .malformedAssertion, .finalChallengeHashMismatch,
            .invalidAuthenticationMode, .signatureInvalid, .counterRegression, .counterNotKept, .unknownRequiredExtension,
            .nonceTooShort, .transactionMismatch, .duplicateAssertion:
            return .unacceptableContent
        }
    }

    public var description: String {
        switch reason {
        case .unsupportedVersion(let v): return "protocol version \(v) is not supported"
        case .operationMismatch: return "the response is for a different operation"
        case .notAMessageArray: return "uafResponse is not a JSON array of messages"
        case .malformedMessage(let why): return "the message is malformed: \(why)"
        case .malformedServerData: return "header.serverData is missing, empty or longer than \(OperationHeader.maximumServerDataLength) characters"
        case .malformedHeader(let why): return "the header is malformed: \(why)"
        case .malformedFinalChallengeParams: return "fcParams is not base64url JSON FinalChallengeParams with a non-empty challenge"
        case .appIDMismatch(let appID): return "appID \"\(appID)\" is not this server's appID"
        case .untrustedFacetID(let facet): return "facetID \"\(facet)\" is not a trusted facet"
        case .challengeMismatch: return "the challenge is not the one this server issued"
        case .channelBindingMismatch: return "channel binding does not match the TLS connection"
        case .noAssertions: return "the response carries no assertion"
        case .unsupportedAssertionScheme(let s): return "assertion scheme \"\(s)\" is not supported"
        case .malformedAssertion(let e): return "malformed assertion: \(e)"
        case .unknownAAID(let aaid): return "no metadata for AAID \(aaid)"
        case .algorithmNotAllowed(let a): return "\(a) is not allowed for this authenticator"
        case .keyEncodingNotAllowed(let k): return "\(k) is not allowed for this authenticator"
        case .authenticatorVersionTooLow(let found, let minimum): return "authenticator version \(found) is below \(minimum)"
        case .finalChallengeHashMismatch: return "the final challenge hash does not match fcParams"
        case .invalidAuthenticationMode(let m): return "authentication mode \(m) is not valid here"
        case .attestationTypeNotAllowed(let t): return "attestation type \(t) is not allowed by the metadata"
        case .attestationTypeNotSupported(let t): return "attestation type \(t) is not supported by this server"
        case .attestationSignatureInvalid: return "the attestation signature does not verify"
        case .attestationCertificateInvalid(let why): return "the attestation certificate is not trusted: \(why)"
        case .unacceptablePublicKey: return "the public key cannot be decoded"
        case .policyNotSatisfied: return "the authenticators used do not satisfy the policy"
        case .keyIDAlreadyRegistered: return "this KeyID is already registered"
        case .unknownKeyID: return "no registration for this KeyID"
        case .keyIDBelongsToAnotherUser: return "this KeyID is registered to another user"
        case .signatureInvalid: return "the assertion signature does not verify"
        case .counterRegression(let stored, let received): return "sign counter went from \(stored) to \(received): possible cloned authenticator"
        case .counterNotKept: return "sign counter 0: this authenticator must keep a counter"
        case .unknownRequiredExtension(let id): return "extension \"\(id)\" is marked fail_if_unknown and is not understood"
        case .nonceTooShort(let n): return "authenticator nonce of \(n) bytes is shorter than 8"
        case .transactionMismatch(let why): return "transaction confirmation mismatch: \(why)"
        case .duplicateAssertion: return "the same authenticator appears twice"
        case .transactionNotDisplayable(let aaid): return "authenticator \(aaid) has no transaction display in its metadata"
        case .authenticatorRevoked(let aaid, let status): return "the metadata service reports authenticator \(aaid) \(status)"
        }
    }
}
