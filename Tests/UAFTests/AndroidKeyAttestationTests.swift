import Crypto
import FIDOAttestation
import Foundation
import Primitives
import SwiftASN1
import X509
import XCTest

@testable import UAF

/// Full basic attestation through Android key attestation: a Keystore chain (root → intermediate → the registered
/// key's certificate with the key attestation extension) built here, verified against the statement's vendor root
/// keys. Each rejection changes one thing of the valid chain.
final class AndroidKeyAttestationTests: XCTestCase {
    typealias Authority = FullAttestationTests.Authority

    static func intermediate(issuer: Authority, maxPathLength: Int = 0) throws -> Authority {
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: Date().addingTimeInterval(30 * 86400),
            issuer: issuer.certificate.subject, subject: try DistinguishedName { CommonName("Keystore batch key") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: maxPathLength))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(issuer.key))
        return Authority(key: key, certificate: certificate)
    }

    /// The Keystore certificate of `key`, issued by `issuer`, carrying `description` (none when nil).
    static func keystoreCertificate(of key: P256.Signing.PublicKey, issuer: Authority, description: AndroidKeyDescription?) throws -> [UInt8] {
        let extensionValue = try description.map { ArraySlice(try $0.derEncoded()) }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key),
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: Date().addingTimeInterval(86400),
            issuer: issuer.certificate.subject, subject: try DistinguishedName { CommonName("Android Keystore Key") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.notCertificateAuthority)
                if let extensionValue { Certificate.Extension(oid: AndroidKeyDescription.oid, critical: false, value: extensionValue) }
            }, issuerPrivateKey: .init(issuer.key))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    static let fc = try! FinalChallengeParams(appID: testAppID, challenge: "Y2hhbGxlbmdl", facetID: testFacetID).encodedFCParams()
    static var fcHash: [UInt8] { FinalChallengeParams.hash(fcParams: fc) }

    static func valid(challenge: [UInt8] = fcHash) -> AndroidKeyDescription {
        AndroidKeyDescription(
            attestationSecurityLevel: .trustedEnvironment, attestationChallenge: challenge, hardwarePurposes: [2],
            hardwareOrigin: AndroidKeyDescription.originGenerated)
    }

    /// A registration whose KRD holds `uafKey` and whose attestation `signer` signs, with `chain` (leaf first).
    static func response(uafKey: P256.Signing.PrivateKey, signer: P256.Signing.PrivateKey, chain: [[UInt8]]) throws -> RegistrationResponse {
        try FullAttestationTests.response(attestationKey: signer, chain: chain, uauth: uafKey)
    }

    static func verifier(vendorKeys: [Authority], rootCertificates: [Authority] = []) throws -> RegistrationVerifier {
        let statement = MetadataStatement(
            aaid: "F1D0#2001", description: "Android hardware-backed test authenticator",
            attestationRootCertificates: rootCertificates.map { Data($0.der).base64EncodedString() }, attestationTypes: [15879, 15880],
            userVerificationDetails: [[.init(userVerification: 2)]], authenticationAlgorithm: 2, keyProtection: 6,
            matcherProtection: 2, publicKeyAlgAndEncoding: 257,
            vendorRootKeys: vendorKeys.map { Data($0.key.publicKey.derRepresentation).base64EncodedString() })
        return RegistrationVerifier(configuration: testConfiguration, metadata: try UAFMetadata([statement]))
    }

    /// Verifies a registration of a fresh key whose chain is root → intermediate → leaf (with `description`).
    func verify(
        description: AndroidKeyDescription? = valid(), includeRoot: Bool = true, vendorKeyOfAnotherRoot: Bool = false,
        signerIsAnotherKey: Bool = false
    ) async throws -> [VerifiedRegistration] {
        let root = try FullAttestationTests.makeRoot(name: "Vendor Hardware Attestation Root")
        let batch = try Self.intermediate(issuer: root)
        let uafKey = P256.Signing.PrivateKey()
        // With `signerIsAnotherKey` the chain attests (and signs with) a Keystore key that is not the registered one.
        let attested = signerIsAnotherKey ? P256.Signing.PrivateKey() : uafKey
        let leaf = try Self.keystoreCertificate(of: attested.publicKey, issuer: batch, description: description)
        let chain = [leaf, batch.der] + (includeRoot ? [root.der] : [])
        let vendor = vendorKeyOfAnotherRoot ? try FullAttestationTests.makeRoot(name: "Other Vendor") : root
        return try await Self.verifier(vendorKeys: [vendor]).verify(
            try Self.response(uafKey: uafKey, signer: attested, chain: chain),
            issued: FullAttestationTests.issued, isRegistered: { _, _ in false })
    }

    func testAKeystoreChainToAVendorRootKeyVerifiesAsFullBasic() async throws {
        let verified = try await verify()
        XCTAssertEqual(verified.first?.attestationType, .basicFull)
    }

    /// The app and boot the Android system and the secure hardware wrote reach the relying party with the key.
    func testTheVerifiedKeyCarriesTheAppAndBootItsAttestationNames() async throws {
        var description = Self.valid()
        description.applicationID = .init(packages: [.init(name: "ch.example.bank", version: 42)], signatureDigests: [Array(repeating: 7, count: 32)])
        description.rootOfTrust = .init(verifiedBootKey: Array(repeating: 1, count: 32), deviceLocked: true, verifiedBootState: .verified)
        let verified = try await verify(description: description)
        XCTAssertEqual(verified.first?.androidKeyDescription, description)
        XCTAssertEqual(verified.first?.androidKeyDescription?.applicationID?.packages.first?.name, "ch.example.bank")
    }

    func testASurrogateRegistrationCarriesNoAndroidKeyDescription() async throws {
        let verified = try await verify()
        XCTAssertNotNil(verified.first?.androidKeyDescription, "a key attestation without app or boot still carries its description")
        XCTAssertNil(verified.first?.androidKeyDescription?.applicationID)
    }

    func testTheAppAndBootReadBackAsWrittenAndAMalformedOneReadsAsAbsent() throws {
        var description = Self.valid()
        description.applicationID = .init(
            packages: [.init(name: "ch.example.bank", version: 7), .init(name: "ch.example.shared", version: 1)],
            signatureDigests: [Array(repeating: 3, count: 32)])
        description.rootOfTrust = .init(verifiedBootKey: [9, 9], deviceLocked: false, verifiedBootState: .unverified)
        XCTAssertEqual(try AndroidKeyDescription(derEncoded: try description.derEncoded()[...]), description)
        // A package name that is not UTF-8 makes the app identity unreadable, not the whole description.
        var bytes = try description.derEncoded()
        let name = Array("ch.example.bank".utf8)
        let at = try XCTUnwrap(bytes.indices.first { Array(bytes[$0..<($0 + name.count)]) == name })
        bytes[at] = 0xFF
        let reread = try AndroidKeyDescription(derEncoded: bytes[...])
        XCTAssertNil(reread.applicationID)
        XCTAssertEqual(reread.rootOfTrust, description.rootOfTrust)
    }

    func testAChainWithoutItsRootVerifiesAgainstTheKeyThatSignedItsTop() async throws {
        let verified = try await verify(includeRoot: false)
        XCTAssertEqual(verified.first?.attestationType, .basicFull)
    }

    func testAChainToAnotherVendorFallsBackToTheRootCertificatesAndIsRefused() async throws {
        await assertRejected(.attestationCertificateInvalid("the metadata lists no attestation root"), status: .unacceptableAttestation) {
            _ = try await self.verify(vendorKeyOfAnotherRoot: true)
        }
    }

    func testAnAttestedKeyThatIsNotTheRegisteredKeyIsRefused() async throws {
        await assertRejected(.attestationCertificateInvalid("the attested key is not the registered key"), status: .unacceptableAttestation) {
            _ = try await self.verify(signerIsAnotherKey: true)
        }
    }

    func testAnAttestationForAnotherChallengeIsRefused() async throws {
        await assertRejected(
            .attestationCertificateInvalid("the attestation challenge is not this registration's final challenge hash"),
            status: .unacceptableAttestation
        ) {
            _ = try await self.verify(description: Self.valid(challenge: Array(repeating: 1, count: 32)))
        }
    }

    func testAKeyOnlySoftwareVouchesForIsRefused() async throws {
        var description = Self.valid()
        description.attestationSecurityLevel = .software
        await assertRejected(.attestationCertificateInvalid("the key is attested by software, not secure hardware"), status: .unacceptableAttestation)
        {
            _ = try await self.verify(description: description)
        }
    }

    func testAStrongBoxKeyVerifies() async throws {
        var description = Self.valid()
        description.attestationSecurityLevel = .strongBox
        let verified = try await verify(description: description)
        XCTAssertEqual(verified.count, 1)
    }

    func testAnImportedKeyIsRefused() async throws {
        var description = Self.valid()
        description.hardwareOrigin = 2
        await assertRejected(
            .attestationCertificateInvalid("the secure hardware does not say it generated the key"), status: .unacceptableAttestation
        ) {
            _ = try await self.verify(description: description)
        }
    }

    func testAKeyTheHardwareDoesNotLetSignIsRefused() async throws {
        var description = Self.valid()
        description.hardwarePurposes = [3]
        await assertRejected(
            .attestationCertificateInvalid("the secure hardware does not list signing among the key's purposes"), status: .unacceptableAttestation
        ) {
            _ = try await self.verify(description: description)
        }
    }

    func testALeafWithoutTheExtensionIsRefused() async throws {
        await assertRejected(
            .attestationCertificateInvalid("the leaf has no readable Android key attestation extension"), status: .unacceptableAttestation
        ) {
            _ = try await self.verify(description: nil)
        }
    }

    func testALeafIssuedByAnAttestedKeyIsRefused() async throws {
        // The device's genuine Keystore certificate (with its extension) made into a CA that issues a leaf for a
        // software key with a made-up extension; path lengths allow it, so only the extension's place refuses it.
        let root = try FullAttestationTests.makeRoot(name: "Vendor Hardware Attestation Root", maxPathLength: 2)
        let batch = try Self.intermediate(issuer: root, maxPathLength: 1)
        let deviceKey = P256.Signing.PrivateKey()
        let genuine = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(deviceKey.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: Date().addingTimeInterval(86400),
            issuer: batch.certificate.subject, subject: try DistinguishedName { CommonName("Android Keystore Key") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
                Certificate.Extension(oid: AndroidKeyDescription.oid, critical: false, value: ArraySlice(try Self.valid().derEncoded()))
            }, issuerPrivateKey: .init(batch.key))
        let attested = Authority(key: deviceKey, certificate: genuine)
        let softwareKey = P256.Signing.PrivateKey()
        let leaf = try Self.keystoreCertificate(of: softwareKey.publicKey, issuer: attested, description: Self.valid())
        await assertRejected(
            .attestationCertificateInvalid("a certificate above the leaf carries the key attestation extension"),
            status: .unacceptableAttestation
        ) {
            _ = try await Self.verifier(vendorKeys: [root]).verify(
                try Self.response(uafKey: softwareKey, signer: softwareKey, chain: [leaf, attested.der, batch.der, root.der]),
                issued: FullAttestationTests.issued, isRegistered: { _, _ in false })
        }
    }

    // MARK: - The extension and the metadata

    func testTheDescriptionSkipsFieldsItDoesNotRead() throws {
        // A device's list carries more than purpose and origin: algorithm [2], key size [3], root of trust [704].
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(200)
            try 2.serialize(into: &s, withIdentifier: .enumerated)
            try s.serialize(200)
            try 2.serialize(into: &s, withIdentifier: .enumerated)
            try s.serialize(ASN1OctetString(contentBytes: [9, 9, 9]))
            try s.serialize(ASN1OctetString(contentBytes: []))
            try s.appendConstructedNode(identifier: .sequence) { list in
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 709, tagClass: .contextSpecific)) {
                    try $0.serialize(ASN1OctetString(contentBytes: [1]))
                }
            }
            try s.appendConstructedNode(identifier: .sequence) { list in
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) { tagged in
                    try tagged.appendConstructedNode(identifier: .set) {
                        try $0.serialize(2)
                        try $0.serialize(3)
                    }
                }
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 2, tagClass: .contextSpecific)) { try $0.serialize(3) }
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 3, tagClass: .contextSpecific)) { try $0.serialize(256) }
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 702, tagClass: .contextSpecific)) { try $0.serialize(0) }
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 704, tagClass: .contextSpecific)) { tagged in
                    try tagged.appendConstructedNode(identifier: .sequence) { try $0.serialize(ASN1OctetString(contentBytes: [0])) }
                }
            }
        }
        let description = try AndroidKeyDescription(derEncoded: serializer.serializedBytes[...])
        XCTAssertEqual(
            description,
            AndroidKeyDescription(
                attestationSecurityLevel: .strongBox, attestationChallenge: [9, 9, 9],
                hardwarePurposes: [2, 3], hardwareOrigin: 0))
        XCTAssertEqual(try AndroidKeyDescription(derEncoded: try Self.valid().derEncoded()[...]), Self.valid())
    }

    func testATruncatedDescriptionIsRefused() throws {
        let bytes = try Self.valid().derEncoded()
        XCTAssertThrowsError(try AndroidKeyDescription(derEncoded: bytes.dropLast(3)))
    }

    func testTheVendorKeysAreReadFromTheNevisMetadataExtension() throws {
        let json = """
            {"aaid": "F1D0#0001", "description": "Android PIN", "assertionScheme": "UAFV1TLV", "attestationRootCertificates": [],
             "attestationTypes": [15879, 15880], "upv": [{"major": 1, "minor": 1}], "userVerificationDetails": [[{"userVerification": 4}]],
             "attachmentHint": 1, "authenticationAlgorithm": 2, "authenticatorVersion": 1, "isSecondFactorOnly": false, "keyProtection": 6,
             "matcherProtection": 1, "publicKeyAlgAndEncoding": 257, "tcDisplay": 1,
             "nevis.auth.fido.uaf.google-attestation-root-keys": ["MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"]}
            """
        let statement = try XCTUnwrap(UAFMetadata.statements(fromJSON: Data(json.utf8)).first)
        XCTAssertEqual(statement.vendorRootKeys, ["MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"])
    }
}
