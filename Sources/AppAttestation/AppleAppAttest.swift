import CBOR
import Crypto
import FIDOAttestation
import Foundation
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// The App Attest environment a key was made in: its AAGUID says which (Apple's attestation step 8).
public enum AppAttestEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case production
    case development

    /// `appattest` and seven zero bytes, or `appattestdevelop`.
    public var aaguid: [UInt8] {
        switch self {
        case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        case .development: Array("appattestdevelop".utf8)
        }
    }
}

/// An App Attest key that passed attestation: what the relying party stores per app instance, and checks each
/// later assertion against.
public struct AttestedAppKey: Sendable, Hashable {
    /// SHA-256 of the public key, as `DCAppAttestService` names the key (32 bytes).
    public let keyID: [UInt8]
    /// The P-256 public key, X9.62 uncompressed (65 bytes).
    public let publicKey: [UInt8]
    /// The app (Team ID "." bundle ID) whose rpIdHash the attestation carries.
    public let appID: String
    public let environment: AppAttestEnvironment
    /// The counter to hold later assertions to: 0 after attestation.
    public let counter: UInt32
    /// Apple's receipt (PKCS #7), kept to ask Apple for a fresh one and the fraud metric; not part of the decision.
    public let receipt: [UInt8]

    /// A key as the relying party stored it.
    public init(keyID: [UInt8], publicKey: [UInt8], appID: String, environment: AppAttestEnvironment, counter: UInt32, receipt: [UInt8]) {
        self.keyID = keyID
        self.publicKey = publicKey
        self.appID = appID
        self.environment = environment
        self.counter = counter
        self.receipt = receipt
    }
}

/// Apple's App Attest verified as Apple documents it ("Validating apps that connect to your server"), for the apps
/// and environments a relying party accepts, against Apple's App Attestation Root CA or the roots it is given.
///
/// It takes the client data hash as given, not the challenge: the relying party decides what the app hashed (our
/// server's contract is in the FIDOServerCore catalogue), and Apple's own sample signs a challenge unhashed.
public struct AppleAppAttest: Sendable {
    /// The accepted app IDs, each Team ID "." bundle ID.
    public let appIDs: [String]
    public let environments: Set<AppAttestEnvironment>
    /// The trust anchors: Apple's App Attestation Root CA unless a test or a private deployment names others.
    public let roots: [Certificate]
    private let appIDHashes: [(hash: [UInt8], appID: String)]

    public init(appIDs: [String], environments: Set<AppAttestEnvironment>, roots: [Certificate] = [AppleAppAttest.appleRoot]) {
        self.appIDs = appIDs
        self.environments = environments
        self.roots = roots
        appIDHashes = appIDs.map { (Array(SHA256.hash(data: Array($0.utf8))), $0) }
    }

    /// Larger than any attestation Apple makes (about 5.5 KB with its receipt).
    public static let maximumObjectBytes = 32 * 1024
    static let maximumCertificates = 4

