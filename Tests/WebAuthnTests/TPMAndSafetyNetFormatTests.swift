import CBOR
import Crypto
import Foundation
import Primitives
import SwiftASN1
import WebAuthn
import X509
import XCTest
import _CryptoExtras

/// `tpm` (§8.3): a pubArea and certInfo built field by field, each test changing one.
final class TPMFormatTests: XCTestCase {
    let registration = TestRegistration()

    struct Parts {
        var ver = "2.0"
        var nameAlg: UInt16 = 0x000B
        var curve: UInt16 = 0x0003
        var point: [UInt8]
        var magic: UInt32 = 0xff54_4347
        var type: UInt16 = 0x8017
        var extraData: [UInt8]
        var name: [UInt8]?
        var certInfoTrailing: [UInt8] = []
        var aikSubject: DistinguishedName = DistinguishedName()
        var san = true
        var eku = true
        var signer: P256.Signing.PrivateKey?
        var ca: TestCA?
        var aaguidExtension: Certificate.Extension?
    }

    func parts() -> Parts {
        Parts(point: Array(registration.credentialKey.publicKey.x963Representation), extraData: Array(SHA256.hash(data: registration.signedData)))
    }

    static func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }
    static func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
    static func sized(_ bytes: [UInt8]) -> [UInt8] { u16(UInt16(bytes.count)) + bytes }

    func tpm(_ parts: Parts) throws -> CBOR {
        let x = Array(parts.point[1...32])
        let y = Array(parts.point[33...])
        let pubArea =
            Self.u16(0x0023) + Self.u16(parts.nameAlg) + Self.u32(0x0006_0472) + Self.sized([])
            + Self.u16(0x0010) + Self.u16(0x0010) + Self.u16(parts.curve) + Self.u16(0x0010) + Self.sized(x) + Self.sized(y)
        let name = parts.name ?? Self.u16(parts.nameAlg) + SHA256.hash(data: pubArea)
        let certInfo =
            Self.u32(parts.magic) + Self.u16(parts.type) + Self.sized([0x00, 0x0B] + [UInt8](repeating: 9, count: 32))
            + Self.sized(parts.extraData) + [UInt8](repeating: 0, count: 17) + [UInt8](repeating: 0, count: 8)
            + Self.sized(name) + Self.sized([0x00, 0x0B] + [UInt8](repeating: 8, count: 32)) + parts.certInfoTrailing
        let aik = P256.Signing.PrivateKey()
        var tpmName: [RelativeDistinguishedName] = []
        for (oid, value) in [
            ([2, 23, 133, 2, 1] as ASN1ObjectIdentifier, "id:FFFFF1D0"), ([2, 23, 133, 2, 2], "mauth test TPM"), ([2, 23, 133, 2, 3], "id:13"),
        ] {
            tpmName.append(RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: oid, utf8String: value)))
        }
        let directory = DistinguishedName(tpmName)
        let leaf = try (parts.ca ?? TestCA()).issue(.init(aik.publicKey), subject: parts.aikSubject) {
            Critical(BasicConstraints.notCertificateAuthority)
            if parts.san { Critical(SubjectAlternativeNames([.directoryName(directory)])) }
            if parts.eku { try ExtendedKeyUsage([ExtendedKeyUsage.Usage(oid: [2, 23, 133, 8, 3])]) }
            if let aaguidExtension = parts.aaguidExtension { aaguidExtension }
        }
        let signature = try (parts.signer ?? aik).signature(for: certInfo)
        return statement([
            "ver": .text(parts.ver), "alg": .int(-7), "sig": der(signature), "x5c": .array([.bytes(leaf)]),
            "certInfo": .bytes(certInfo), "pubArea": .bytes(pubArea),
        ])
    }

    func reason(_ parts: Parts) async throws -> AttestationStatementError.Reason? {
        await statementRefusal(registration.response("tpm", try tpm(parts)), registration.expectation)
    }

    func testATPMAttestationVerifiesAsAttCA() async throws {
        let result = try await verified(registration.response("tpm", try tpm(parts())), registration.expectation)
        XCTAssertEqual(result.attestation.type, .attCA)
        XCTAssertEqual(result.attestation.trustPath.count, 1)
    }

    /// The AIK signs certInfo over the authenticator data; only an AIK certificate that names the AAGUID binds it.
    func testOnlyAnAIKCertificateNamingTheAAGUIDBindsTheModel() async throws {
        let unnamed = try await verified(registration.response("tpm", try tpm(parts())), registration.expectation)
        XCTAssertEqual(unnamed.attestation.modelBinding, .attestationKey)
        var named = parts()
        named.aaguidExtension = try TestCA.aaguidExtension(registration.aaguid)
        let result = try await verified(registration.response("tpm", try tpm(named)), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .certificate)
    }

    func testAnotherVersionIsRefused() async throws {
        var changed = parts()
        changed.ver = "1.2"
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .tpm("ver is not \"2.0\""))
    }

    func testAPubAreaOfAnotherKeyIsRefused() async throws {
        var changed = parts()
        changed.point = Array(P256.Signing.PrivateKey().publicKey.x963Representation)
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .credentialKeyMismatch)
    }

    func testAPubAreaOnAnotherCurveIsRefused() async throws {
        var changed = parts()
        changed.curve = 0x0004
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .credentialKeyMismatch)
    }

    func testACertInfoSignedByAnotherKeyIsRefused() async throws {
        var changed = parts()
        changed.signer = P256.Signing.PrivateKey()
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .signatureInvalid)
    }

    func testAnotherMagicIsRefused() async throws {
        var changed = parts()
        changed.magic = 0xff54_4348
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .tpm("certInfo.magic is not TPM_GENERATED_VALUE"))
    }

    func testAnotherAttestationTypeIsRefused() async throws {
        var changed = parts()
        changed.type = 0x8018
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .tpm("certInfo.type is not TPM_ST_ATTEST_CERTIFY"))
    }

    func testExtraDataOfAnotherRegistrationIsRefused() async throws {
        var changed = parts()
        changed.extraData[0] ^= 1
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .nonceMismatch)
    }

    func testANameOfAnotherObjectIsRefused() async throws {
        var changed = parts()
        changed.name = [0x00, 0x0B] + [UInt8](repeating: 1, count: 32)
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .tpm("certInfo.attested.name is not the name of pubArea"))
    }

    func testASHA1NameVerifies() async throws {
        var changed = parts()
        changed.nameAlg = 0x0004
        changed.name = nil
        // The name is built with SHA-256 by the helper: rebuild it with SHA-1 by hand.
        let statement = try tpm(changed)
        guard case .map(var map) = statement, let pubArea = map[text: "pubArea"]?.bytes else { return XCTFail() }
        changed.name = [0x00, 0x04] + Insecure.SHA1.hash(data: pubArea)
        map = try tpm(changed).map!
        let reason = await statementRefusal(registration.response("tpm", .map(map)), registration.expectation)
        XCTAssertNil(reason)
    }

    func testBytesAfterCertInfoAreRefused() async throws {
        var changed = parts()
        changed.certInfoTrailing = [0]
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .tpm("certInfo has 1 bytes after its last field"))
    }

    func testAnAIKCertificateWithASubjectIsRefused() async throws {
        var changed = parts()
        changed.aikSubject = try DistinguishedName { CommonName("AIK") }
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .certificateRequirement("has a subject (an AIK certificate's is empty)"))
    }

    func testAnAIKCertificateWithoutTheTPMNameIsRefused() async throws {
        var changed = parts()
        changed.san = false
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .certificateRequirement("has no critical subject alternative name"))
    }

    func testAnAIKCertificateWithoutTheAIKUsageIsRefused() async throws {
        var changed = parts()
        changed.eku = false
        let reason = try await reason(changed)
        XCTAssertEqual(reason, .certificateRequirement("has no extended key usage tcg-kp-AIKCertificate (2.23.133.8.3)"))
    }

    func testAnAIKChainIsTrustedThoughItsNameIsCritical() async throws {
        var changed = parts()
        let ca = try TestCA()
        changed.ca = ca
        let policy = AttestationPolicy(requireTrustedAttestation: true, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: false)
        let result = try await verified(
            registration.response("tpm", try tpm(changed)), registration.expectation, policy: policy,
            trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertEqual(result.trustAnchor, ca.certificate)
    }
}

