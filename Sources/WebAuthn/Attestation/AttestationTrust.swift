import FIDOAttestation
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Where attestation trust comes from (WebAuthn §7.1 step 23): roots the relying party configured for every
/// authenticator, and the FIDO Metadata Service's entry for the authenticator's AAGUID, with its own roots and its
/// status reports.
public struct AttestationTrust: Sendable {
    /// Roots accepted for any authenticator (the operator's own, a vendor's).
    public let roots: [Certificate]
    /// The metadata for an AAGUID (16 bytes), or nil when the service has none.
    public let metadata: @Sendable ([UInt8]) -> FIDO2Metadata?
    /// The metadata of a U2F model, by its attestation certificate key identifier (lower-case hex), or nil.
    public let keyIdentifierMetadata: @Sendable (String) -> FIDO2Metadata?
    /// Certificate revocation lists the operator configured: a chain with a certificate one of them revokes (the
    /// list of that certificate's issuer, signed by it) is refused under every policy, as a compromised attestation
    /// key is.
    public let revocationLists: [RevocationList]

    public init(
        roots: [Certificate] = [], metadata: @escaping @Sendable ([UInt8]) -> FIDO2Metadata? = { _ in nil },
        keyIdentifierMetadata: @escaping @Sendable (String) -> FIDO2Metadata? = { _ in nil }, revocationLists: [RevocationList] = []
    ) {
        self.roots = roots
        self.metadata = metadata
        self.keyIdentifierMetadata = keyIdentifierMetadata
        self.revocationLists = revocationLists
    }

    /// The chain, leaf to root of `roots`, that `certificates` (leaf first) build at `now`, or nil. A chain that ends
    /// in a root reaches it; expired certificates, broken signatures and a CA leaf break the chain (RFC 5280).
    static func validatedChain(of certificates: [Certificate], among roots: [Certificate], at now: Date) async -> [Certificate]? {
        guard let leaf = certificates.first, !roots.isEmpty else { return nil }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: now)
            AttestationCertificatePolicy()
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(Array(certificates.dropFirst())))
        if case .validCertificate(let chain) = result { return Array(chain) }
        return nil
    }

    /// The certificate of `chain` (leaf to root) that a configured list revokes, or nil.
    func revoked(in chain: [Certificate], at now: Date) -> Certificate? {
        guard !revocationLists.isEmpty else { return nil }
        for (certificate, issuer) in zip(chain, chain.dropFirst())
        where revocationLists.contains(where: { $0.revokes(certificate, issuedBy: issuer, at: now) }) {
            return certificate
        }
        return nil
    }
}

/// The extensions the attestation formats read themselves, so a chain is not refused for marking them critical: a TPM
/// AIK certificate's subject alternative name must be critical (its subject is empty), and the TPM procedure checks it.
struct AttestationCertificatePolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = [.X509ExtensionID.subjectAlternativeName, .X509ExtensionID.extendedKeyUsage]

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult { .meetsPolicy }
}

