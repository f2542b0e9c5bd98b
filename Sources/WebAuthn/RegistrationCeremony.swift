import CBOR
import Crypto
import FIDOAttestation
import Foundation
import X509

/// What the client sent back from `navigator.credentials.create()`.
public struct RegistrationResponse: Sendable {
    /// `rawId`: the credential ID; it must be the one in the attested credential data.
    public var credentialID: [UInt8]
    public var clientDataJSON: [UInt8]
    public var attestationObject: [UInt8]
    /// `getTransports()`, kept with the credential as hints for later sign-ins.
    public var transports: [String]

    public init(credentialID: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8], transports: [String] = []) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

/// What the relying party asked for in `PublicKeyCredentialCreationOptions`.
public struct RegistrationExpectation: Sendable {
    public var challenge: [UInt8]
    public var userVerification: UserVerificationRequirement
    /// `pubKeyCredParams`, in the relying party's order. Empty means the client's default, ES256 and RS256 (§5.4).
    public var algorithms: [COSEAlgorithm]
    /// `mediation: "conditional"` (conditional create): the browser made the passkey without asking, so UP may be clear.
    public var conditional: Bool

    public init(
        challenge: [UInt8], userVerification: UserVerificationRequirement = .preferred, algorithms: [COSEAlgorithm] = [.edDSA, .es256, .rs256],
        conditional: Bool = false
    ) {
        self.challenge = challenge
        self.userVerification = userVerification
        self.algorithms = algorithms
        self.conditional = conditional
    }
}

/// A verified registration: the credential record to store (§7.1 step 27) and what is known about its authenticator.
public struct VerifiedRegistration: Sendable {
    public var credentialID: [UInt8]
    public var publicKey: COSEKey
    public var signCount: UInt32
    /// UV at registration (`uvInitialized`).
    public var userVerified: Bool
    public var backupEligible: Bool
    public var backupState: Bool
    /// The model the authenticator names (16 bytes): the client's word unless ``modelBound``.
    public var aaguid: [UInt8]
    /// Whether the attestation binds the model (``VerifiedAttestation/ModelBinding``): ``aaguid`` signed by a key
    /// only its maker holds, or a U2F key whose certificate the Metadata Service knows.
    public var modelBound: Bool
    public var attestation: VerifiedAttestation
    /// The root the attestation chains to; nil for `none`, self, and an attestation no accepted root vouches for.
    public var trustAnchor: Certificate?
    /// The Metadata Service's entry for the model the attestation binds, when it has one.
    public var metadata: FIDO2Metadata?
    public var transports: [String]
    /// The authenticator extension outputs' identifiers, unprocessed (§7.1 step 28 is the caller's: it knows what it asked for).
    public var extensions: [String]
    /// The `credProtect` level the authenticator reports applying (CTAP 2.1 §12.1): 1 user verification optional, 2
    /// optional with the credential ID list, 3 required; nil when it reports none (or a value outside 1…3).
    public var credentialProtection: Int?
}

/// The registration ceremony (WebAuthn §7.1), the relying party's steps in order; every refusal is a
/// ``WebAuthnError`` that names its step. Step 26 (the credential ID is not registered yet) and step 29 (storing
/// the record) are the caller's: they need its database.
public struct RegistrationCeremony: Sendable {
    public var relyingParty: RelyingParty
    public var policy: AttestationPolicy
    public var trust: AttestationTrust

    public init(relyingParty: RelyingParty, policy: AttestationPolicy = .passkeys, trust: AttestationTrust = AttestationTrust()) {
        self.relyingParty = relyingParty
        self.policy = policy
        self.trust = trust
    }

    /// The client's default `pubKeyCredParams` when the options name none (§5.4).
    static let defaultAlgorithms: [COSEAlgorithm] = [.es256, .rs256]

