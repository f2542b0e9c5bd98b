import FIDOAttestation

/// Why the relying party rejected a UAF response. Callers match on ``reason`` or use ``statusCode``; the module
/// can add reasons without breaking them.
public struct UAFVerificationError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case unsupportedVersion(Version)
        /// `uafResponse` is not a JSON array of at least one message: the envelope did not parse.
        case notAMessageArray
        /// A message whose structure is wrong once the envelope parsed: a member missing or of the wrong JSON type.
        case malformedMessage(String)
        /// `header.serverData` is missing, empty or longer than ``OperationHeader/maximumServerDataLength``.
        case malformedServerData
        /// A header member out of its bounds, or a header extension this server reads that is malformed.
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
        /// The metadata allows the type, but this relying party cannot verify it (ECDAA).
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
        /// A sign counter of 0 ("no counter") from an authenticator the relying party requires to count.
        case counterNotKept
        /// An extension marked `fail_if_unknown` that the relying party does not understand.
        case unknownRequiredExtension(String)
        case nonceTooShort(Int)
        case transactionMismatch(String)
        case duplicateAssertion
        /// A transaction confirmed by an authenticator whose metadata names no transaction display.
        case transactionNotDisplayable(String)
        /// The Metadata Service reports the authenticator revoked or compromised (a `StatusReport` in force).
        case authenticatorRevoked(aaid: String, status: AuthenticatorStatus)
    }

    public let reason: Reason
    public init(_ reason: Reason) { self.reason = reason }

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
