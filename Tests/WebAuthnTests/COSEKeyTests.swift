import CBOR
import Crypto
import WebAuthn
import XCTest
import _CryptoExtras

/// COSE keys: each algorithm verifies what swift-crypto signs, and each refusal comes from one changed field of a
/// valid key.
final class COSEKeyTests: XCTestCase {
    static let p256 = P256.Signing.PrivateKey()

    /// A valid ES256 key's map, for `change` to alter one field of.
    static func ec2(_ key: P256.Signing.PublicKey = p256.publicKey, change: (inout [Int64: CBOR]) -> Void = { _ in }) -> [UInt8] {
        let point = Array(key.x963Representation)
        var fields: [Int64: CBOR] = [1: .int(2), 3: .int(-7), -1: .int(1), -2: .bytes(Array(point[1..<33])), -3: .bytes(Array(point[33...]))]
        change(&fields)
        return CBOREncoder.encode(.map(CBORMap(fields.map { CBORMap.Entry(.int($0.key), $0.value) })))
    }

    func reason(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> COSEKeyError.Reason? {
        do {
            _ = try COSEKey(bytes: bytes)
            XCTFail("accepted", file: file, line: line)
            return nil
        } catch { return error.reason }
    }

    // MARK: - Keys made from swift-crypto keys

    func testAP256KeyIsEncodedAsTheCanonicalES256Map() throws {
        let key = COSEKey(Self.p256.publicKey)
        XCTAssertEqual(key.encoded, Self.ec2())
        XCTAssertEqual(try COSEKey(bytes: key.encoded).algorithm, .es256)
        let data = Array("signed".utf8)
        XCTAssertTrue(key.isValidSignature(Array(try Self.p256.signature(for: data).derRepresentation), for: data))
    }

    func testAnEd25519KeyIsEncodedAsTheCanonicalEdDSAMap() throws {
        let private25519 = Curve25519.Signing.PrivateKey()
        let key = COSEKey(private25519.publicKey)
        let expected = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(1)), .init(.int(3), .int(-8)), .init(.int(-1), .int(6)),
                    .init(.int(-2), .bytes(Array(private25519.publicKey.rawRepresentation))),
                ])))
        XCTAssertEqual(key.encoded, expected)
        XCTAssertEqual(try COSEKey(bytes: key.encoded).algorithm, .edDSA)
        let data = Array("signed".utf8)
        XCTAssertTrue(key.isValidSignature(Array(try private25519.signature(for: data)), for: data))
    }

    // MARK: - Every algorithm verifies

    func testES256ES384AndES512VerifyDERSignatures() throws {
        let message = Array("authData || clientDataHash".utf8)
        let p384 = P384.Signing.PrivateKey()
        let p521 = P521.Signing.PrivateKey()
        func key(_ alg: Int64, _ crv: Int64, _ point: Data) -> [UInt8] {
            let size = (point.count - 1) / 2
            return CBOREncoder.encode(
                .map(
                    CBORMap([
                        .init(.int(1), .int(2)), .init(.int(3), .int(alg)), .init(.int(-1), .int(crv)),
                        .init(.int(-2), .bytes(Array(point[1...size]))), .init(.int(-3), .bytes(Array(point[(size + 1)...]))),
                    ])))
        }
        let es256 = try COSEKey(bytes: Self.ec2())
        XCTAssertTrue(es256.isValidSignature(Array(try Self.p256.signature(for: message).derRepresentation), for: message))
        let es384 = try COSEKey(bytes: key(-35, 2, p384.publicKey.x963Representation))
        XCTAssertTrue(es384.isValidSignature(Array(try p384.signature(for: message).derRepresentation), for: message))
        let es512 = try COSEKey(bytes: key(-36, 3, p521.publicKey.x963Representation))
        XCTAssertEqual(es512.algorithm, .es512)
        XCTAssertTrue(es512.isValidSignature(Array(try p521.signature(for: message).derRepresentation), for: message))
        XCTAssertFalse(
            es256.isValidSignature(Array(try Self.p256.signature(for: message).rawRepresentation), for: message), "a raw (not DER) ECDSA signature")
    }

    func testEdDSAVerifiesARawEd25519Signature() throws {
        let ed = Curve25519.Signing.PrivateKey()
        let bytes = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(1)), .init(.int(3), .int(-8)), .init(.int(-1), .int(6)),
                    .init(.int(-2), .bytes(Array(ed.publicKey.rawRepresentation))),
                ])))
        let message = Array("signed".utf8)
        XCTAssertTrue(try COSEKey(bytes: bytes).isValidSignature(Array(try ed.signature(for: message)), for: message))
    }

    func testRSAKeysVerifyPKCS1AndPSSWithTheirHash() throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try rsa.publicKey.getKeyPrimitives()
        let message = Array("signed".utf8)
        func key(_ alg: Int64) throws -> COSEKey {
            try COSEKey(
                bytes: CBOREncoder.encode(
                    .map(
                        CBORMap([
                            .init(.int(1), .int(3)), .init(.int(3), .int(alg)),
                            .init(.int(-1), .bytes(Array(primitives.modulus))),
                            .init(.int(-2), .bytes(Array(primitives.publicExponent))),
                        ]))))
        }
        let cases: [(Int64, _RSA.Signing.Padding, any Digest)] = [
            (-257, .insecurePKCS1v1_5, SHA256.hash(data: message)), (-258, .insecurePKCS1v1_5, SHA384.hash(data: message)),
            (-259, .insecurePKCS1v1_5, SHA512.hash(data: message)), (-37, .PSS, SHA256.hash(data: message)),
            (-38, .PSS, SHA384.hash(data: message)), (-39, .PSS, SHA512.hash(data: message)),
        ]
        for (alg, padding, digest) in cases {
            let signature: _RSA.Signing.RSASignature
            switch digest {
            case let digest as SHA256.Digest: signature = try rsa.signature(for: digest, padding: padding)
            case let digest as SHA384.Digest: signature = try rsa.signature(for: digest, padding: padding)
            default: signature = try rsa.signature(for: digest as! SHA512.Digest, padding: padding)
            }
            XCTAssertTrue(try key(alg).isValidSignature(Array(signature.rawRepresentation), for: message), "alg \(alg)")
            // The same signature under the neighbouring algorithm (another hash or padding) does not verify.
            let other: Int64 = alg == -257 ? -37 : -257
            XCTAssertFalse(try key(other).isValidSignature(Array(signature.rawRepresentation), for: message), "alg \(alg) as \(other)")
        }
    }

    // MARK: - One changed field, one reason

    func testNotCBORIsMalformed() { XCTAssertEqual(reason([0xa1, 0x01]), .malformed(CBORError(.truncated, at: 2))) }
    func testNotAMapIsRefused() { XCTAssertEqual(reason(CBOREncoder.encode(.array([]))), .notAMap) }
    func testAMissingKeyTypeIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[1] = nil }), .missingParameter(label: 1)) }
    func testAMissingAlgorithmIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[3] = nil }), .missingParameter(label: 3)) }
    func testAnAlgorithmAsTextIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[3] = .text("ES256") }), .missingParameter(label: 3)) }
    func testAnUnknownAlgorithmIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[3] = .int(-999) }), .unknownAlgorithm(-999)) }
    func testEd448IsUnavailable() { XCTAssertEqual(reason(Self.ec2 { $0[3] = .int(-53) }), .algorithmUnavailable(-53)) }
    func testRS1IsUnavailable() { XCTAssertEqual(reason(Self.ec2 { $0[3] = .int(-65535) }), .algorithmUnavailable(-65535)) }
    func testAKeyTypeThatDoesNotFitTheAlgorithmIsRefused() {
        XCTAssertEqual(reason(Self.ec2 { $0[1] = .int(3) }), .keyTypeMismatch(keyType: 3, algorithm: -7))
    }
    func testTheWrongCurveForTheAlgorithmIsRefused() {
        XCTAssertEqual(reason(Self.ec2 { $0[-1] = .int(2) }), .curveMismatch(curve: 2, algorithm: -7))
    }
    func testAMissingCurveIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[-1] = nil }), .missingParameter(label: -1)) }
    func testAMissingXIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[-2] = nil }), .missingParameter(label: -2)) }
    func testAMissingYIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[-3] = nil }), .missingParameter(label: -3)) }
    func testACompressedPointIsRefused() { XCTAssertEqual(reason(Self.ec2 { $0[-3] = .bool(true) }), .compressedPoint) }
    func testAShortCoordinateIsRefused() {
        XCTAssertEqual(reason(Self.ec2 { $0[-2] = .bytes(Array(repeating: 1, count: 31)) }), .coordinateLength(label: -2, length: 31))
    }
    func testAPointOffTheCurveIsRefused() {
        XCTAssertEqual(reason(Self.ec2 { $0[-3] = .bytes(Array(repeating: 1, count: 32)) }), .invalidPoint)
    }
    func testAPrivateScalarIsRefused() {
        XCTAssertEqual(reason(Self.ec2 { $0[-4] = .bytes(Array(Self.p256.rawRepresentation)) }), .privateKeyMaterial)
    }
    func testAnRSAKeyBelow2048BitsIsRefused() {
        let bytes = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(3)), .init(.int(3), .int(-257)),
                    .init(.int(-1), .bytes([0x80] + Array(repeating: 0x01, count: 255))),
                    .init(.int(-2), .bytes([1, 0, 1])),
                ])))
        XCTAssertNoThrow(try COSEKey(bytes: bytes))
        let short = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(3)), .init(.int(3), .int(-257)),
                    .init(.int(-1), .bytes([0x7f] + Array(repeating: 0x01, count: 255))),
                    .init(.int(-2), .bytes([1, 0, 1])),
                ])))
        XCTAssertEqual(reason(short), .rsaKeySize(bits: 2047))
    }
    func testAnEd25519KeyOfTheWrongLengthIsRefused() {
        let bytes = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(1)), .init(.int(3), .int(-8)), .init(.int(-1), .int(6)),
                    .init(.int(-2), .bytes(Array(repeating: 9, count: 31))),
                ])))
        XCTAssertEqual(reason(bytes), .coordinateLength(label: -2, length: 31))
    }
    func testAnOKPKeyOnTheX25519CurveIsRefused() {
        let bytes = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(1)), .init(.int(3), .int(-8)), .init(.int(-1), .int(4)),
                    .init(.int(-2), .bytes(Array(repeating: 9, count: 32))),
                ])))
        XCTAssertEqual(reason(bytes), .curveMismatch(curve: 4, algorithm: -8))
    }
}