    public func verify(
        _ response: RegistrationResponse, expected: RegistrationExpectation, now: Date = Date()
    ) async throws(WebAuthnError) -> VerifiedRegistration {
        func fail(_ reason: WebAuthnError.Reason) -> WebAuthnError { WebAuthnError(.registration, reason) }
        // Steps 5–11.
        guard let client = CollectedClientData(bytes: response.clientDataJSON) else { throw fail(.clientDataMalformed) }
        try relyingParty.check(client, type: "webauthn.create", challenge: expected.challenge, ceremony: .registration)
        // Step 12.
        let clientDataHash = Array(SHA256.hash(data: response.clientDataJSON))
        // Step 13.
        let object = try AttestationObject(bytes: response.attestationObject)
        let authenticatorData = object.authenticatorData
        guard let credential = authenticatorData.attestedCredentialData else { throw fail(.attestedCredentialDataMissing) }
        guard credential.credentialID == response.credentialID else { throw fail(.credentialIDMismatch) }
        // Steps 14–17 (BS without BE, and step 25's length, are refused as the data is parsed).
        guard authenticatorData.rpIDHash == relyingParty.idHash else { throw fail(.rpIDHashMismatch) }
        // Conditional create: the browser registers a passkey right after a password sign-in, without a gesture.
        guard authenticatorData.flags.contains(.userPresent) || expected.conditional else { throw fail(.userNotPresent) }
        if expected.userVerification == .required || policy.requiresUserVerification, !authenticatorData.flags.contains(.userVerified) {
            throw fail(.userNotVerified)
        }
        // Step 20.
        let offered = expected.algorithms.isEmpty ? Self.defaultAlgorithms : expected.algorithms
        guard offered.contains(credential.publicKey.algorithm) else { throw fail(.algorithmNotOffered(credential.publicKey.algorithm.rawValue)) }
        // Steps 21–22.
        let attestation = try object.verify(clientDataHash: clientDataHash, now: now)
        // Step 23: what the Metadata Service says about the model. The model is only what the attestation binds
        // (``VerifiedAttestation/ModelBinding``): a claimed AAGUID can make the client refused (a model reported
        // compromised or revoked is refused whatever the attestation: a revoked model's `none` is no better than its
        // `packed`), but never trusted, allowed or counted as having metadata.
        let named = credential.aaguid != AAGUID.zero
        let claimedMetadata = named ? trust.metadata(credential.aaguid) : nil
        var keyIdentifierMetadata: FIDO2Metadata?
        if case .keyIdentifier(let identifier) = attestation.modelBinding { keyIdentifierMetadata = trust.keyIdentifierMetadata(identifier) }
        for metadata in [claimedMetadata, keyIdentifierMetadata].compactMap({ $0 }) {
            if let report = StatusReport.registrationRefusal(in: metadata.statusReports, attestationCertificates: attestation.trustPath, at: now) {
                throw fail(.authenticatorRevoked(report.status.rawValue))
            }
        }
        // Step 24: the type the policy accepts, then the chain (every chain of a compound statement) must reach a
        // root the relying party accepts.
        guard policy.allowedTypes.contains(attestation.type) else { throw fail(.attestationTypeNotAllowed(attestation.type)) }
        let anchor = try await trustAnchor(attestation, metadata: keyIdentifierMetadata ?? claimedMetadata, now: now)
        // The model is bound only through a chain that reaches an accepted root: anyone can make a certificate that
        // names an AAGUID.
        var boundAAGUID: [UInt8]?
        var modelMetadata: FIDO2Metadata?
        if let anchor {
            switch attestation.modelBinding {
            case .certificate where named:
                boundAAGUID = credential.aaguid
                modelMetadata = claimedMetadata
            case .attestationKey where named:
                // A certificate without the extension binds the model only through a root of that model's own
                // metadata, which FIDO certifies for that model alone.
                let roots = (claimedMetadata?.attestationRootCertificates ?? []).compactMap { try? Certificate(derEncoded: $0) }
                if roots.contains(anchor) {
                    boundAAGUID = credential.aaguid
                    modelMetadata = claimedMetadata
                }
            case .keyIdentifier: modelMetadata = keyIdentifierMetadata
            default: break
            }
        }
        let presentsChain = !attestation.certificates.isEmpty || attestation.components.contains { !$0.certificates.isEmpty }
        if policy.requireTrustedAttestation || (policy.refusesUntrustedChains && presentsChain), anchor == nil { throw fail(.attestationNotTrusted) }
        if modelMetadata == nil, !policy.allowsAuthenticatorsWithoutMetadata { throw fail(.metadataMissing) }
        var namesModel = named
        if case .keyIdentifier = attestation.modelBinding { namesModel = true }
        if policy.chainsNeedMetadata, presentsChain, namesModel, (claimedMetadata ?? keyIdentifierMetadata) == nil { throw fail(.metadataMissing) }
        if let allowed = policy.allowedAAGUIDs, !(boundAAGUID.map(allowed.contains) ?? false) { throw fail(.authenticatorNotAllowed) }

        return VerifiedRegistration(
            credentialID: credential.credentialID, publicKey: credential.publicKey, signCount: authenticatorData.signCount,
            userVerified: authenticatorData.flags.contains(.userVerified), backupEligible: authenticatorData.flags.contains(.backupEligible),
            backupState: authenticatorData.flags.contains(.backupState), aaguid: credential.aaguid,
            modelBound: boundAAGUID != nil || modelMetadata != nil,
            attestation: attestation, trustAnchor: anchor, metadata: modelMetadata, transports: response.transports,
            extensions: authenticatorData.extensions?.keys.compactMap(\.text) ?? [],
            credentialProtection: authenticatorData.extensions?[text: "credProtect"]?.int.flatMap { (1...3).contains($0) ? Int($0) : nil })
    }

