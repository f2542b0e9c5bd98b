import Primitives

/// Why a ceremony failed, with the step of WebAuthn §7.1 (registration) or §7.2 (authentication) that refused it.
public struct WebAuthnError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Ceremony: String, Sendable { case registration, authentication }

    /// Why, as a value: compare with the static values (`reason == .credentialNotAllowed`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case credentialNotAllowed
            case credentialMismatch
            case userHandleMismatch
            case clientDataMalformed
            case typeMismatch(String)
            case challengeMismatch
            case originNotAllowed(String)
            case crossOriginNotAllowed
            case topOriginNotAllowed(String)
            case authenticatorDataMalformed(AuthenticatorDataError.Reason)
            case rpIDHashMismatch
            case userNotPresent
            case userNotVerified
            case backupEligibilityChanged
            case signatureInvalid
            case signCounterNotIncreased(stored: UInt32, received: UInt32)
            case attestationObjectMalformed(String)
            case attestedCredentialDataMissing
            case credentialIDMismatch
            case algorithmNotOffered(Int64)
            case attestationFormatUnsupported(String)
            case attestationInvalid(AttestationStatementError)
            case authenticatorRevoked(String)
            case metadataMissing
            case attestationTypeNotAllowed(AttestationType)
            case attestationNotTrusted
            case authenticatorNotAllowed
            case attestationCertificateRevoked(String)
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`tooDeep(limit: 16)`), for logs and tests.
        public var description: String { "\(kind)" }

        /// §7.2 step 5: the credential is not one of `allowCredentials`.
        public static let credentialNotAllowed = Self(.credentialNotAllowed)

        /// §7.2 step 6: the response's credential is not the stored one, or its user handle is missing or another user's.
        public static let credentialMismatch = Self(.credentialMismatch)

        public static let userHandleMismatch = Self(.userHandleMismatch)

        /// §7.1 step 6, §7.2 step 9: `clientDataJSON` is not a JSON object with the members it must have.
        public static let clientDataMalformed = Self(.clientDataMalformed)

        /// §7.1 step 7, §7.2 step 10.
        public static func typeMismatch(_ value: String) -> Self { Self(.typeMismatch(value)) }

        /// §7.1 step 8, §7.2 step 11.
        public static let challengeMismatch = Self(.challengeMismatch)

        /// §7.1 step 9, §7.2 step 12: an origin not configured.
        public static func originNotAllowed(_ value: String) -> Self { Self(.originNotAllowed(value)) }

        /// §7.1 step 10, §7.2 step 13: a cross-origin iframe the relying party does not allow.
        public static let crossOriginNotAllowed = Self(.crossOriginNotAllowed)

        /// §7.1 step 11, §7.2 step 14: a top-level origin not configured, or one without `crossOrigin`.
        public static func topOriginNotAllowed(_ value: String) -> Self { Self(.topOriginNotAllowed(value)) }

        /// The authenticator data does not parse (§6.1); BS without BE is §7.1 step 17, §7.2 step 18.
        public static func authenticatorDataMalformed(_ value: AuthenticatorDataError.Reason) -> Self { Self(.authenticatorDataMalformed(value)) }

        /// §7.1 step 14, §7.2 step 15.
        public static let rpIDHashMismatch = Self(.rpIDHashMismatch)

        /// §7.1 step 15, §7.2 step 16.
        public static let userNotPresent = Self(.userNotPresent)

        /// §7.1 step 16, §7.2 step 17.
        public static let userNotVerified = Self(.userNotVerified)

        /// §7.2 step 19: the backup eligibility differs from the one stored at registration.
        public static let backupEligibilityChanged = Self(.backupEligibilityChanged)

        /// §7.2 step 21.
        public static let signatureInvalid = Self(.signatureInvalid)

        /// §7.2 step 22: the counter did not increase though the authenticator counts.
        public static func signCounterNotIncreased(stored: UInt32, received: UInt32) -> Self {
            Self(.signCounterNotIncreased(stored: stored, received: received))
        }

        /// §7.1 step 13: the attestation object is not a CBOR map of `fmt`, `attStmt` and `authData`.
        public static func attestationObjectMalformed(_ value: String) -> Self { Self(.attestationObjectMalformed(value)) }

        /// §7.1 step 13: a registration's authenticator data without attested credential data (AT clear).
        public static let attestedCredentialDataMissing = Self(.attestedCredentialDataMissing)

        /// §7.1 step 13: `rawId` is not the credential ID the authenticator data attests.
        public static let credentialIDMismatch = Self(.credentialIDMismatch)

        /// §7.1 step 20: the credential key's algorithm is not one of `pubKeyCredParams`.
        public static func algorithmNotOffered(_ value: Int64) -> Self { Self(.algorithmNotOffered(value)) }

        /// §7.1 step 21: a statement format this module does not verify.
        public static func attestationFormatUnsupported(_ value: String) -> Self { Self(.attestationFormatUnsupported(value)) }

        /// §7.1 step 22: the statement's verification procedure refused it.
        public static func attestationInvalid(_ value: AttestationStatementError) -> Self { Self(.attestationInvalid(value)) }

        /// §7.1 step 23: the Metadata Service reports the model with this status (revoked, compromised…).
        public static func authenticatorRevoked(_ value: String) -> Self { Self(.authenticatorRevoked(value)) }

        /// §7.1 step 23: the policy needs metadata, and the Metadata Service has none for the AAGUID.
        public static let metadataMissing = Self(.metadataMissing)

        /// §7.1 step 24: the policy does not accept this attestation type.
        public static func attestationTypeNotAllowed(_ value: AttestationType) -> Self { Self(.attestationTypeNotAllowed(value)) }

        /// §7.1 step 24: the policy needs an attestation that chains to an accepted root, and this one does not.
        public static let attestationNotTrusted = Self(.attestationNotTrusted)

        /// §7.1 step 24: the policy lists the models it accepts, and the AAGUID is not one.
        public static let authenticatorNotAllowed = Self(.authenticatorNotAllowed)

        /// §7.1 step 24: a configured certificate revocation list revokes a certificate of the chain (its subject).
        public static func attestationCertificateRevoked(_ value: String) -> Self { Self(.attestationCertificateRevoked(value)) }
    }

    public let ceremony: Ceremony
    public let reason: Reason

    public init(_ ceremony: Ceremony, _ reason: Reason) {
        self.ceremony = ceremony
        self.reason = reason
    }

    /// The attestation statement format's own refusal, when §7.1 step 22 refused (``Reason/attestationInvalid(_:)``).
    public var attestationStatementError: AttestationStatementError? {
        if case .attestationInvalid(let error) = reason.kind { return error }
        return nil
    }

    /// The numbered step of §7.1 or §7.2 that refused.
    public var step: Int {
        let registration = ceremony == .registration
        switch reason.kind {
        case .credentialNotAllowed: return 5
        case .credentialMismatch, .userHandleMismatch: return 6
        case .clientDataMalformed: return registration ? 6 : 9
        case .typeMismatch: return registration ? 7 : 10
        case .challengeMismatch: return registration ? 8 : 11
        case .originNotAllowed: return registration ? 9 : 12
        case .crossOriginNotAllowed: return registration ? 10 : 13
        case .topOriginNotAllowed: return registration ? 11 : 14
        case .authenticatorDataMalformed(let data):
            switch data.kind {
            case .backupStateWithoutEligibility: return registration ? 17 : 18
            case .credentialIDTooLong: return registration ? 25 : 15
            default: return registration ? 13 : 15
            }
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
        switch reason.kind {
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
