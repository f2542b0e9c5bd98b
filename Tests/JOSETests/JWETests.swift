import Crypto
import Foundation
import JOSE
import Primitives
import XCTest

final class JWETests: XCTestCase {
    let recipient = P256.KeyAgreement.PrivateKey()

    private func token(_ plaintext: String = #"{"token":"t"}"#) throws -> String {
        try JWE.encrypt(Array(plaintext.utf8), to: recipient.publicKey, keyID: "target-1", contentType: "application/json")
    }

    private func parts(_ token: String) -> [String] { token.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    private func header(_ token: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Base64URL.decode(parts(token)[0])!) as! [String: Any]
    }

    private func replacingHeader(of token: String, _ change: (inout [String: Any]) -> Void) throws -> String {
        var fields = try header(token)
        change(&fields)
        var p = parts(token)
        p[0] = Base64URL.encode(try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]))
        return p.joined(separator: ".")
    }

    private func assertRejected(_ token: String, _ expected: JOSEError? = nil, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try JWE.decrypt(token, key: recipient), file: file, line: line) { error in
            guard let jose = error as? JOSEError else { return XCTFail("not a JOSEError: \(error)", file: file, line: line) }
            if let expected { XCTAssertEqual(jose, expected, file: file, line: line) }
        }
    }

    func testEncryptThenDecryptRoundTrips() throws {
        let decrypted = try JWE.decrypt(try token(#"{"token":"abc"}"#), key: recipient)
        XCTAssertEqual(String(decoding: decrypted.plaintext, as: UTF8.self), #"{"token":"abc"}"#)
        XCTAssertEqual(decrypted.header.kid, "target-1")
        XCTAssertEqual(decrypted.header.cty, "application/json")
    }

    func testTheHeaderIsOurDocumentedContract() throws {
        let t = try token()
        let fields = try header(t)
        XCTAssertEqual(fields["alg"] as? String, "ECDH-ES")
        XCTAssertEqual(fields["enc"] as? String, "A256GCM")
        XCTAssertEqual(Set((fields["epk"] as? [String: String])?.keys ?? [:].keys), ["kty", "crv", "x", "y"])
        XCTAssertEqual(parts(t)[1], "", "direct key agreement has an empty encrypted key")
    }

    func testEachEncryptionUsesAFreshEphemeralKeyAndIV() throws {
        let a = parts(try token())
        let b = parts(try token())
        XCTAssertNotEqual(a[0], b[0])
        XCTAssertNotEqual(a[2], b[2])
    }

    func testAnotherRecipientsKeyCannotDecrypt() throws {
        XCTAssertThrowsError(try JWE.decrypt(try token(), key: P256.KeyAgreement.PrivateKey())) {
            XCTAssertEqual($0 as? JOSEError, JOSEError(.decryptionFailed))
        }
    }

    func testATamperedCiphertextIsRejected() throws {
        var p = parts(try token())
        var ciphertext = Base64URL.decodeBytes(p[3])!
        ciphertext[0] ^= 1
        p[3] = Base64URL.encode(ciphertext)
        assertRejected(p.joined(separator: "."), JOSEError(.decryptionFailed))
    }

    func testATamperedTagIsRejected() throws {
        var p = parts(try token())
        var tag = Base64URL.decodeBytes(p[4])!
        tag[15] ^= 0x80
        p[4] = Base64URL.encode(tag)
        assertRejected(p.joined(separator: "."), JOSEError(.decryptionFailed))
    }

    func testATamperedHeaderIsRejectedBecauseItIsAuthenticated() throws {
        assertRejected(try replacingHeader(of: try token()) { $0["kid"] = "target-2" }, JOSEError(.decryptionFailed))
    }

    func testAnotherKeyManagementAlgorithmIsRejected() throws {
        assertRejected(try replacingHeader(of: try token()) { $0["alg"] = "RSA-OAEP-256" }, JOSEError(.unsupportedAlgorithm("RSA-OAEP-256")))
        assertRejected(try replacingHeader(of: try token()) { $0["alg"] = "dir" }, JOSEError(.unsupportedAlgorithm("dir")))
    }

    func testAnotherContentEncryptionIsRejected() throws {
        assertRejected(try replacingHeader(of: try token()) { $0["enc"] = "A128CBC-HS256" }, JOSEError(.unsupportedAlgorithm("A128CBC-HS256")))
    }

    func testAnEphemeralKeyOffTheCurveIsRejected() throws {
        let t = try replacingHeader(of: try token()) { fields in
            var epk = fields["epk"] as! [String: String]
            epk["y"] = epk["x"]
            fields["epk"] = epk
        }
        assertRejected(t, JOSEError(.invalidKey("the point is not on P-256")))
    }

    func testANonEmptyEncryptedKeyIsRejected() throws {
        var p = parts(try token())
        p[1] = Base64URL.encode([1, 2, 3])
        assertRejected(p.joined(separator: "."))
    }

    func testAShortIVIsRejected() throws {
        var p = parts(try token())
        p[2] = Base64URL.encode([UInt8](repeating: 0, count: 8))
        assertRejected(p.joined(separator: "."))
    }

    func testWrongPartCountsAndGarbageAreTypedErrors() {
        for t in ["", "a.b.c", "a.b.c.d.e.f", "!!..AA.AA.AA", "e30..AAAAAAAAAAAAAAAA.AA.AAAAAAAAAAAAAAAAAAAAAA"] { assertRejected(t) }
    }

    func testAnEncryptionJWKCarriesOurAlgorithmAndRefusesOthers() throws {
        var jwk = JWK(encryptionKey: recipient.publicKey)
        XCTAssertEqual(jwk.alg, "ECDH-ES")
        XCTAssertEqual(jwk.use, "enc")
        XCTAssertEqual(try JWK(json: jwk.json), jwk)
        XCTAssertEqual(try jwk.p256KeyAgreementKey().rawRepresentation, recipient.publicKey.rawRepresentation)
        jwk.alg = "RSA-OAEP-256"
        XCTAssertThrowsError(try jwk.p256KeyAgreementKey()) { XCTAssertEqual($0 as? JOSEError, JOSEError(.unsupportedAlgorithm("RSA-OAEP-256"))) }
        XCTAssertThrowsError(try JWK(json: "{}"))
    }
}
