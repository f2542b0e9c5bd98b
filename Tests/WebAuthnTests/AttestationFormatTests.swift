import CBOR
import Crypto
import FIDOAttestation
import Foundation
import Primitives
import SwiftASN1
import WebAuthn
import X509
import XCTest
import _CryptoExtras

/// `fido-u2f` (§8.6).
final class FIDOU2FFormatTests: XCTestCase {
    /// A U2F authenticator names no model: its authenticator data carries the zero AAGUID.
    var registration: TestRegistration = {
        var registration = TestRegistration()
        registration.aaguid = AAGUID.zero
        return registration
    }()

    func u2f(
        _ registration: TestRegistration, certificateKey: Certificate.PublicKey? = nil, extraCertificate: Bool = false,
        signer: P256.Signing.PrivateKey? = nil, ca: TestCA? = nil
    ) throws -> CBOR {
        let ca = try ca ?? TestCA()
        let key = P256.Signing.PrivateKey()
        let leaf = try ca.issue(certificateKey ?? .init(key.publicKey), subject: try DistinguishedName { CommonName("U2F key") }) {
            Critical(BasicConstraints.notCertificateAuthority)
        }
        let point = Array(registration.credentialKey.publicKey.x963Representation)
        let signed =
            [0x00] + Array(SHA256.hash(data: Array(registration.rpID.utf8))) + registration.clientDataHash + registration.credentialID + point
        let x5c: [CBOR] = [.bytes(leaf)] + (extraCertificate ? [.bytes(TestCA.der(ca.certificate))] : [])
        return statement(["sig": der(try (signer ?? key).signature(for: signed)), "x5c": .array(x5c)])
    }

    func reason(_ statement: CBOR) async -> AttestationStatementError.Reason? {
        await statementRefusal(registration.response("fido-u2f", statement), registration.expectation)
    }

    func testAU2FRegistrationVerifiesAsBasic() async throws {
        let result = try await verified(registration.response("fido-u2f", try u2f(registration)), registration.expectation)
        XCTAssertEqual(result.attestation.type, .basic)
        XCTAssertEqual(result.attestation.trustPath.count, 1)
    }

    /// R77: the U2F signature does not cover the AAGUID, so a U2F key that names one claims a model nothing signs.
    func testANonZeroAAGUIDIsRefused() async throws {
        registration.aaguid = [UInt8](repeating: 0xAA, count: 16)
        let reason = await reason(try u2f(registration))
        XCTAssertEqual(reason, .aaguidNotZero)
    }

    /// The model of a U2F key is its certificate's key identifier, as the Metadata Service lists it: the SHA-1 of the
    /// subjectPublicKey bits, computed here from the DER with swift-asn1's parser on its own.
    func testTheModelIsTheCertificateKeyIdentifier() async throws {
        let statement = try u2f(registration)
        let result = try await verified(registration.response("fido-u2f", statement), registration.expectation)
        let leaf = try XCTUnwrap(result.attestation.trustPath.first)
        let certificate = try DER.parse(leaf)
        guard case .constructed(let certificateNodes) = certificate.content, let tbs = Array(certificateNodes).first,
            case .constructed(let tbsNodes) = tbs.content
        else { return XCTFail("not a certificate") }
        // tbsCertificate: [0] version, serial, signature, issuer, validity, subject, subjectPublicKeyInfo.
        let info = Array(tbsNodes)[6]
        guard case .constructed(let infoNodes) = info.content, case .primitive(let bits) = Array(infoNodes)[1].content else {
            return XCTFail("no key")
        }
        let expected = Insecure.SHA1.hash(data: Array(bits.dropFirst())).map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(result.attestation.modelBinding, .keyIdentifier(expected))
    }

    /// R77: refused under every policy, whatever roots and metadata vouch for the key.
    func testANonZeroAAGUIDIsRefusedUnderEveryPolicy() async throws {
        registration.aaguid = [UInt8](repeating: 0xAA, count: 16)
        let ca = try TestCA()
        let statement = try u2f(registration, ca: ca)
        let aaguid = registration.aaguid
        let trust = AttestationTrust(
            roots: [ca.certificate], metadata: { $0 == aaguid ? FIDO2Metadata(aaguid: aaguid, description: "a FIDO2 model") : nil })
        for policy in [lenientPolicy, .passkeys, .enterprise(allowedAAGUIDs: nil), .enterprise(allowedAAGUIDs: [aaguid])] {
            let error = await refusal(registration.response("fido-u2f", statement), registration.expectation, policy: policy, trust: trust)
            XCTAssertEqual(error?.reason, .attestationInvalid(AttestationStatementError("fido-u2f", .aaguidNotZero)))
        }
    }

