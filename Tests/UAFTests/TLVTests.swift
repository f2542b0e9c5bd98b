import Primitives
import XCTest

@testable import UAF

final class TLVTests: XCTestCase {
    func testDecoderIsTotalOnRandomInput() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<300 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? TLVDecoder.decodeSequence(bytes[...])
            _ = try? RegistrationAssertion(bytes: bytes)
            _ = try? AuthenticationAssertion(bytes: bytes)
        }
    }

    func testEveryTruncationOfAValidAssertionIsATypedError() throws {
        let response = try TestRegistrationBuilder().build()
        let bytes = Array(Base64URL.decode(response.assertions[0].assertion)!)
        for length in 0..<bytes.count {
            XCTAssertThrowsError(try RegistrationAssertion(bytes: Array(bytes.prefix(length)))) { XCTAssertTrue($0 is TLVError) }
        }
        XCTAssertNoThrow(try RegistrationAssertion(bytes: bytes))
    }

    func testTagsInsideACompositeMayComeInAnyOrder() throws {
        var e = TLVEncoder()
        try e.composite(.authAssertion) { (a: inout TLVEncoder) throws(TLVError) in
            try a.leaf(.signature, [1, 2, 3])
            try a.composite(.signedData) { (s: inout TLVEncoder) throws(TLVError) in
                try s.leaf(.counters, [9, 0, 0, 0])
                try s.leaf(.keyID, Array(repeating: 5, count: 32))
                try s.leaf(.transactionContentHash, [])
                try s.leaf(.finalChallengeHash, Array(repeating: 1, count: 32))
                try s.leaf(.authenticatorNonce, Array(repeating: 2, count: 8))
                try s.leaf(.assertionInfo, [1, 0, 1, 2, 0])
                try s.leaf(.aaid, Array("F1D0#1001".utf8))
            }
        }
        let parsed = try AuthenticationAssertion(bytes: e.bytes)
        XCTAssertEqual(parsed.signedData.signCounter, 9)
        XCTAssertEqual(parsed.signedData.keyID, Array(repeating: 5, count: 32))
        XCTAssertEqual(parsed.signature, [1, 2, 3])
    }

    func testUnknownNonCriticalTagsAreSkipped() throws {
        var builder = TestAuthenticationBuilder(key: .init())
        builder.mutateAssertion = { bytes in
            bytes.insert(contentsOf: [0x04, 0x01, 0x02, 0x00, 0xAA, 0xBB], at: 8)  // TAG_USER_VERIFICATION_INDEX (non-critical)
            func bump(_ at: Int) {
                let v = Int(bytes[at]) | Int(bytes[at + 1]) << 8 + 6
                bytes[at] = UInt8(v & 0xFF)
                bytes[at + 1] = UInt8(v >> 8)
            }
            bump(2)
            bump(6)
        }
        let assertion = try builder.build().assertions[0].assertion
        XCTAssertNoThrow(try AuthenticationAssertion(bytes: Array(Base64URL.decode(assertion)!)))
    }

    func testDuplicateTagIsRejected() throws {
        var e = TLVEncoder()
        try e.composite(.authAssertion) { (a: inout TLVEncoder) throws(TLVError) in
            try a.leaf(.signature, [1])
            try a.leaf(.signature, [2])
        }
        XCTAssertThrowsError(try AuthenticationAssertion(bytes: e.bytes)) { XCTAssertEqual($0 as? TLVError, TLVError.duplicateTag(.signature)) }
    }

    func testMissingMandatoryTagIsRejected() throws {
        var e = TLVEncoder()
        try e.composite(.authAssertion) { (a: inout TLVEncoder) throws(TLVError) in try a.leaf(.signature, [1]) }
        XCTAssertThrowsError(try AuthenticationAssertion(bytes: e.bytes)) { XCTAssertEqual($0 as? TLVError, TLVError.missingTag(.signedData)) }
    }

    func testWrongOuterTagIsRejected() throws {
        var e = TLVEncoder()
        try e.leaf(.signature, [1])
        XCTAssertThrowsError(try RegistrationAssertion(bytes: e.bytes)) {
            XCTAssertEqual($0 as? TLVError, TLVError.unexpectedTag(expected: .regAssertion, found: .signature))
        }
    }

    func testAssertionInfoAndCounterLengthsAreChecked() throws {
        var builder = TestRegistrationBuilder()
        builder.mutateAssertion = { bytes in
            // Shrink TAG_COUNTERS (8 bytes) to 4: find it and rewrite its length, drop 4 bytes, fix outer lengths.
            let index = (0..<(bytes.count - 1)).first { bytes[$0] == 0x0D && bytes[$0 + 1] == 0x2E }!
            bytes[index + 2] = 4
            bytes.removeSubrange((index + 8)..<(index + 12))
            func shrink(_ at: Int) {
                let v = Int(bytes[at]) | Int(bytes[at + 1]) << 8 - 4
                bytes[at] = UInt8(v & 0xFF)
                bytes[at + 1] = UInt8(v >> 8)
            }
            shrink(2)
            shrink(6)
        }
        let assertion = try builder.build().assertions[0].assertion
        XCTAssertThrowsError(try RegistrationAssertion(bytes: Array(Base64URL.decode(assertion)!))) {
            XCTAssertEqual($0 as? TLVError, TLVError.invalidLength(tag: .counters, length: 4))
        }
    }

    func testUnknownCriticalExtensionIsRejectedAndNonCriticalIsKept() throws {
        for critical in [true, false] {
            var krd = KeyRegistrationData(
                aaid: "F1D0#1001", authenticatorVersion: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER,
                publicKeyEncoding: .eccX962DER, finalChallengeHash: [1], keyID: Array(repeating: 2, count: 32), signCounter: 0,
                registrationCounter: 0, publicKey: [3])
            krd.extensions = [AssertionExtension(id: "ext.example", data: [9], isCritical: critical)]
            let bytes = try AssertionBuilder.registration(krd) { _ in [0] }
            if critical {
                XCTAssertThrowsError(try RegistrationAssertion(bytes: bytes)) {
                    XCTAssertEqual($0 as? TLVError, TLVError.unknownCriticalExtension(id: "ext.example"))
                }
            } else {
                XCTAssertEqual(try RegistrationAssertion(bytes: bytes).keyRegistrationData.extensions.first?.id, "ext.example")
            }
        }
    }

    func testEncoderRejectsValuesLongerThan65535Bytes() {
        var e = TLVEncoder()
        XCTAssertThrowsError(try e.leaf(.signature, [UInt8](repeating: 0, count: 65_536)))
    }

    func testBase64URLRoundTripAndStrictAlphabet() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 37) }
            let encoded = Base64URL.encode(bytes)
            XCTAssertFalse(encoded.contains("=") || encoded.contains("+") || encoded.contains("/"))
            XCTAssertEqual(Base64URL.decode(encoded).map { [UInt8]($0) }, bytes)
        }
        XCTAssertEqual(Base64URL.decode("AQ==").map { [UInt8]($0) }, [1], "padding is tolerated")
        XCTAssertNil(Base64URL.decode("a+b/"))
        XCTAssertNil(Base64URL.decode("abcde"))
    }

    /// Foundation's base64, with its alphabet's two characters swapped and its padding cut, is the reference; every
    /// kind of input (contiguous or not, a slice that does not start at zero) and both ways of writing agree with it.
    func testBase64URLEncodingAgreesWithFoundationForEveryInputKind() {
        for length in 0..<100 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) }
            let expected = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(Base64URL.encode(bytes), expected, "array of \(length)")
            XCTAssertEqual(Base64URL.encode(Data(bytes)), expected, "data of \(length)")
            XCTAssertEqual(Base64URL.encode(([0, 0] + bytes)[2...]), expected, "slice of \(length)")
            XCTAssertEqual(Base64URL.encodedCount(length), expected.utf8.count)
            var out = Array("prefix.".utf8)
            Base64URL.append(bytes, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), "prefix." + expected)
        }
        let repeated = repeatElement(UInt8(0xFB), count: 31)
        XCTAssertEqual(Base64URL.encode(repeated), Base64URL.encode(Array(repeated)), "a collection without contiguous storage")
    }
}