    /// Verifies an attestation object (`DCAppAttestService.attestKey`) for `keyID` and `clientDataHash` at `now`
    /// (Apple's attestation steps 1–9) and returns the key to store with counter 0.
    public func verifyAttestation(
        _ attestationObject: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], at now: Date
    ) async throws(AppAttestError) -> AttestedAppKey {
        let (key, certificates) = try checkAttestation(attestationObject, keyID: keyID, clientDataHash: clientDataHash)
        // Step 1: the chain reaches a pinned root now. Anyone can make a certificate with Apple's names and this
        // object's contents; only the root's key makes it Apple's.
        guard await Self.chainIsTrusted(certificates, roots: roots, at: now) else { throw AppAttestError(.chainNotTrusted) }
        return key
    }

    /// Steps 2–9 of the attestation, every step but the chain: the key the object attests, if its certificates
    /// reach a root (for ``verifyAttestation(_:keyID:clientDataHash:at:)`` and the fuzz target, which has no root).
    @_spi(Fuzzing)
    public func checkAttestation(
        _ attestationObject: [UInt8], keyID: [UInt8], clientDataHash: [UInt8]
    ) throws(AppAttestError) -> (key: AttestedAppKey, certificates: [Certificate]) {
        let map = try Self.decodeMap(attestationObject, what: "attestation object")
        guard let fmt = map[text: "fmt"]?.text else { throw .malformed("fmt is missing or not text") }
        guard fmt == "apple-appattest" else { throw AppAttestError(.formatUnexpected(fmt)) }
        guard let statement = map[text: "attStmt"]?.map else { throw .malformed("attStmt is missing or not a map") }
        guard let authData = map[text: "authData"]?.bytes else { throw .malformed("authData is missing or not bytes") }
        guard let x5c = statement[text: "x5c"]?.array, (2...Self.maximumCertificates).contains(x5c.count) else {
            throw .malformed("attStmt.x5c must hold 2...\(Self.maximumCertificates) certificates")
        }
        let receipt = statement[text: "receipt"]?.bytes ?? []
        var certificates: [Certificate] = []
        for (index, item) in x5c.enumerated() {
            guard let der = item.bytes, let certificate = try? Certificate(derEncoded: der) else {
                throw AppAttestError(.certificateUnreadable(index: index))
            }
            certificates.append(certificate)
        }
        let parsed = try AuthData(authData, attested: true)
        // Step 6: the app. The steps run in an order that lets each refusal name its own; the nonce covers authData.
        guard let appID = appIDHashes.first(where: { $0.hash == parsed.rpIDHash })?.appID else { throw AppAttestError(.appIDNotAccepted) }
        // Step 7: a new key has counted nothing yet.
        guard parsed.counter == 0 else { throw AppAttestError(.counterNotZero(parsed.counter)) }
        // Step 8: production keys and development keys are told apart by the AAGUID; a development build's key must
        // not pass where only the App Store build is accepted.
        guard let environment = environments.first(where: { $0.aaguid == parsed.aaguid }) else { throw AppAttestError(.environmentNotAccepted) }
        // Step 5: the key ID names the leaf's key.
        guard let leafKey = P256.Signing.PublicKey(certificates[0].publicKey) else { throw .malformed("the leaf's key is not P-256") }
        let publicKey = Array(leafKey.x963Representation)
        guard Array(SHA256.hash(data: publicKey)) == keyID else { throw AppAttestError(.keyIDMismatch) }
        // Step 9: the credential is that key.
        guard parsed.credentialID == keyID else { throw AppAttestError(.credentialIDMismatch) }
        // Steps 2–4: the leaf certifies this authData for this client data, so the attestation is this challenge's.
        guard let value = certificates[0].extensions[oid: AppleNonceExtension.oid]?.value, let certified = AppleNonceExtension.nonce(in: value) else {
            throw AppAttestError(.nonceMissing)
        }
        guard certified == Array(SHA256.hash(data: authData + clientDataHash)) else { throw AppAttestError(.nonceMismatch) }
        let key = AttestedAppKey(keyID: keyID, publicKey: publicKey, appID: appID, environment: environment, counter: 0, receipt: receipt)
        return (key, certificates)
    }

    /// Verifies an assertion (`DCAppAttestService.generateAssertion`) made by `key` over `clientDataHash` (Apple's
    /// assertion steps 2–5) and returns its counter, the one to store. The app must still be accepted.
    public func verifyAssertion(
        _ assertion: [UInt8], clientDataHash: [UInt8], key: AttestedAppKey, storedCounter: UInt32
    ) throws(AppAttestError) -> UInt32 {
        let map = try Self.decodeMap(assertion, what: "assertion")
        guard let signature = map[text: "signature"]?.bytes else { throw .malformed("signature is missing or not bytes") }
        guard let authenticatorData = map[text: "authenticatorData"]?.bytes else {
            throw .malformed("authenticatorData is missing or not bytes")
        }
        // Assertions carry no attested credential data although AT may be set: rpIdHash ‖ flags ‖ counter.
        let parsed = try AuthData(authenticatorData, attested: false)
        guard let publicKey = try? P256.Signing.PublicKey(x963Representation: key.publicKey) else {
            throw .malformed("the stored key is not a P-256 point")
        }
        // Step 3: ECDSA over the nonce, which the signature scheme hashes once more.
        let nonce = Array(SHA256.hash(data: authenticatorData + clientDataHash))
        guard let ecdsa = try? P256.Signing.ECDSASignature(derRepresentation: signature), publicKey.isValidSignature(ecdsa, for: nonce) else {
            throw AppAttestError(.signatureInvalid)
        }
        // Step 4: the key's app, still accepted.
        guard appIDHashes.contains(where: { $0.appID == key.appID && $0.hash == parsed.rpIDHash }) else {
            throw AppAttestError(.appIDNotAccepted)
        }
        // Step 5: strictly increasing, so an assertion is used once and a copied key shows.
        guard parsed.counter > storedCounter else { throw AppAttestError(.counterNotIncreased(stored: storedCounter, received: parsed.counter)) }
        return parsed.counter
    }

    /// Apple App Attestation Root CA (P-384, valid 2020-03-18 to 2045-03-15), as Apple publishes it at
    /// https://www.apple.com/certificateauthority/Apple_App_Attestation_Root_CA.pem; SHA-256 fingerprint
    /// 1C:B9:82:3B:A2:8B:A6:AD:2D:33:A0:06:94:1D:E2:AE:4F:51:3E:F1:D4:E8:31:B9:F7:E0:FA:7B:62:42:C9:32.
    public static let appleRootPEM = """
        -----BEGIN CERTIFICATE-----
        MIICITCCAaegAwIBAgIQC/O+DvHN0uD7jG5yH2IXmDAKBggqhkjOPQQDAzBSMSYw
        JAYDVQQDDB1BcHBsZSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTETMBEGA1UECgwK
        QXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTAeFw0yMDAzMTgxODMyNTNa
        Fw00NTAzMTUwMDAwMDBaMFIxJjAkBgNVBAMMHUFwcGxlIEFwcCBBdHRlc3RhdGlv
        biBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJbmMuMRMwEQYDVQQIDApDYWxpZm9y
        bmlhMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAERTHhmLW07ATaFQIEVwTtT4dyctdh
        NbJhFs/Ii2FdCgAHGbpphY3+d8qjuDngIN3WVhQUBHAoMeQ/cLiP1sOUtgjqK9au
        Yen1mMEvRq9Sk3Jm5X8U62H+xTD3FE9TgS41o0IwQDAPBgNVHRMBAf8EBTADAQH/
        MB0GA1UdDgQWBBSskRBTM72+aEH/pwyp5frq5eWKoTAOBgNVHQ8BAf8EBAMCAQYw
        CgYIKoZIzj0EAwMDaAAwZQIwQgFGnByvsiVbpTKwSga0kP0e8EeDS4+sQmTvb7vn
        53O5+FRXgeLhpJ06ysC5PrOyAjEAp5U4xDgEgllF7En3VcE3iexZZtKeYnpqtijV
        oyFraWVIyd/dganmrduC1bmTBGwD
        -----END CERTIFICATE-----
        """

    /// ``appleRootPEM``, parsed.
    public static let appleRoot: Certificate = {
        // A constant of this file: a failure here is a build defect, caught by the first test that verifies.
        try! Certificate(pemEncoded: appleRootPEM)
    }()

    static func decodeMap(_ bytes: [UInt8], what: String) throws(AppAttestError) -> CBORMap {
        guard bytes.count <= maximumObjectBytes else { throw .malformed("\(what) is larger than \(maximumObjectBytes) bytes") }
        let value: CBOR
        do { value = try CBORDecoder(rules: .wellFormed, maximumDepth: 8, maximumBytes: maximumObjectBytes).decode(bytes) } catch {
            throw .malformed("\(what) is not CBOR (\(error))")
        }
        guard let map = value.map else { throw .malformed("\(what) is not a CBOR map") }
        return map
    }

    static func chainIsTrusted(_ certificates: [Certificate], roots: [Certificate], at now: Date) async -> Bool {
        guard let leaf = certificates.first, !roots.isEmpty else { return false }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy(fixedExpiryValidationTime: now) }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(Array(certificates.dropFirst())))
        if case .validCertificate = result { return true }
        return false
    }
}

/// App Attest's authenticator data, read as Apple writes it: an attestation's has the AAGUID and the credential ID
/// after the counter (its key and any further bytes are not read: the leaf certifies the key, the nonce the bytes); an
/// assertion's is rpIdHash ‖ flags ‖ counter, whatever the flags say.
struct AuthData {
    let rpIDHash: [UInt8]
    let counter: UInt32
    let aaguid: [UInt8]
    let credentialID: [UInt8]

    init(_ bytes: [UInt8], attested: Bool) throws(AppAttestError) {
        guard bytes.count >= 37 else { throw .malformed("authenticator data is \(bytes.count) bytes, fewer than 37") }
        rpIDHash = Array(bytes[0..<32])
        counter = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        guard attested else {
            aaguid = []
            credentialID = []
            return
        }
        guard bytes.count >= 55 else { throw .malformed("authenticator data ends before the attested credential data") }
        aaguid = Array(bytes[37..<53])
        let length = Int(bytes[53]) << 8 | Int(bytes[54])
        guard bytes.count >= 55 + length else { throw .malformed("authenticator data ends inside the credential ID") }
        credentialID = Array(bytes[55..<(55 + length)])
    }
}