    /// A genuine U2F key is found in the Metadata Service by its certificate's key identifier, and passes `enterprise`.
    func testAGenuineU2FKeyWithMetadataPassesEnterpriseByItsKeyIdentifier() async throws {
        let ca = try TestCA()
        let statement = try u2f(registration, ca: ca)
        let plain = try await verified(registration.response("fido-u2f", statement), registration.expectation)
        guard case .keyIdentifier(let identifier) = plain.attestation.modelBinding else { return XCTFail("no key identifier") }
        let entry = FIDO2Metadata(
            aaguid: AAGUID.zero, description: "A U2F key", attestationRootCertificates: [TestCA.der(ca.certificate)],
            attestationCertificateKeyIdentifiers: [identifier.uppercased()])
        let trust = AttestationTrust(keyIdentifierMetadata: { entry.attestationCertificateKeyIdentifiers.contains($0) ? entry : nil })
        let result = try await verified(
            registration.response("fido-u2f", statement), registration.expectation, policy: .enterprise(allowedAAGUIDs: nil), trust: trust)
        XCTAssertEqual(result.metadata?.description, "A U2F key")
        XCTAssertEqual(result.trustAnchor, ca.certificate)
        XCTAssertTrue(result.modelBound)
        // Without its metadata, the same key is refused: enterprise needs a known model.
        let unknown = await refusal(
            registration.response("fido-u2f", statement), registration.expectation, policy: .enterprise(allowedAAGUIDs: nil),
            trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertEqual(unknown?.reason, .metadataMissing)
    }

    func testTwoCertificatesAreRefused() async throws {
        let reason = await reason(try u2f(registration, extraCertificate: true))
        XCTAssertEqual(reason, .memberUnexpected("x5c with 2 certificates (exactly 1)"))
    }

    func testACertificateKeyThatIsNotP256IsRefused() async throws {
        let reason = await reason(try u2f(registration, certificateKey: .init(P384.Signing.PrivateKey().publicKey)))
        XCTAssertEqual(reason, .certificateKeyUnsuitable("is not an EC P-256 key"))
    }

    func testACredentialKeyThatIsNotP256IsRefused() async throws {
        let ed = Curve25519.Signing.PrivateKey()
        registration.coseKey = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(1)), .init(.int(3), .int(-8)), .init(.int(-1), .int(6)),
                    .init(.int(-2), .bytes(Array(ed.publicKey.rawRepresentation))),
                ])))
        let reason = await reason(try u2f(registration))
        XCTAssertEqual(reason, .algorithmMismatch(statement: -7, credential: -8))
    }

    func testASignatureOverOtherDataIsRefused() async throws {
        var other = registration
        other.credentialID[0] ^= 1
        let reason = await reason(try u2f(other))
        XCTAssertEqual(reason, .signatureInvalid)
    }
}

/// `android-key` (§8.4).
final class AndroidKeyFormatTests: XCTestCase {
    let registration = TestRegistration()

    static func description(
        _ registration: TestRegistration, challenge: [UInt8]? = nil, purposes: Set<Int> = [2], origin: Int? = 0,
        allApplications: Bool = false
    ) -> AndroidKeyDescription {
        AndroidKeyDescription(
            attestationSecurityLevel: .trustedEnvironment, attestationChallenge: challenge ?? registration.clientDataHash,
            hardwarePurposes: purposes, hardwareOrigin: origin, allApplications: allApplications)
    }

    func androidKey(
        description: AndroidKeyDescription?, certifiedKey: P256.Signing.PublicKey? = nil, signer: P256.Signing.PrivateKey? = nil
    ) throws -> CBOR {
        let value = try description.map { ArraySlice(try $0.derEncoded()) }
        let leaf = try TestCA().issue(
            .init(certifiedKey ?? registration.credentialKey.publicKey), subject: try DistinguishedName { CommonName("Android Keystore Key") }
        ) {
            Critical(BasicConstraints.notCertificateAuthority)
            if let value { Certificate.Extension(oid: AndroidKeyDescription.oid, critical: false, value: value) }
        }
        let signature = try (signer ?? registration.credentialKey).signature(for: registration.signedData)
        return statement(["alg": .int(-7), "sig": der(signature), "x5c": .array([.bytes(leaf)])])
    }

    func reason(_ statement: CBOR) async -> AttestationStatementError.Reason? {
        await statementRefusal(registration.response("android-key", statement), registration.expectation)
    }

