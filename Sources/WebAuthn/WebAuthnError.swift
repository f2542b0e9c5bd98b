import Primitives

/// Why a ceremony failed, with the step of WebAuthn §7.1 (registration) or §7.2 (authentication) that refused it.
public struct WebAuthnError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Ceremony: String, Sendable { case registration, authentication }

    public enum Reason: Sendable, Equatable {
        /// §7.2 step 5: the credential is not one of `allowCredentials`.
        case credentialNotAllowed
        /// §7.2 step 6: the response's credential is not the stored one, or its user handle is missing or another user's.
        case credentialMismatch
        case userHandleMismatch
        /// §7.1 step 6, §7.2 step 9: `clientDataJSON` is not a JSON object with the members it must have.
        case clientDataMalformed
        /// §7.1 step 7, §7.2 step 10.
        case typeMismatch(String)
        /// §7.1 step 8, §7.2 step 11.
        case challengeMismatch
        /// §7.1 step 9, §7.2 step 12: an origin not configured.
        case originNotAllowed(String)
        /// §7.1 step 10, §7.2 step 13: a cross-origin iframe the relying party does not allow.
        case crossOriginNotAllowed
        /// §7.1 step 11, §7.2 step 14: a top-level origin not configured, or one without `crossOrigin`.
        case topOriginNotAllowed(String)
        /// The authenticator data does not parse (§6.1); BS without BE is §7.1 step 17, §7.2 step 18.
        case authenticatorDataMalformed(AuthenticatorDataError.Reason)
        /// §7.1 step 14, §7.2 step 15.
        case rpIDHashMismatch
        /// §7.1 step 15, §7.2 step 16.
        case userNotPresent
        /// §7.1 step 16, §7.2 step 17.
        case userNotVerified
        /// §7.2 step 19: the backup eligibility differs from the one stored at registration.
        case backupEligibilityChanged
        /// §7.2 step 21.
        case signatureInvalid
        /// §7.2 step 22: the counter did not increase though the authenticator counts.
        case signCounterNotIncreased(stored: UInt32, received: UInt32)
        /// §7.1 step 13: the attestation object is not a CBOR map of `fmt`, `attStmt` and `authData`.
        case attestationObjectMalformed(String)
        /// §7.1 step 13: a registration's authenticator data without attested credential data (AT clear).
        case attestedCredentialDataMissing
        /// §7.1 step 13: `rawId` is not the credential ID the authenticator data attests.
        case credentialIDMismatch
        /// §7.1 step 20: the credential key's algorithm is not one of `pubKeyCredParams`.
        case algorithmNotOffered(Int64)
        /// §7.1 step 21: a statement format this module does not verify.
        case attestationFormatUnsupported(String)
        /// §7.1 step 22: the statement's verification procedure refused it.
        case attestationInvalid(AttestationStatementError)
        /// §7.1 step 23: the Metadata Service reports the model with this status (revoked, compromised…).
        case authenticatorRevoked(String)
        /// §7.1 step 23: the policy needs metadata, and the Metadata Service has none for the AAGUID.
        case metadataMissing
        /// §7.1 step 24: the policy does not accept this attestation type.
        case attestationTypeNotAllowed(AttestationType)
        /// §7.1 step 24: the policy needs an attestation that chains to an accepted root, and this one does not.
        case attestationNotTrusted
        /// §7.1 step 24: the policy lists the models it accepts, and the AAGUID is not one.
        case authenticatorNotAllowed
        /// §7.1 step 24: a configured certificate revocation list revokes a certificate of the chain (its subject).
        case attestationCertificateRevoked(String)
    }

    public let ceremony: Ceremony
    public let reason: Reason

    public init(_ ceremony: Ceremony, _ reason: Reason) {
        self.ceremony = ceremony
        self.reason = reason
    }

    /// The numbered step of §7.1 or §7.2 that refused.
    public var step: Int {
        let registration = ceremony == .registration
        switch reason {
        case .credentialNotAllowed: return 5
        case .credentialMismatch, .userHandleMismatch: return 6
        case .clientDataMalformed: return registration ? 6 : 9
        case .typeMismatch: return registration ? 7 : 10
        case .challengeMismatch: return registration ? 8 : 11
        case .originNotAllowed: return registration ? 9 : 12
        case .crossOriginNotAllowed: return registration ? 10 : 13
        case .topOriginNotAllowed: return registration ? 11 : 14
        case .authenticatorDataMalformed(.backupStateWithoutEligibility): return registration ? 17 : 18
        case .authenticatorDataMalformed(.credentialIDTooLong): return registration ? 25 : 15
        case .authenticatorDataMalformed: return registration ? 13 : 15
        case .rpIDHashMismatch: return registration ? 14 : 15
        case .userNotPresent: return registration ? 15 : 16
        case .userNotVerified: return registration ? 16 : 17
        case .backupEligibilityChanged: return 19
        case .signatureInvalid: return 21
        case .signCounterNotIncreased: return 22
        case .attestationObjectMalformed, .attestedCredentialDataMissing, .credentialIDMismatch: return 13
        case .algorithmNotOffered: return 20
        case .attestationFormatUnsupported: return 21
        case .attestationInvalid: return 22
        case .authenticatorRevoked, .metadataMissing: return 23
        case .attestationTypeNotAllowed, .attestationNotTrusted, .authenticatorNotAllowed, .attestationCertificateRevoked: return 24
        }
    }

    public var description: String {
        let what: String
        switch reason {
        case .credentialNotAllowed: what = "the credential is not one the options allowed"
        case .credentialMismatch: what = "the credential is not the stored one"
        case .userHandleMismatch: what = "the user handle is missing or another user's"
        case .clientDataMalformed: what = "clientDataJSON is not a JSON object with type, challenge and origin"
        case .typeMismatch(let type): what = "clientDataJSON type is \(UntrustedText.quoted(type))"
        case .challengeMismatch: what = "the challenge is not the one issued"
        case .originNotAllowed(let origin): what = "origin \(UntrustedText.quoted(origin)) is not allowed"
        case .crossOriginNotAllowed: what = "a cross-origin iframe is not allowed"
        case .topOriginNotAllowed(let origin): what = "top origin \(UntrustedText.quoted(origin)) is not allowed"
        case .authenticatorDataMalformed(let reason): what = "\(AuthenticatorDataError(reason))"
        case .rpIDHashMismatch: what = "the authenticator data is for another RP ID"
        case .userNotPresent: what = "the user was not present (UP is clear)"
        case .userNotVerified: what = "the user was not verified (UV is clear) and verification is required"
        case .backupEligibilityChanged: what = "the backup eligibility differs from the one registered"
        case .signatureInvalid: what = "the signature does not verify with the credential's key"
        case .signCounterNotIncreased(let stored, let received): what = "the signature counter went from \(stored) to \(received)"
        case .attestationObjectMalformed(let detail): what = "the attestation object is malformed: \(detail)"
        case .attestedCredentialDataMissing: what = "the authenticator data attests no credential (AT is clear)"
        case .credentialIDMismatch: what = "rawId is not the credential ID the authenticator data attests"
        case .algorithmNotOffered(let alg): what = "the credential key's algorithm \(alg) was not offered"
        case .attestationFormatUnsupported(let format): what = "attestation format \(UntrustedText.quoted(format)) is not supported"
        case .attestationInvalid(let error): what = "\(error)"
        case .authenticatorRevoked(let status): what = "the Metadata Service reports this authenticator model \(status)"
        case .metadataMissing: what = "the Metadata Service has no entry for this authenticator model, and the policy needs one"
        case .attestationTypeNotAllowed(let type): what = "attestation type \(type.rawValue) is not allowed by the policy"
        case .attestationNotTrusted: what = "the attestation does not chain to an accepted root"
        case .authenticatorNotAllowed: what = "the authenticator model is not one the policy allows"
        case .attestationCertificateRevoked(let subject):
            what = "its issuer's revocation list revokes the attestation certificate \(UntrustedText.quoted(subject, limit: 200))"
        }
        return "\(ceremony.rawValue) (WebAuthn §7.\(ceremony == .registration ? 1 : 2) step \(step)): \(what)"
    }
}
