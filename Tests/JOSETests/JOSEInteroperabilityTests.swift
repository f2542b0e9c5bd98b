import Crypto
import FIDOSimulation
import Foundation
import JOSE
import Primitives
import TestSupport
import XCTest

/// Our JWE and JWS against an independent implementation (Python's jwcrypto, installed from PyPI by `.ci/run`),
/// in both directions.
final class JOSEInteroperabilityTests: XCTestCase {
    private var script: String {
        ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/jose_interop.py").path
    }

    override func setUpWithError() throws {
        if case .skipped(let why) = try ExternalTool.require("python3 with jwcrypto", probe: ["python3", script, "check"]) {
            throw XCTSkip(why)
        }
    }

    private func peer(_ arguments: String...) throws -> String {
        let output = try ExternalProgram.run(["python3", script] + arguments)
        guard output.status == 0 else { throw ExternalProgram.Failure("jwcrypto failed: \(output.stderr)") }
        return output.stdout
    }

    private func privateJWK(x963 raw: [UInt8], scalar: [UInt8]) -> String {
        #"{"kty":"EC","crv":"P-256","x":"\#(Base64URL.encode(raw[1..<33]))","y":"\#(Base64URL.encode(raw[33..<65]))","d":"\#(Base64URL.encode(scalar))"}"#
    }

    func testJwcryptoDecryptsOurJWE() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let token = try JWE.encrypt(Array(#"{"nma":"payload ✓"}"#.utf8), to: key.publicKey, keyID: "t1", contentType: "application/json")
        let jwk = privateJWK(x963: Array(key.publicKey.x963Representation), scalar: Array(key.rawRepresentation))
        XCTAssertEqual(try peer("decrypt-jwe", jwk, token), #"{"nma":"payload ✓"}"#)
    }

    func testWeDecryptJwcryptosJWE() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let token = try peer("encrypt-jwe", JWK(encryptionKey: key.publicKey).json, "from jwcrypto")
        XCTAssertEqual(String(decoding: try JWE.decrypt(token, key: key).plaintext, as: UTF8.self), "from jwcrypto")
    }

    func testJwcryptoVerifiesOurJWS() throws {
        let key = P256.Signing.PrivateKey()
        let token = try JWS.sign(Array(#"{"requestId":"r1"}"#.utf8), header: JWSHeader(kid: "t1"), key: key)
        XCTAssertEqual(try peer("verify-jws", JWK(publicKey: key.publicKey).json, token), #"{"requestId":"r1"}"#)
    }

    func testJwcryptoVerifiesWhatASignerSigns() throws {
        let key = P256.Signing.PrivateKey()
        let signer = try JWS.Signer(key: key, header: JWSHeader(kid: "t1", typ: "JWT"))
        for payload in [#"{"sid":"s1"}"#, #"{"sub":"zoë \"the\" user/🚀"}"#] {
            XCTAssertEqual(try peer("verify-jws", JWK(publicKey: key.publicKey).json, try signer.sign(Array(payload.utf8))), payload)
        }
    }

    func testWeVerifyJwcryptosJWS() throws {
        let key = P256.Signing.PrivateKey()
        let jwk = privateJWK(x963: Array(key.publicKey.x963Representation), scalar: Array(key.rawRepresentation))
        let token = try peer("sign-jws", jwk, "signed by jwcrypto")
        XCTAssertEqual(String(decoding: try JWS.verify(token, key: key.publicKey).payload, as: UTF8.self), "signed by jwcrypto")
    }

    func testJwcryptoDecryptsOurKeyWrappedJWE() throws {
        let key = SymmetricKey(size: .bits256)
        let token = try KeyWrappedJWE.encrypt(Array("a Play Integrity verdict".utf8), key: key)
        XCTAssertEqual(try peer("unwrap-jwe", octJWK(key), token), "a Play Integrity verdict")
    }

    func testWeDecryptJwcryptosKeyWrappedJWE() throws {
        let key = SymmetricKey(size: .bits256)
        let token = try peer("wrap-jwe", octJWK(key), "wrapped by jwcrypto")
        XCTAssertEqual(String(decoding: try KeyWrappedJWE.decrypt(token, key: key), as: UTF8.self), "wrapped by jwcrypto")
    }

    private func octJWK(_ key: SymmetricKey) -> String {
        #"{"kty":"oct","k":"\#(key.withUnsafeBytes { Base64URL.encode(Array($0)) })"}"#
    }
}
