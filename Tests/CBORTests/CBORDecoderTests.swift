import CBOR
import XCTest

/// The decoder's rules, one rejection per test, each built by changing one byte (or one length) of a valid input;
/// and the examples of RFC 8949 Appendix A that use definite lengths.
final class CBORDecoderTests: XCTestCase {
    let canonical = CBORDecoder(rules: .canonical), lenient = CBORDecoder(rules: .wellFormed)

    private func reason(_ bytes: [UInt8], _ decoder: CBORDecoder? = nil, file: StaticString = #filePath, line: UInt = #line) -> CBORError.Reason? {
        do {
            let value = try (decoder ?? canonical).decode(bytes)
            XCTFail("accepted as \(value)", file: file, line: line)
            return nil
        } catch {
            return error.reason
        }
    }

    // MARK: - What decodes

    func testTheAppendixAExamplesDecodeToTheirValues() throws {
        let examples: [([UInt8], CBOR)] = [
            ([0x00], .unsigned(0)), ([0x17], .unsigned(23)), ([0x18, 0x18], .unsigned(24)), ([0x19, 0x03, 0xe8], .unsigned(1000)),
            ([0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], .unsigned(.max)),
            ([0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], .negative(.max)),
            ([0x20], .int(-1)), ([0x38, 0x63], .int(-100)), ([0x39, 0x03, 0xe7], .int(-1000)),
            ([0xf9, 0x00, 0x00], .float(0)), ([0xf9, 0x80, 0x00], .float(-0.0)), ([0xf9, 0x3c, 0x00], .float(1)),
            ([0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a], .float(1.1)), ([0xf9, 0x3e, 0x00], .float(1.5)),
            ([0xf9, 0x7b, 0xff], .float(65504)), ([0xfa, 0x47, 0xc3, 0x50, 0x00], .float(100000)),
            ([0xf9, 0x00, 0x01], .float(5.960464477539063e-8)), ([0xf9, 0x04, 0x00], .float(0.00006103515625)),
            ([0xf9, 0xc4, 0x00], .float(-4)), ([0xf9, 0x7c, 0x00], .float(.infinity)), ([0xf9, 0xfc, 0x00], .float(-.infinity)),
            ([0xf4], .bool(false)), ([0xf5], .bool(true)), ([0xf6], .null), ([0xf7], .undefined), ([0xf0], .simple(16)),
            ([0xf8, 0xff], .simple(255)),
            ([0xc1, 0x1a, 0x51, 0x4b, 0x67, 0xb0], .tagged(1, .unsigned(1_363_896_240))),
            ([0x40], .bytes([])), ([0x44, 0x01, 0x02, 0x03, 0x04], .bytes([1, 2, 3, 4])),
            ([0x60], .text("")), ([0x62, 0xc3, 0xbc], .text("ü")), ([0x64, 0xf0, 0x90, 0x85, 0x91], .text("\u{10151}")),
            ([0x80], .array([])), ([0x83, 0x01, 0x02, 0x03], .array([.unsigned(1), .unsigned(2), .unsigned(3)])),
            ([0xa0], .map(CBORMap())),
            ([0xa2, 0x01, 0x02, 0x03, 0x04], .map(CBORMap([.init(.unsigned(1), .unsigned(2)), .init(.unsigned(3), .unsigned(4))]))),
            (
                [0xa2, 0x61, 0x61, 0x01, 0x61, 0x62, 0x82, 0x02, 0x03],
                .map(CBORMap([.init(.text("a"), .unsigned(1)), .init(.text("b"), .array([.unsigned(2), .unsigned(3)]))]))
            ),
        ]
        for (bytes, expected) in examples {
            XCTAssertEqual(try canonical.decode(bytes), expected, "\(bytes)")
            XCTAssertEqual(CBOREncoder.encode(expected), bytes, "encoding \(expected)")
        }
        let nan = try canonical.decode([0xf9, 0x7e, 0x00])
        guard case .float(let value) = nan, value.isNaN else { return XCTFail("\(nan)") }
    }