    /// The root every certificate chain of `attestation` reaches (the configured roots and the model's metadata
    /// roots), or nil when there is no chain or one of them reaches none. A chain with a certificate a configured
    /// revocation list revokes is refused (step 24), whatever the policy.
    private func trustAnchor(_ attestation: VerifiedAttestation, metadata: FIDO2Metadata?, now: Date) async throws(WebAuthnError) -> Certificate? {
        let chains = (attestation.components.isEmpty ? [attestation] : attestation.components).map(\.certificates).filter { !$0.isEmpty }
        guard !chains.isEmpty else { return nil }
        let roots = trust.roots + (metadata?.attestationRootCertificates ?? []).compactMap { try? Certificate(derEncoded: $0) }
        var anchor: Certificate?
        for chain in chains {
            guard let validated = await AttestationTrust.validatedChain(of: chain, among: roots, at: now), let root = validated.last else {
                return nil
            }
            if let revoked = trust.revoked(in: validated, at: now) {
                throw WebAuthnError(.registration, .attestationCertificateRevoked(revoked.subject.description))
            }
            anchor = anchor ?? root
        }
        return anchor
    }
}

/// An attestation object (WebAuthn §6.5.4): the statement format, the statement and the authenticator data, read
/// as §7.1 step 13 reads them, and verified by its format's procedure (steps 21 and 22) apart from the rest of the
/// ceremony: what a tool that checks attestation offline needs.
public struct AttestationObject: Sendable {
    /// `fmt`.
    public let format: String
    /// `attStmt`: a map, or for `compound` an array.
    public let statement: CBOR
    public let authenticatorData: AuthenticatorData

    /// The object in `bytes`: a CBOR map of exactly `fmt` (text), `attStmt` (a map; an array for `compound`) and
    /// `authData` (bytes), read under the well-formed rules.
    public init(bytes: [UInt8]) throws(WebAuthnError) {
        func fail(_ detail: String) -> WebAuthnError { WebAuthnError(.registration, .attestationObjectMalformed(detail)) }
        let value: CBOR
        do { value = try CBORDecoder(rules: .wellFormed).decode(bytes) } catch { throw fail("\(error)") }
        guard let map = value.map else { throw fail("not a CBOR map") }
        guard let format = map[text: "fmt"]?.text else { throw fail("fmt is missing or not text") }
        guard let statement = map[text: "attStmt"], statement.map != nil || statement.array != nil else {
            throw fail("attStmt is missing or not a map")
        }
        guard let data = map[text: "authData"]?.bytes else { throw fail("authData is missing or not bytes") }
        guard map.entries.count == 3 else { throw fail("it has members besides fmt, attStmt and authData") }
        do { authenticatorData = try AuthenticatorData(bytes: data) } catch {
            throw WebAuthnError(.registration, .authenticatorDataMalformed(error.reason))
        }
        self.format = format
        self.statement = statement
    }

    /// Steps 21 and 22: the format is one this module verifies (matched case-sensitively), and its procedure accepts
    /// the statement over this authenticator data and `clientDataHash`, with certificates judged at `now`.
    public func verify(clientDataHash: [UInt8], now: Date) throws(WebAuthnError) -> VerifiedAttestation {
        guard let credential = authenticatorData.attestedCredentialData else { throw WebAuthnError(.registration, .attestedCredentialDataMissing) }
        guard AttestationFormats.supported.contains(format) else { throw WebAuthnError(.registration, .attestationFormatUnsupported(format)) }
        let input = AttestationInput(
            statement: statement, authenticatorData: authenticatorData, credential: credential,
            clientDataHash: clientDataHash, now: now)
        do { return try AttestationFormats.verify(format: format, input) } catch { throw WebAuthnError(.registration, .attestationInvalid(error)) }
    }
}
