import Crypto
import FIDOAttestation
import Foundation
import Primitives
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509
import _CryptoExtras

/// What the server issued for a registration (looked up and consumed by the caller before verifying).
public struct IssuedRegistration: Sendable {
    public var challenge: String
    public var username: String
    public var policy: Policy
    public init(challenge: String, username: String, policy: Policy) {
        self.challenge = challenge
        self.username = username
        self.policy = policy
    }
}

/// A registration that passed verification: what the server stores (uaf-spec §5, Registration step 4).
public struct VerifiedRegistration: Sendable, Hashable {
    public var aaid: String
    /// base64url of the KeyID bytes.
    public var keyID: String
    public var publicKey: [UInt8]
    public var publicKeyEncoding: PublicKeyEncoding
    public var signatureAlgorithm: SignatureAlgorithm
    public var signCounter: UInt32
    public var registrationCounter: UInt32
    public var authenticatorVersion: UInt16
    public var attestationType: AttestationType
    public var username: String
    /// What the secure hardware and the Android system said about the key, when its full basic attestation was an
    /// Android key attestation (the app it was made for, the boot state): for a relying party's app checks.
    public var androidKeyDescription: AndroidKeyDescription?

    public init(
        aaid: String, keyID: String, publicKey: [UInt8], publicKeyEncoding: PublicKeyEncoding, signatureAlgorithm: SignatureAlgorithm,
        signCounter: UInt32, registrationCounter: UInt32, authenticatorVersion: UInt16, attestationType: AttestationType, username: String,
        androidKeyDescription: AndroidKeyDescription? = nil
    ) {
        self.aaid = aaid
        self.keyID = keyID
        self.publicKey = publicKey
        self.publicKeyEncoding = publicKeyEncoding
        self.signatureAlgorithm = signatureAlgorithm
        self.signCounter = signCounter
        self.registrationCounter = registrationCounter
        self.authenticatorVersion = authenticatorVersion
        self.attestationType = attestationType
        self.username = username
        self.androidKeyDescription = androidKeyDescription
    }
}

/// Verifies RegistrationResponses (uaf-spec §5 "Both operations" and "Registration").
public struct RegistrationVerifier: Sendable {
    public var configuration: RelyingPartyConfiguration
    public var metadata: UAFMetadata

    public init(configuration: RelyingPartyConfiguration, metadata: UAFMetadata) {
        self.configuration = configuration
        self.metadata = metadata
    }