    func testACOSEKeyReadsByIntegerKeys() throws {
        // {1: 2, 3: -7, -1: 1, -2: h'01', -3: h'02'}: an EC2 P-256 key's map shape, in canonical order.
        let bytes: [UInt8] = [0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x41, 0x01, 0x22, 0x41, 0x02]
        let key = try XCTUnwrap(try canonical.decode(bytes).map)
        XCTAssertEqual(key[int: 3]?.int, -7)
        XCTAssertEqual(key[int: -2]?.bytes, [1])
        XCTAssertNil(key[int: 4])
    }

    func testAPrefixLeavesTheBytesAfterIt() throws {
        let bytes: [UInt8] = [0x99, 0xa1, 0x01, 0x02, 0xde, 0xad]
        let (value, end) = try canonical.decodePrefix(bytes[1...])
        XCTAssertEqual(value, .map(CBORMap([.init(.unsigned(1), .unsigned(2))])))
        XCTAssertEqual(end, 4)
    }

    func testTheWellFormedRulesAcceptNonCanonicalOrderAndWidths() throws {
        XCTAssertEqual(try lenient.decode([0xa2, 0x03, 0x04, 0x01, 0x02]).map?[int: 1], .unsigned(2))
        XCTAssertEqual(try lenient.decode([0x18, 0x01]), .unsigned(1))
        XCTAssertEqual(try lenient.decode([0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]), .float(1.5))
    }

    // MARK: - What is refused, one reason each

    func testAnEmptyInputIsTruncated() { XCTAssertEqual(reason([]), .truncated) }
    func testAnArgumentCutShortIsTruncated() { XCTAssertEqual(reason([0x19, 0x03]), .truncated) }
    func testAByteStringLongerThanTheInputIsTruncated() { XCTAssertEqual(reason([0x44, 0x01, 0x02, 0x03]), .truncated) }
    func testAnArrayWithAMissingItemIsTruncated() { XCTAssertEqual(reason([0x83, 0x01, 0x02]), .truncated) }

    func testAHugeDeclaredLengthIsRefusedBeforeAllocating() {
        XCTAssertEqual(reason([0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]), .truncated)
        XCTAssertEqual(reason([0xbb, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00]), .truncated)
        XCTAssertEqual(reason([0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]), .truncated)
    }

    func testBytesAfterTheItemAreRefused() { XCTAssertEqual(reason([0x01, 0x02]), .trailingBytes) }

    func testIndefiniteLengthsAreRefused() {
        XCTAssertEqual(reason([0x5f, 0x41, 0x01, 0xff]), .indefiniteLength, "byte string")
        XCTAssertEqual(reason([0x7f, 0x61, 0x61, 0xff]), .indefiniteLength, "text string")
        XCTAssertEqual(reason([0x9f, 0x01, 0xff], lenient), .indefiniteLength, "array")
        XCTAssertEqual(reason([0xbf, 0x01, 0x02, 0xff], lenient), .indefiniteLength, "map")
    }

    func testABreakOutsideAnIndefiniteItemIsRefused() { XCTAssertEqual(reason([0xff]), .unexpectedBreak) }

    func testReservedAdditionalInformationIsRefused() {
        XCTAssertEqual(reason([0x1c]), .reservedAdditionalInformation(28))
        XCTAssertEqual(reason([0xfd], lenient), .reservedAdditionalInformation(29))
        XCTAssertEqual(reason([0x1f]), .reservedAdditionalInformation(31), "an indefinite integer")
        XCTAssertEqual(reason([0xdf, 0x01]), .reservedAdditionalInformation(31), "an indefinite tag")
    }

    func testASimpleValueBelow32InTwoBytesIsRefused() { XCTAssertEqual(reason([0xf8, 0x14], lenient), .invalidSimpleValue(20)) }

    func testATextStringThatIsNotUTF8IsRefused() {
        XCTAssertEqual(reason([0x62, 0xc3, 0x28]), .invalidUTF8)
        XCTAssertEqual(reason([0x63, 0xed, 0xa0, 0x80]), .invalidUTF8, "a UTF-16 surrogate")
    }

    func testNestingDeeperThanTheLimitIsRefused() {
        let decoder = CBORDecoder(maximumDepth: 3)
        XCTAssertNoThrow(try decoder.decode([0x81, 0x81, 0x01]))
        XCTAssertEqual(reason([0x81, 0x81, 0x81, 0x01], decoder), .tooDeep(limit: 3))
        XCTAssertEqual(reason([0x81, 0x81, 0xc1, 0x01], decoder), .tooDeep(limit: 3), "a tag nests too")
        let bomb = [UInt8](repeating: 0x81, count: 100_000) + [0x01]
        XCTAssertEqual(reason(bomb), .tooDeep(limit: 16), "a deep input is refused, not a stack overflow")
    }