/// `android-safetynet` (§8.5): a JWS signed by a certificate for attest.android.com.
final class SafetyNetFormatTests: XCTestCase {
    let registration = TestRegistration()
    static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    struct Claims {
        var nonce: String?
        var timestampMs: Int64 = Int64(TestCA.now.timeIntervalSince1970 * 1000)
        var ctsProfileMatch = true
        var hostname = "attest.android.com"
        var signer: _RSA.Signing.PrivateKey?
        var ver = "21.42.18"
    }

    func safetyNet(_ claims: Claims) throws -> CBOR {
        let leaf = try TestCA().issue(.init(Self.rsa.publicKey), subject: try DistinguishedName { CommonName(claims.hostname) }) {
            Critical(BasicConstraints.notCertificateAuthority)
        }
        let nonce = claims.nonce ?? Data(SHA256.hash(data: registration.signedData)).base64EncodedString()
        let header = Base64URL.encode(Array(#"{"alg":"RS256","x5c":["\#(Data(leaf).base64EncodedString())"]}"#.utf8))
        let payload = Base64URL.encode(
            Array(
                #"{"nonce":"\#(nonce)","timestampMs":\#(claims.timestampMs),"apkPackageName":"com.google.android.gms","ctsProfileMatch":\#(claims.ctsProfileMatch),"basicIntegrity":true}"#
                    .utf8))
        let signingInput = Array("\(header).\(payload)".utf8)
        let signature = try (claims.signer ?? Self.rsa).signature(for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
        let jws = "\(header).\(payload).\(Base64URL.encode(signature.rawRepresentation))"
        return statement(["ver": .text(claims.ver), "response": .bytes(Array(jws.utf8))])
    }

    func reason(_ claims: Claims) async throws -> AttestationStatementError.Reason? {
        await statementRefusal(registration.response("android-safetynet", try safetyNet(claims)), registration.expectation)
    }

    func testASafetyNetAttestationVerifiesAsBasic() async throws {
        let result = try await verified(registration.response("android-safetynet", try safetyNet(Claims())), registration.expectation)
        XCTAssertEqual(result.attestation.type, .basic)
    }

    /// Google signs a nonce any app on the device may choose: the AAGUID stays the client's word.
    func testASafetyNetAttestationDoesNotBindTheModel() async throws {
        let result = try await verified(registration.response("android-safetynet", try safetyNet(Claims())), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .unbound)
        XCTAssertFalse(result.modelBound)
    }

    func testAnEmptyVersionIsRefused() async throws {
        var claims = Claims()
        claims.ver = ""
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .memberMissing("ver"))
    }

    func testAnotherNonceIsRefused() async throws {
        var claims = Claims()
        claims.nonce = Data(repeating: 1, count: 32).base64EncodedString()
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .nonceMismatch)
    }

    func testASignatureByAnotherKeyIsRefused() async throws {
        var claims = Claims()
        claims.signer = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .signatureInvalid)
    }

