import Crypto
import Foundation
import JOSE
import Primitives
import XCTest

final class JWSTests: XCTestCase {
    let key = P256.Signing.PrivateKey()

    func testSignThenVerifyRoundTrips() throws {
        let token = try JWS.sign(Array(#"{"sub":"device"}"#.utf8), header: JWSHeader(kid: "target-1"), key: key)
        let verified = try JWS.verify(token, key: key.publicKey)
        XCTAssertEqual(verified.header.kid, "target-1")
        XCTAssertEqual(String(decoding: verified.payload, as: UTF8.self), #"{"sub":"device"}"#)
    }

    func testASignerSignsEveryPayloadUnderTheHeaderItWasMadeWith() throws {
        let signer = try JWS.Signer(key: key, header: JWSHeader(kid: "k-1", typ: "JWT"))
        let header = try JWS.sign([], header: JWSHeader(kid: "k-1", typ: "JWT"), key: key).split(separator: ".").first
        let payloads = [[], Array("a".utf8), Array(#"{"sub":"zoë/🚀","n":[1,2]}"#.utf8), [UInt8](repeating: 0xFF, count: 1000)]
        for payload in payloads {
            let token = try signer.sign(payload)
            let verified = try JWS.verify(token, key: key.publicKey)
            XCTAssertEqual(verified.header, JWSHeader(kid: "k-1", typ: "JWT"))
            XCTAssertEqual(verified.payload, payload)
            XCTAssertEqual(token.split(separator: ".").first, header)
        }
        // Data and a slice that does not start at zero sign as the same bytes.
        let bytes = Array("xy{\"a\":1}".utf8)
        XCTAssertEqual(try JWS.verify(try signer.sign(bytes[2...]), key: key.publicKey).payload, Array(bytes[2...]))
        XCTAssertEqual(try JWS.verify(try signer.sign(Data(bytes)), key: key.publicKey).payload, bytes)
    }

    func testASignerForAnotherAlgorithmIsRefused() {
        XCTAssertThrowsError(try JWS.Signer(key: key, header: JWSHeader(alg: "HS256"))) {
            XCTAssertEqual($0 as? JOSEError, JOSEError(.unsupportedAlgorithm("HS256")))
        }
    }

    func testATamperedPayloadIsRejected() throws {
        let token = try JWS.sign(Array("a".utf8), key: key)
        var parts = token.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array("b".utf8))
        XCTAssertThrowsError(try JWS.verify(parts.joined(separator: "."), key: key.publicKey)) {
            XCTAssertEqual($0 as? JOSEError, JOSEError(.signatureInvalid))
        }
    }

    func testAnotherKeyIsRejected() throws {
        let token = try JWS.sign(Array("a".utf8), key: key)
        XCTAssertThrowsError(try JWS.verify(token, key: P256.Signing.PrivateKey().publicKey))
    }

    func testAlgNoneAndOtherAlgorithmsAreRejected() throws {
        let token = try JWS.sign(Array("a".utf8), key: key)
        let parts = token.split(separator: ".").map(String.init)
        for alg in ["none", "HS256", "RS256"] {
            let header = Base64URL.encode(Array(#"{"alg":"\#(alg)"}"#.utf8))
            XCTAssertThrowsError(try JWS.verify([header, parts[1], parts[2]].joined(separator: "."), key: key.publicKey)) {
                XCTAssertEqual($0 as? JOSEError, JOSEError(.unsupportedAlgorithm(alg)))
            }
        }
        XCTAssertThrowsError(try JWS.sign([], header: JWSHeader(alg: "none"), key: key))
    }

    func testMalformedTokensAreTypedErrors() {
        for token in ["", "a.b", "a.b.c.d", "!!.e30.AA", "e30.e30.AA"] {
            XCTAssertThrowsError(try JWS.verify(token, key: key.publicKey)) { XCTAssertTrue($0 is JOSEError) }
        }
    }

    func testJWKRoundTripAndThumbprint() throws {
        let jwk = JWK(publicKey: key.publicKey, kid: "k")
        XCTAssertEqual(try jwk.p256SigningKey().rawRepresentation, key.publicKey.rawRepresentation)
        let decoded = try JSONDecoder().decode(JWK.self, from: JSONEncoder().encode(jwk))
        XCTAssertEqual(decoded, jwk)
        XCTAssertEqual(jwk.thumbprint.count, 43)
        var broken = jwk
        broken.crv = "P-384"
        XCTAssertThrowsError(try broken.p256SigningKey())
        broken = jwk
        broken.y = broken.x
        XCTAssertThrowsError(try broken.p256SigningKey(), "a point not on the curve")
    }

    func testRFC7638ThumbprintExampleShape() throws {
        // RFC 7638 §3.1 canonical form for EC keys: {"crv","kty","x","y"} in that order, no whitespace.
        let jwk = try JSONDecoder().decode(JWK.self, from: Data(#"{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}"#.utf8))
        let expected = Base64URL.encode(Array(SHA256.hash(data: Array(#"{"crv":"P-256","kty":"EC","x":"AA","y":"AA"}"#.utf8))))
        XCTAssertEqual(jwk.thumbprint, expected)
    }
}