    func testAnInputLongerThanTheLimitIsRefused() {
        let decoder = CBORDecoder(maximumBytes: 4)
        XCTAssertNoThrow(try decoder.decode([0x43, 1, 2, 3]))
        XCTAssertEqual(reason([0x44, 1, 2, 3, 4], decoder), .tooLarge(limit: 4))
    }

    func testARepeatedMapKeyIsRefusedUnderBothRules() {
        XCTAssertEqual(reason([0xa2, 0x01, 0x02, 0x01, 0x03]), .duplicateMapKey)
        XCTAssertEqual(reason([0xa2, 0x01, 0x02, 0x01, 0x03], lenient), .duplicateMapKey)
        XCTAssertEqual(reason([0xa2, 0x01, 0x02, 0x18, 0x01, 0x03], lenient), .duplicateMapKey, "the same key, written longer")
    }

    func testAnIntegerNotInItsShortestFormIsRefusedAsCanonical() {
        XCTAssertEqual(reason([0x18, 0x17]), .notShortest)
        XCTAssertEqual(reason([0x19, 0x00, 0xff]), .notShortest)
        XCTAssertEqual(reason([0x1a, 0x00, 0x00, 0xff, 0xff]), .notShortest)
        XCTAssertEqual(reason([0x1b, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]), .notShortest)
        XCTAssertEqual(reason([0x38, 0x10]), .notShortest, "a negative integer")
    }

    func testALengthOrTagNotInItsShortestFormIsRefusedAsCanonical() {
        XCTAssertEqual(reason([0x58, 0x01, 0xaa]), .notShortest, "a byte string's length")
        XCTAssertEqual(reason([0x98, 0x01, 0x01]), .notShortest, "an array's length")
        XCTAssertEqual(reason([0xd8, 0x01, 0x01]), .notShortest, "a tag")
    }

    func testAFloatANarrowerOneHoldsIsRefusedAsCanonical() {
        XCTAssertEqual(reason([0xfa, 0x3f, 0xc0, 0x00, 0x00]), .notShortest, "1.5 as a single")
        XCTAssertEqual(reason([0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]), .notShortest, "1.5 as a double")
        XCTAssertEqual(reason([0xfb, 0x40, 0xf8, 0x6a, 0x00, 0, 0, 0, 0]), .notShortest, "100000 as a double")
        XCTAssertEqual(reason([0xf9, 0x7e, 0x01]), .notShortest, "a NaN other than 0x7e00")
        XCTAssertEqual(reason([0xfa, 0x7f, 0xc0, 0x00, 0x00]), .notShortest, "a NaN as a single")
    }

    func testMapKeysOutOfCanonicalOrderAreRefusedAsCanonical() {
        XCTAssertEqual(reason([0xa2, 0x03, 0x04, 0x01, 0x02]), .mapKeysOutOfOrder, "3 before 1")
        // -1 (0x20) sorts after 1 (0x01) bytewise; a longer key after a shorter one.
        XCTAssertEqual(reason([0xa2, 0x20, 0x00, 0x01, 0x00]), .mapKeysOutOfOrder)
        XCTAssertEqual(reason([0xa2, 0x18, 0x18, 0x00, 0x01, 0x00]), .mapKeysOutOfOrder, "a 2-byte key before a 1-byte key")
        XCTAssertEqual(reason([0xa2, 0x62, 0x61, 0x61, 0x00, 0x61, 0x62, 0x00]), .mapKeysOutOfOrder, "\"aa\" before \"b\"")
    }

    func testAnErrorNamesTheOffsetOfTheItem() throws {
        do {
            _ = try canonical.decode([0x82, 0x01, 0x62, 0xc3, 0x28])
            XCTFail("accepted")
        } catch {
            XCTAssertEqual(error, CBORError(.invalidUTF8, at: 2))
            XCTAssertEqual(error.description, "CBOR: a text string that is not UTF-8 at byte 2")
        }
    }
}