    /// Verifies `response` against what was issued.
    /// - Parameters:
    ///   - response: the device's RegistrationResponse.
    ///   - issued: what the server issued: the challenge, the policy and the username.
    ///   - now: the time attestation certificates must be valid at.
    ///   - isRegistered: whether an (AAID, base64url KeyID) is already registered (Registration step 3). It is
    ///     required: a verifier that cannot see the repository must not pretend the key is new. Errors it throws
    ///     (storage failures) pass through; every rejection is a ``UAFVerificationError``.
    public func verify(
        _ response: RegistrationResponse, issued: IssuedRegistration, now: Date = Date(),
        isRegistered: (String, String) async throws -> Bool
    ) async throws -> [VerifiedRegistration] {
        // Steps 1 and 3.
        let expectedHash = try CommonChecks.checkHeaderAndFinalChallenge(
            header: response.header, expectedOp: .registration, fcParams: response.fcParams,
            assertionCount: response.assertions.count, issuedChallenge: issued.challenge, configuration: configuration)

        var verified: [VerifiedRegistration] = []
        var used: [AuthenticatorCapabilities] = []
        for item in response.assertions {
            // Step 4. Scheme and strict TLV parsing.
            try CommonChecks.checkExtensions(item.exts, configuration: configuration)
            let bytes = try CommonChecks.assertionBytes(scheme: item.assertionScheme, assertion: item.assertion)
            let assertion: RegistrationAssertion
            do { assertion = try RegistrationAssertion(bytes: bytes) } catch { throw UAFVerificationError.malformedAssertion(error) }
            let krd = assertion.keyRegistrationData
            // Steps 5 and 6. Metadata, algorithm, version, final challenge hash.
            let entry = try CommonChecks.checkAuthenticator(
                aaid: krd.aaid, algorithm: krd.signatureAlgorithm, version: krd.authenticatorVersion,
                finalChallengeHash: krd.finalChallengeHash, expectedHash: expectedHash, metadata: metadata, configuration: configuration)
            let statement = entry.statement
            // A revoked or compromised authenticator registers no new key (1493), whatever its attestation says.
            if let report = metadata.registrationRefusal(aaid: krd.aaid, attestationCertificates: assertion.attestation.certificates, at: now) {
                throw UAFVerificationError.authenticatorRevoked(aaid: krd.aaid, status: report.status)
            }
            guard entry.keyEncodings.contains(krd.publicKeyEncoding) else {
                throw UAFVerificationError.keyEncodingNotAllowed(krd.publicKeyEncoding)
            }
            // KRD AuthenticationMode must be 0x01 for registration.
            guard krd.authenticationMode == AuthenticationMode.userVerified.rawValue else {
                throw UAFVerificationError.invalidAuthenticationMode(krd.authenticationMode)
            }
            guard let publicKey = UAFPublicKey(bytes: krd.publicKey, encoding: krd.publicKeyEncoding) else {
                throw UAFVerificationError.unacceptablePublicKey
            }
            // Registration step 1. Attestation, of a type the metadata allows.
            guard statement.attestationTypes.contains(assertion.attestation.type.rawValue) else {
                throw UAFVerificationError.attestationTypeNotAllowed(assertion.attestation.type)
            }
            let androidKeyDescription = try await verifyAttestation(assertion, publicKey: publicKey, statement: statement, now: now)
            // Registration step 3. (AAID, KeyID) must not be registered already.
            let keyID = Base64URL.encode(krd.keyID)
            guard !verified.contains(where: { AAID.equal($0.aaid, krd.aaid) && $0.keyID == keyID }) else {
                throw UAFVerificationError.keyIDAlreadyRegistered
            }
            guard try await !isRegistered(krd.aaid, keyID) else { throw UAFVerificationError.keyIDAlreadyRegistered }
            guard !used.contains(where: { AAID.equal($0.aaid, krd.aaid) }) else {
                throw UAFVerificationError.duplicateAssertion
            }
            // The matcher sees the new KeyID too, so a `disallowed` entry naming keys takes effect (step 2).
            var capabilities = entry.capabilities
            capabilities.keyIDs = [keyID]
            used.append(capabilities)
            verified.append(
                VerifiedRegistration(
                    aaid: krd.aaid, keyID: keyID, publicKey: krd.publicKey, publicKeyEncoding: krd.publicKeyEncoding,
                    signatureAlgorithm: krd.signatureAlgorithm, signCounter: krd.signCounter, registrationCounter: krd.registrationCounter,
                    authenticatorVersion: krd.authenticatorVersion, attestationType: assertion.attestation.type, username: issued.username,
                    androidKeyDescription: androidKeyDescription))
        }
        // Registration step 2. The authenticators used satisfy the policy sent, including `disallowed`.
        guard PolicyMatcher.isSatisfied(issued.policy, by: used) else { throw UAFVerificationError.policyNotSatisfied }
        return verified
    }

