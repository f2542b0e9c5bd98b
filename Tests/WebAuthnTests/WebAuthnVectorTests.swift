import CBOR
import Crypto
import Foundation
import TestSupport
import WebAuthn
import XCTest

/// The WebAuthn Level 3 specification's own test vectors (§16, copied into `Vectors/` with their source and
/// licence): every registration's authenticator data parses to the values the vector states, its credential public
/// key is read from COSE, and the same file's assertion verifies with it. Ed448 is refused with its own reason.
final class WebAuthnVectorTests: XCTestCase {
    struct Vector {
        let name: String
        let json: [String: Any]

        func given(_ ceremony: String, _ key: String) throws -> [UInt8] {
            let given = try XCTUnwrap((json[ceremony] as? [String: Any])?["given"] as? [String: Any])
            let hex = try XCTUnwrap((given[key] as? [String: Any])?["hex"] as? String, "\(name) \(ceremony).\(key)")
            return try XCTUnwrap(Self.bytes(hex))
        }

        func derived(_ ceremony: String) throws -> [String: Any] {
            try XCTUnwrap((json["derived"] as? [String: Any])?[ceremony] as? [String: Any])
        }

        static func bytes(_ hex: String) -> [UInt8]? { Hex.decode(hex) }
    }

    static func vectors() throws -> [Vector] { try Vector.all() }
}

extension WebAuthnVectorTests.Vector {
    /// The ceremony vectors (not the CA certificate and the PRF set), by name.
    static func all() throws -> [Self] {
        let directory = try XCTUnwrap(Bundle.module.url(forResource: "Vectors", withExtension: nil))
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted().compactMap { file in
            let json = try XCTUnwrap(
                try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent(file))) as? [String: Any])
            guard json["registration"] != nil else { return nil }  // the CA certificate and the PRF set
            return Self(name: String(file.dropLast(5)), json: json)
        }
    }
}

extension WebAuthnVectorTests {

    /// The attestation object's authenticator data (read under the well-formed rules, as the server will).
    static func authData(_ attestationObject: [UInt8]) throws -> [UInt8] {
        let object = try XCTUnwrap(try CBORDecoder(rules: .wellFormed).decode(attestationObject).map)
        return try XCTUnwrap(object[text: "authData"]?.bytes)
    }

    func testThereAreFifteenCeremonyVectors() throws {
        XCTAssertEqual(try Self.vectors().count, 15)
    }

    func testEveryRegistrationsAuthenticatorDataParsesToWhatTheVectorStates() throws {
        for vector in try Self.vectors() {
            let bytes = try Self.authData(try vector.given("registration", "attestationObject"))
            let derived = try vector.derived("registration")
            XCTAssertEqual(bytes, Vector.bytes(try XCTUnwrap(derived["authData_hex"] as? String)), vector.name)
            if vector.name == "packed-ed448" {
                XCTAssertThrowsError(try AuthenticatorData(bytes: bytes), vector.name) { error in
                    XCTAssertEqual((error as? AuthenticatorDataError)?.reason, .credentialPublicKey(.algorithmUnavailable(-53)))
                }
                continue
            }
            let parsed = try AuthenticatorData(bytes: bytes)
            XCTAssertEqual(parsed.rpIDHash, Array(SHA256.hash(data: Data("example.org".utf8))), vector.name)
            XCTAssertEqual(String(format: "%02x", parsed.flags.rawValue), derived["flags_hex"] as? String, vector.name)
            XCTAssertEqual(Int(parsed.signCount), derived["signCount"] as? Int, vector.name)
            let attested = try XCTUnwrap(parsed.attestedCredentialData, vector.name)
            XCTAssertEqual(attested.aaguid, try vector.given("registration", "aaguid"), vector.name)
            XCTAssertEqual(attested.credentialID, try vector.given("registration", "credential_id"), vector.name)
            XCTAssertEqual(attested.publicKey.encoded, Vector.bytes(try XCTUnwrap(derived["credentialPublicKey_cose_hex"] as? String)), vector.name)
            XCTAssertEqual(attested.publicKey.algorithm.rawValue, Int64(try XCTUnwrap(derived["credentialPublicKey_alg"] as? Int)), vector.name)
            XCTAssertNil(parsed.extensions, vector.name)
        }
    }

    func testEveryAssertionVerifiesWithItsRegisteredKeyAndNotWithOneByteChanged() throws {
        var verified = 0
        for vector in try Self.vectors() where vector.name != "packed-ed448" {
            let key = try XCTUnwrap(
                try AuthenticatorData(bytes: try Self.authData(try vector.given("registration", "attestationObject"))).attestedCredentialData?
                    .publicKey)
            let authenticatorData = try vector.given("authentication", "authenticatorData")
            let assertion = try AuthenticatorData(bytes: authenticatorData)
            XCTAssertNil(assertion.attestedCredentialData, vector.name)
            XCTAssertEqual(
                String(format: "%02x", assertion.flags.rawValue), try vector.derived("authentication")["flags_hex"] as? String, vector.name)
            let signed = authenticatorData + SHA256.hash(data: try vector.given("authentication", "clientDataJSON"))
            let signature = try vector.given("authentication", "signature")
            XCTAssertTrue(key.isValidSignature(signature, for: signed), vector.name)
            var tampered = signature
            tampered[tampered.count / 2] ^= 0x01
            XCTAssertFalse(key.isValidSignature(tampered, for: signed), "\(vector.name): a changed signature verified")
            var otherData = signed
            otherData[0] ^= 0x01
            XCTAssertFalse(key.isValidSignature(signature, for: otherData), "\(vector.name): a changed rpIdHash verified")
            verified += 1
        }
        XCTAssertEqual(verified, 14)
    }

    func testTheEd448KeyIsRefusedWithItsOwnReason() throws {
        let vector = try XCTUnwrap(try Self.vectors().first { $0.name == "packed-ed448" })
        let cose = try XCTUnwrap(Vector.bytes(try XCTUnwrap(try vector.derived("registration")["credentialPublicKey_cose_hex"] as? String)))
        XCTAssertThrowsError(try COSEKey(bytes: cose)) { error in
            XCTAssertEqual((error as? COSEKeyError)?.reason, .algorithmUnavailable(-53))
            XCTAssertEqual("\(error)", "COSE key: algorithm -53 cannot be verified here (Ed448: swift-crypto has none)")
        }
    }
}