    func testAKeystoreAttestationVerifiesAsBasic() async throws {
        let result = try await verified(
            registration.response("android-key", try androidKey(description: Self.description(registration))), registration.expectation)
        XCTAssertEqual(result.attestation.type, .basic)
    }

    /// The credential key signs the authenticator data; its certificate names no model.
    func testAKeystoreAttestationDoesNotBindTheModel() async throws {
        let result = try await verified(
            registration.response("android-key", try androidKey(description: Self.description(registration))), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .unbound)
    }

    func testAKeyOnlyTheSoftwareListDescribesVerifies() async throws {
        let software = AndroidKeyDescription(
            attestationSecurityLevel: .software, attestationChallenge: registration.clientDataHash,
            hardwarePurposes: [], hardwareOrigin: nil, softwarePurposes: [2], softwareOrigin: 0)
        let reason = await reason(try androidKey(description: software))
        XCTAssertNil(reason)
    }

    func testASignatureByAnotherKeyIsRefused() async throws {
        let reason = await reason(try androidKey(description: Self.description(registration), signer: P256.Signing.PrivateKey()))
        XCTAssertEqual(reason, .signatureInvalid)
    }

    func testACertificateOfAnotherKeyIsRefused() async throws {
        let other = P256.Signing.PrivateKey()
        let reason = await reason(try androidKey(description: Self.description(registration), certifiedKey: other.publicKey, signer: other))
        XCTAssertEqual(reason, .credentialKeyMismatch)
    }

    func testACertificateWithoutAKeyDescriptionIsRefused() async throws {
        let reason = await reason(try androidKey(description: nil))
        XCTAssertEqual(reason, .keyDescription("is missing (extension 1.3.6.1.4.1.11129.2.1.17)"))
    }

    func testAnotherChallengeIsRefused() async throws {
        let reason = await reason(try androidKey(description: Self.description(registration, challenge: [UInt8](repeating: 1, count: 32))))
        XCTAssertEqual(reason, .nonceMismatch)
    }

    func testAKeyForAllApplicationsIsRefused() async throws {
        let reason = await reason(try androidKey(description: Self.description(registration, allApplications: true)))
        XCTAssertEqual(reason, .keyDescription("allows all applications"))
    }

    func testAnImportedKeyIsRefused() async throws {
        let reason = await reason(try androidKey(description: Self.description(registration, origin: 2)))
        XCTAssertEqual(reason, .keyDescription("does not say the key was generated in the device"))
    }

    func testAKeyThatMayNotSignIsRefused() async throws {
        let reason = await reason(try androidKey(description: Self.description(registration, purposes: [3])))
        XCTAssertEqual(reason, .keyDescription("does not give the key the SIGN purpose"))
    }
}

/// `apple` (§8.8).
final class AppleFormatTests: XCTestCase {
    let registration = TestRegistration()

    func apple(nonce: [UInt8]?, certifiedKey: P256.Signing.PublicKey? = nil, extra: [String: CBOR] = [:]) throws -> CBOR {
        var value: ArraySlice<UInt8>?
        if let nonce {
            var serializer = DER.Serializer()
            try serializer.appendConstructedNode(identifier: .sequence) { s in
                try s.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) { tagged in
                    try tagged.serialize(ASN1OctetString(contentBytes: ArraySlice(nonce)))
                }
            }
            value = ArraySlice(serializer.serializedBytes)
        }
        let leaf = try TestCA().issue(
            .init(certifiedKey ?? registration.credentialKey.publicKey), subject: try DistinguishedName { CommonName("Apple credential") }
        ) {
            Critical(BasicConstraints.notCertificateAuthority)
            if let value { Certificate.Extension(oid: [1, 2, 840, 113635, 100, 8, 2], critical: false, value: value) }
        }
        return statement(["x5c": .array([.bytes(leaf)])].merging(extra) { $1 })
    }

    var nonce: [UInt8] { Array(SHA256.hash(data: registration.signedData)) }

    func reason(_ statement: CBOR) async -> AttestationStatementError.Reason? {
        await statementRefusal(registration.response("apple", statement), registration.expectation)
    }

    func testAnAppleAttestationVerifiesAsAnonCA() async throws {
        let result = try await verified(registration.response("apple", try apple(nonce: nonce)), registration.expectation)
        XCTAssertEqual(result.attestation.type, .anonCA)
    }

    /// Apple's anonymous CA certifies the hash of this authenticator data, for Apple's authenticator only.
    func testAnAppleAttestationBindsTheModel() async throws {
        let result = try await verified(registration.response("apple", try apple(nonce: nonce)), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .certificate)
    }

    func testACertificateWithoutTheNonceIsRefused() async throws {
        let reason = await reason(try apple(nonce: nil))
        XCTAssertEqual(reason, .certificateRequirement("has no nonce extension (1.2.840.113635.100.8.2)"))
    }

    func testAnotherNonceIsRefused() async throws {
        var other = nonce
        other[0] ^= 1
        let reason = await reason(try apple(nonce: other))
        XCTAssertEqual(reason, .nonceMismatch)
    }

    func testACertificateOfAnotherKeyIsRefused() async throws {
        let reason = await reason(try apple(nonce: nonce, certifiedKey: P256.Signing.PrivateKey().publicKey))
        XCTAssertEqual(reason, .credentialKeyMismatch)
    }

    func testASignatureMemberIsRefused() async throws {
        let reason = await reason(try apple(nonce: nonce, extra: ["sig": .bytes([1])]))
        XCTAssertEqual(reason, .memberUnexpected("sig"))
    }
}