/// What a relying party accepts as a new credential's attestation (WebAuthn §7.1 steps 16, 23 and 24).
///
/// The default, ``passkeys``, is what a bank that wants passkeys picks: synced passkeys (iCloud Keychain, Google
/// Password Manager, password managers) send `none` or self attestation and have no metadata, so requiring trusted
/// attestation would turn most customers away; the user must be verified (a passkey replaces a password and a second
/// factor, so it must be something the user has and something they are or know); a model the Metadata Service
/// reports compromised or revoked is refused whatever it sends. An attestation that verifies but does not chain to a
/// root is registered as unverified (``VerifiedRegistration/trustAnchor`` is nil): refusing it would only make the
/// client send `none` instead. ``enterprise(allowedAAGUIDs:)`` is for staff with issued security keys.
/// ``conformance`` is what the FIDO2 conformance tool holds a server to: `none` and self accepted, any chain presented
/// must be trusted.
///
/// | policy | `none`, self | a chain no accepted root vouches for | a chain to an accepted root | metadata |
/// |---|---|---|---|---|
/// | ``passkeys`` | registered | registered, untrusted | registered, trusted | never required |
/// | ``conformance`` | registered | refused | registered, trusted | required for the model a chain names |
/// | ``enterprise(allowedAAGUIDs:)`` | refused | refused | registered when the model is bound and allowed | required for the bound model |
public struct AttestationPolicy: Sendable {
    /// The credential's attestation must chain to a configured root or one of its model's metadata roots.
    public var requireTrustedAttestation: Bool
    /// The attestation types accepted.
    public var allowedTypes: Set<AttestationType>
    /// The models accepted, by AAGUID (16 bytes); nil accepts any. A list implies trusted attestation, and only an
    /// AAGUID the attestation binds (``VerifiedAttestation/ModelBinding``) can be on it: otherwise it is the client's word.
    public var allowedAAGUIDs: Set<[UInt8]>?
    /// Whether an authenticator whose model the Metadata Service does not know may register (most synced passkeys). A
    /// model the attestation does not bind counts as unknown, whatever AAGUID it claims.
    public var allowsAuthenticatorsWithoutMetadata: Bool
    /// The user must be verified (UV) at registration, whatever the options asked.
    public var requiresUserVerification: Bool
    /// A certificate chain, when the attestation presents one, must reach an accepted root at the ceremony's time;
    /// `none` and self attestation, which present none, are not affected. A chain that fails is a forgery or a broken
    /// authenticator, never something to store as merely untrusted.
    public var refusesUntrustedChains: Bool = false
    /// An attestation that presents a chain and names a model (a non-zero AAGUID, or a U2F key) needs the Metadata
    /// Service's entry for that model. Only stricter: an unbound claim can refuse, never admit.
    public var chainsNeedMetadata: Bool = false
    /// What the registration options ask the browser for (`attestation`): `direct` when the policy checks chains, for
    /// a browser strips whatever attestation it was not asked for; `none` otherwise, which spares the user a
    /// browser's prompt about sharing the authenticator's make and model.
    public var conveyance: String {
        requireTrustedAttestation || refusesUntrustedChains ? "direct" : "none"
    }

    public init(
        requireTrustedAttestation: Bool, allowedTypes: Set<AttestationType> = Set(AttestationType.allCases),
        allowedAAGUIDs: Set<[UInt8]>? = nil, allowsAuthenticatorsWithoutMetadata: Bool, requiresUserVerification: Bool
    ) {
        self.requireTrustedAttestation = requireTrustedAttestation || allowedAAGUIDs != nil
        self.allowedTypes = allowedTypes
        self.allowedAAGUIDs = allowedAAGUIDs
        self.allowsAuthenticatorsWithoutMetadata = allowsAuthenticatorsWithoutMetadata
        self.requiresUserVerification = requiresUserVerification
    }

    /// The default: consumer passkeys, user verification required (see the type's documentation).
    public static let passkeys = AttestationPolicy(
        requireTrustedAttestation: false, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: true)

    /// What the FIDO2 conformance tool expects: `none` and self accepted, a presented chain refused unless it reaches
    /// an accepted root, and the Metadata Service's entry required for the model such a chain names; user
    /// verification required.
    public static let conformance: AttestationPolicy = {
        var policy = AttestationPolicy(requireTrustedAttestation: false, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: true)
        policy.refusesUntrustedChains = true
        policy.chainsNeedMetadata = true
        return policy
    }()

    /// Issued security keys: trusted attestation from one of `allowedAAGUIDs` (any model with metadata when nil),
    /// never `none` or self, user verification required.
    public static func enterprise(allowedAAGUIDs: Set<[UInt8]>?) -> AttestationPolicy {
        AttestationPolicy(
            requireTrustedAttestation: true, allowedTypes: [.basic, .attCA, .anonCA], allowedAAGUIDs: allowedAAGUIDs,
            allowsAuthenticatorsWithoutMetadata: false, requiresUserVerification: true)
    }
}