    /// Verifies the assertion's attestation; the Android key description when it was an Android key attestation.
    private func verifyAttestation(
        _ assertion: RegistrationAssertion, publicKey: UAFPublicKey, statement: MetadataStatement, now: Date
    ) async throws(UAFVerificationError) -> AndroidKeyDescription? {
        let algorithm = assertion.keyRegistrationData.signatureAlgorithm
        switch assertion.attestation {
        case .basicSurrogate(let signature):
            // Surrogate: the new key signs its own KRD (self attestation; proves possession only).
            guard SignatureSuite.verify(signature: signature, over: assertion.signedBytes, algorithm: algorithm, key: publicKey) else {
                throw UAFVerificationError.attestationSignatureInvalid
            }
            return nil
        case .ecdaa:
            // ECDAA needs the metadata's ecdaaTrustAnchors and pairing-friendly curves; without them the attestation
            // is unverified, and an unverified attestation is refused as one (1496), never accepted as surrogate.
            throw UAFVerificationError.attestationTypeNotSupported(.ecdaa)
        case .basicFull(let signature, let certificates):
            // Full: the first certificate's key signs the KRD, and the chain leads to a metadata root.
            let leaf: AttestationCertificate
            do { leaf = try AttestationCertificate(der: certificates[0]) } catch {
                throw UAFVerificationError.attestationCertificateInvalid("the attestation certificate is not DER X.509")
            }
            let spki = leaf.subjectPublicKeyInfo
            guard
                let key = (try? P256.Signing.PublicKey(derRepresentation: spki)).map(UAFPublicKey.p256)
                    ?? (try? _RSA.Signing.PublicKey(derRepresentation: spki)).map(UAFPublicKey.rsa)
            else {
                throw UAFVerificationError.attestationCertificateInvalid("unsupported attestation key type")
            }
            guard SignatureSuite.isCompatible(algorithm, with: key),
                SignatureSuite.verify(signature: signature, over: assertion.signedBytes, algorithm: algorithm, key: key)
            else {
                throw UAFVerificationError.attestationSignatureInvalid
            }
            // Vendor root keys first (the Nevis extension; server-api E.1), then the metadata's root certificates.
            if let description = try await validateAndroidKeyAttestation(
                certificates, krd: assertion.keyRegistrationData, uafKey: publicKey,
                attestationKey: key, statement: statement, now: now)
            {
                return description
            }
            try await validateChain(certificates, leaf: leaf, statement: statement, now: now)
            return nil
        }
    }

    /// Full basic attestation through Android key attestation (our contract, after nevisFIDO's "Android Full Basic"
    /// with Google's roots): the chain's top certificate is, or is signed by, one of the statement's vendor root keys
    /// and the chain below it is a valid RFC 5280 path; its leaf is the Keystore certificate of the registered key
    /// itself, whose key attestation extension (`AndroidKeyDescription`) says the secure hardware (TEE or StrongBox)
    /// generated it for signing, bound to this registration by an `attestationChallenge` equal to the KRD's final
    /// challenge hash (the authenticator passes it to `setAttestationChallenge`). Without that binding a chain copied
    /// from any Android key would pass. Returns nil when the statement lists no vendor key or the chain does not
    /// lead to one (the root certificates are tried next), the key's description when every check passes; throws when
    /// it leads to one and a check fails.
    private func validateAndroidKeyAttestation(
        _ certificates: [[UInt8]], krd: KeyRegistrationData, uafKey: UAFPublicKey, attestationKey: UAFPublicKey,
        statement: MetadataStatement, now: Date
    ) async throws(UAFVerificationError) -> AndroidKeyDescription? {
        let vendorKeys = (statement.vendorRootKeys ?? []).compactMap { Data(base64Encoded: $0) }
            .compactMap { try? Certificate.PublicKey(derEncoded: [UInt8]($0)) }
        guard !vendorKeys.isEmpty else { return nil }
        let chain = certificates.compactMap { try? Certificate(derEncoded: $0) }
        guard chain.count == certificates.count, let leaf = chain.first, let top = chain.last else { return nil }
        // The top certificate is a vendor root itself (devices send Google's root last) or is signed by one.
        guard vendorKeys.contains(top.publicKey) || vendorKeys.contains(where: { $0.isValidSignature(top.signature, for: top) }) else {
            return nil
        }
        var verifier = Verifier(rootCertificates: CertificateStore([top])) { RFC5280Policy(fixedExpiryValidationTime: now) }
        guard case .validCertificate = await verifier.validate(leaf: leaf, intermediates: CertificateStore(Array(chain.dropFirst().dropLast())))
        else {
            throw UAFVerificationError.attestationCertificateInvalid("no valid chain to a vendor root key")
        }
        guard now >= top.notValidBefore, now <= top.notValidAfter else {
            throw UAFVerificationError.attestationCertificateInvalid("the vendor root certificate is outside its validity period")
        }
        // Only the secure hardware writes the extension, into the certificate of the key it made: the first one
        // from the root that carries it. One above the leaf would mean the leaf was issued by an attested key, not
        // by the hardware (Android's key attestation guide), so the leaf's own would be made up.
        guard !chain.dropFirst().contains(where: { $0.extensions.contains { $0.oid == AndroidKeyDescription.oid } }) else {
            throw UAFVerificationError.attestationCertificateInvalid("a certificate above the leaf carries the key attestation extension")
        }
        guard let value = leaf.extensions.first(where: { $0.oid == AndroidKeyDescription.oid })?.value,
            let description = try? AndroidKeyDescription(derEncoded: value)
        else {
            throw UAFVerificationError.attestationCertificateInvalid("the leaf has no readable Android key attestation extension")
        }
        // The attested key is the registered key: the attestation is about the key the server will trust.
        guard Self.spki(attestationKey) == Self.spki(uafKey) else {
            throw UAFVerificationError.attestationCertificateInvalid("the attested key is not the registered key")
        }
        guard description.attestationChallenge == krd.finalChallengeHash else {
            throw UAFVerificationError.attestationCertificateInvalid("the attestation challenge is not this registration's final challenge hash")
        }
        // A key only software vouches for is no better than a surrogate: full basic means secure hardware.
        guard description.attestationSecurityLevel != .software else {
            throw UAFVerificationError.attestationCertificateInvalid("the key is attested by software, not secure hardware")
        }
        guard description.hardwareOrigin == AndroidKeyDescription.originGenerated else {
            throw UAFVerificationError.attestationCertificateInvalid("the secure hardware does not say it generated the key")
        }
        guard description.hardwarePurposes.contains(AndroidKeyDescription.purposeSign) else {
            throw UAFVerificationError.attestationCertificateInvalid("the secure hardware does not list signing among the key's purposes")
        }
        return description
    }