/// `none` (§8.7) and `compound` (§8.9).
final class NoneAndCompoundFormatTests: XCTestCase {
    let registration = TestRegistration()

    func entry(_ format: String, _ statement: CBOR) -> CBOR {
        .map(CBORMap([.init(.text("fmt"), .text(format)), .init(.text("attStmt"), statement)]))
    }

    func testNoneWithAMemberIsRefused() async {
        let reason = await statementRefusal(registration.response("none", statement(["x5c": .array([])])), registration.expectation)
        XCTAssertEqual(reason, .memberUnexpected("x5c"))
    }

    func testACompoundOfTwoStatementsVerifiesWithBoth() async throws {
        let ca = try TestCA()
        let (full, _) = try PackedFormatTests.full(registration, ca: ca)
        let compound = CBOR.array([entry("packed", registration.packedSelf), entry("packed", full)])
        let result = try await verified(
            registration.response("compound", compound), registration.expectation, trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertEqual(result.attestation.components.map(\.type), [.self, .basic])
        XCTAssertEqual(result.attestation.type, .basic, "the compound takes the type of its first chain")
        XCTAssertEqual(result.trustAnchor, ca.certificate)
    }

    func testNoneDoesNotBindTheModel() async throws {
        let result = try await verified(registration.response("none", .map(CBORMap())), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .unbound)
    }

    /// A compound binds the model as its strongest statement does: each signs the same authenticator data.
    func testACompoundBindsTheModelAsItsStrongestStatement() async throws {
        let ca = try TestCA()
        let (full, _) = try PackedFormatTests.full(registration, ca: ca, aaguidExtension: try TestCA.aaguidExtension(registration.aaguid))
        let compound = CBOR.array([entry("packed", registration.packedSelf), entry("packed", full)])
        let result = try await verified(
            registration.response("compound", compound), registration.expectation, trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertEqual(result.attestation.components.map(\.modelBinding), [.unbound, .certificate])
        XCTAssertEqual(result.attestation.modelBinding, .certificate)
        XCTAssertTrue(result.modelBound)
    }

    func testACompoundOfOneStatementIsRefused() async {
        let reason = await statementRefusal(
            registration.response("compound", .array([entry("packed", registration.packedSelf)])), registration.expectation)
        XCTAssertEqual(reason, .compound("it holds 1 statement(s), at least 2 needed"))
    }

    func testACompoundOfEightStatementsIsRefused() async {
        let many = CBOR.array([CBOR](repeating: entry("packed", registration.packedSelf), count: 8))
        let reason = await statementRefusal(registration.response("compound", many), registration.expectation)
        XCTAssertEqual(reason, .compound("it holds 8 statements, 7 at most"))
    }

    func testANestedCompoundIsRefused() async {
        let nested = CBOR.array([entry("compound", .array([])), entry("packed", registration.packedSelf)])
        let reason = await statementRefusal(registration.response("compound", nested), registration.expectation)
        XCTAssertEqual(reason, .compound("statement 0 is itself compound"))
    }

    func testACompoundWithOneFailingStatementIsRefused() async {
        let failing = CBOR.array([entry("packed", registration.packedSelf), entry("none", statement(["sig": .bytes([1])]))])
        let reason = await statementRefusal(registration.response("compound", failing), registration.expectation)
        XCTAssertEqual(reason, .compoundEntry(index: 1, format: "none", reason: "\(AttestationStatementError.Reason.memberUnexpected("sig"))"))
    }

    func testACompoundStatementAsAMapIsRefused() async {
        let reason = await statementRefusal(registration.response("compound", registration.packedSelf), registration.expectation)
        XCTAssertEqual(reason, .memberMissing("attStmt (an array)"))
    }
}
