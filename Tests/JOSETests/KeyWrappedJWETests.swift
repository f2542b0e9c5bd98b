import Crypto
import Foundation
import JOSE
import Primitives
import XCTest

/// A256KW + A256GCM (Play Integrity's local decryption): a round trip, and one refusal per change of a valid token.
final class KeyWrappedJWETests: XCTestCase {
    let key = SymmetricKey(size: .bits256)

    private func token(_ plaintext: String = "verdict") throws -> String { try KeyWrappedJWE.encrypt(Array(plaintext.utf8), key: key) }
    private func parts(_ token: String) -> [String] { token.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }

    private func reason(_ token: String, key: SymmetricKey? = nil) -> JOSEError.Reason? {
        do {
            _ = try KeyWrappedJWE.decrypt(token, key: key ?? self.key)
            return nil
        } catch { return error.reason }
    }

    private func withHeader(_ token: String, _ header: String) -> String {
        var p = parts(token)
        p[0] = Base64URL.encode(Array(header.utf8))
        return p.joined(separator: ".")
    }

    func testEncryptThenDecryptRoundTrips() throws {
        XCTAssertEqual(String(decoding: try KeyWrappedJWE.decrypt(try token("a verdict ✓"), key: key), as: UTF8.self), "a verdict ✓")
    }

    func testAnotherKeyEncryptionKeyCannotDecrypt() throws {
        XCTAssertEqual(reason(try token(), key: SymmetricKey(size: .bits256)), .decryptionFailed)
    }

    func testATamperedWrappedKeyIsRejected() throws {
        var p = parts(try token())
        var wrapped = Base64URL.decodeBytes(p[1])!
        wrapped[0] ^= 1
        p[1] = Base64URL.encode(wrapped)
        XCTAssertEqual(reason(p.joined(separator: ".")), .decryptionFailed)
    }

    func testATamperedCiphertextIsRejected() throws {
        var p = parts(try token())
        var ciphertext = Base64URL.decodeBytes(p[3])!
        ciphertext[0] ^= 1
        p[3] = Base64URL.encode(ciphertext)
        XCTAssertEqual(reason(p.joined(separator: ".")), .decryptionFailed)
    }

    func testATamperedHeaderIsRejectedBecauseItIsAuthenticated() throws {
        XCTAssertEqual(reason(withHeader(try token(), #"{"alg":"A256KW","enc":"A256GCM","cty":"JWT"}"#)), .decryptionFailed)
    }

    func testAnotherKeyManagementAlgorithmIsRejected() throws {
        XCTAssertEqual(reason(withHeader(try token(), #"{"alg":"A128KW","enc":"A256GCM"}"#)), .unsupportedAlgorithm("A128KW"))
    }

    func testAnotherContentEncryptionIsRejected() throws {
        XCTAssertEqual(reason(withHeader(try token(), #"{"alg":"A256KW","enc":"A128CBC-HS256"}"#)), .unsupportedAlgorithm("A128CBC-HS256"))
    }

    func testACompressedTokenIsRejected() throws {
        XCTAssertEqual(reason(withHeader(try token(), #"{"alg":"A256KW","enc":"A256GCM","zip":"DEF"}"#)), .unsupportedAlgorithm("zip DEF"))
    }

    func testACriticalExtensionIsRejected() throws {
        let reason = reason(withHeader(try token(), #"{"alg":"A256KW","enc":"A256GCM","crit":["exp"]}"#))
        XCTAssertEqual(reason, .malformed("crit names extensions this reader does not understand"))
    }

    func testWrongPartCountsAndShortPartsAreTypedErrors() throws {
        XCTAssertEqual(reason("a.b.c"), .malformed("a compact JWE has five dot-separated parts"))
        var p = parts(try token())
        p[1] = Base64URL.encode([UInt8](repeating: 0, count: 24))
        XCTAssertEqual(reason(p.joined(separator: ".")), .malformed("the encrypted key is not a wrapped 256-bit key (40 bytes)"))
    }

    func testA128BitKeyIsRefusedForEncryption() {
        XCTAssertThrowsError(try KeyWrappedJWE.encrypt([1], key: SymmetricKey(size: .bits128)))
    }
}