    /// A key's DER SubjectPublicKeyInfo, to compare keys whatever form they arrived in.
    private static func spki(_ key: UAFPublicKey) -> [UInt8] {
        switch key {
        case .p256(let key): return Array(key.derRepresentation)
        case .rsa(let key): return Array(key.derRepresentation)
        }
    }

    private func validateChain(
        _ certificates: [[UInt8]], leaf: AttestationCertificate, statement: MetadataStatement, now: Date
    ) async throws(UAFVerificationError) {
        let roots = statement.attestationRootCertificates.compactMap { Data(base64Encoded: $0) }.map { [UInt8]($0) }
        guard !roots.isEmpty else { throw UAFVerificationError.attestationCertificateInvalid("the metadata lists no attestation root") }
        // The attestation certificate may itself be the trust anchor the metadata lists (as in the spec example,
        // whose self-signed certificate uses ecdsa-with-SHA1): then only its validity period is left to check.
        if roots.contains(certificates[0]) {
            guard leaf.notBefore <= now, now <= leaf.notAfter else {
                throw UAFVerificationError.attestationCertificateInvalid("outside its validity period at \(now)")
            }
            return
        }
        // Otherwise a full RFC 5280 path validation (signatures, validity, constraints) to one of the roots.
        let rootCertificates = roots.compactMap { try? Certificate(derEncoded: $0) }
        let chain = certificates.compactMap { try? Certificate(derEncoded: $0) }
        guard chain.count == certificates.count, let leafCertificate = chain.first else {
            throw UAFVerificationError.attestationCertificateInvalid("a certificate of the chain cannot be parsed")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(rootCertificates)) {
            // Validity is checked at the verification time the caller passes (the server clock; tests fix it).
            RFC5280Policy(fixedExpiryValidationTime: now)
        }
        let result = await verifier.validate(leaf: leafCertificate, intermediates: CertificateStore(Array(chain.dropFirst())))
        guard case .validCertificate = result else {
            throw UAFVerificationError.attestationCertificateInvalid("no valid chain to a metadata root")
        }
    }
}