    func testACertificateForAnotherHostIsRefused() async throws {
        var claims = Claims()
        claims.hostname = "attest.android.com.evil.example"
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .certificateRequirement("is not issued to attest.android.com"))
    }

    func testADeviceThatFailedTheCompatibilityCheckIsRefused() async throws {
        var claims = Claims()
        claims.ctsProfileMatch = false
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .safetyNet("ctsProfileMatch is false"))
    }

    func testAResponseOverAMinuteOldIsRefused() async throws {
        var claims = Claims()
        claims.timestampMs -= 61_000
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .safetyNet("timestampMs is more than a minute old"))
    }

    func testAResponseFromTheFutureIsRefused() async throws {
        var claims = Claims()
        claims.timestampMs += 11_000
        let reason = try await reason(claims)
        XCTAssertEqual(reason, .safetyNet("timestampMs is in the future"))
    }

    func testAHeaderWithNineCertificatesIsRefusedUnread() async {
        let header = Base64URL.encode(Array(#"{"alg":"RS256","x5c":[\#(Array(repeating: "\"MAA=\"", count: 9).joined(separator: ","))]}"#.utf8))
        let payload = Base64URL.encode(Array(#"{"nonce":"x","timestampMs":0,"ctsProfileMatch":true}"#.utf8))
        let jws = Array("\(header).\(payload).AA".utf8)
        let reason = await statementRefusal(
            registration.response("android-safetynet", statement(["ver": .text("1"), "response": .bytes(jws)])),
            registration.expectation)
        XCTAssertEqual(reason, .memberUnexpected("x5c with 9 certificates (8 at most)"))
    }

    func testAResponseThatIsNotAJWSIsRefused() async {
        let reason = await statementRefusal(
            registration.response("android-safetynet", statement(["ver": .text("1"), "response": .bytes(Array("a.b".utf8))])),
            registration.expectation)
        XCTAssertEqual(reason, .safetyNet("the response is not a compact JWS"))
    }
}
