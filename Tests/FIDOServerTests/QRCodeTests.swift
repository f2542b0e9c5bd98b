import FIDOSimulation
import Foundation
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The QR encoder and PNG writer, checked against the standard's published numbers and decoded by an independent
/// decoder (zbarimg from Debian's zbar-tools, installed by `.ci/run`).
final class QRCodeTests: XCTestCase {
    // MARK: Rules, checked without a decoder

    func testByteCapacitiesMatchTheStandardAtLevelM() {
        // ISO/IEC 18004 Table 7, byte mode, level M (version 27 holds 1,128 data code words: 1,125 bytes).
        let expected = [1: 14, 2: 26, 3: 42, 4: 62, 5: 84, 6: 106, 7: 122, 8: 152, 9: 180, 10: 213, 15: 412, 20: 666, 27: 1125, 40: 2331]
        for (version, capacity) in expected {
            XCTAssertEqual(QRCode.byteCapacity(version: version, level: .medium), capacity, "version \(version)")
        }
        XCTAssertEqual(QRCode.byteCapacity(version: 40, level: .low), 2953)
        XCTAssertEqual(QRCode.byteCapacity(version: 1, level: .high), 7)
    }

    func testTheSmallestVersionThatFitsIsChosen() throws {
        XCTAssertEqual(try QRCode(bytes: Array(repeating: 0x41, count: 14)).version, 1)
        XCTAssertEqual(try QRCode(bytes: Array(repeating: 0x41, count: 15)).version, 2)
        XCTAssertEqual(try QRCode(bytes: Array(repeating: 0x41, count: 213)).version, 10)
        XCTAssertEqual(try QRCode(bytes: Array(repeating: 0x41, count: 214)).version, 11)
    }

    func testDataBeyondVersion40IsATypedError() {
        XCTAssertThrowsError(try QRCode(bytes: Array(repeating: 0, count: 2332))) {
            XCTAssertEqual($0 as? QRCode.EncodingError, .dataTooLong(bytes: 2332, capacity: 2331))
        }
    }

    func testReedSolomonMatchesTheStandardsWorkedExample() {
        // ISO/IEC 18004 Annex I: "01234567" in version 1-M; its 16 data code words and 10 error-correction words.
        let data: [UInt8] = [0x10, 0x20, 0x0C, 0x56, 0x61, 0x80, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        let ecc = ReedSolomon.remainder(data, divisor: ReedSolomon.generator(degree: 10))
        XCTAssertEqual(ecc, [0xA5, 0x24, 0xD4, 0xC1, 0xED, 0x36, 0xC7, 0x87, 0x2C, 0x55])
    }

    func testAlignmentPatternPositionsMatchAnnexE() {
        XCTAssertEqual(QRCode.alignmentPositions(version: 1), [])
        XCTAssertEqual(QRCode.alignmentPositions(version: 2), [6, 18])
        XCTAssertEqual(QRCode.alignmentPositions(version: 7), [6, 22, 38])
        XCTAssertEqual(QRCode.alignmentPositions(version: 32), [6, 34, 60, 86, 112, 138])
        XCTAssertEqual(QRCode.alignmentPositions(version: 40), [6, 30, 58, 86, 114, 142, 170])
    }

    func testCRC32MatchesTheStandardCheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
    }

    func testThePNGHasTheSignatureAndChunksInOrder() throws {
        let png = try PNGImage.encode(try QRCode(bytes: Array("hello".utf8)), moduleSize: 2)
        XCTAssertEqual(Array(png.prefix(8)), PNGImage.signature)
        XCTAssertEqual(String(decoding: png[12..<16], as: UTF8.self), "IHDR")
        XCTAssertEqual(String(decoding: png.suffix(8).prefix(4), as: UTF8.self), "IEND")
        let side = (21 + 8) * 2
        XCTAssertEqual(Array(png[16..<24]), [0, 0, 0, UInt8(side), 0, 0, 0, UInt8(side)])
    }

    // MARK: Decoded by zbarimg

    /// Skips the test where zbarimg is missing. Called first, outside any assertion: an XCTSkip thrown inside an
    /// XCTAssert's expression is recorded as a failure, not a skip.
    private func requireZbar() throws {
        if case .skipped(let why) = try ExternalTool.require("zbarimg", probe: QRCodeReader.probe) { throw XCTSkip(why) }
    }

    private func decodeWithZbar(_ png: [UInt8]) throws -> String { try QRCodeReader.read(png: png) }

    /// zbarimg looks for every kind of barcode unless told otherwise, and in this code (a demo sign-up link the
    /// browser test once got) it also finds an Interleaved 2 of 5 barcode, "105993", in the modules and prints it
    /// right after the QR payload. The reader asks for QR codes only, as a phone's QR scanner does.
    func testZbarReadsOnlyTheQRCodeNotALinearBarcodeItSeesInTheModules() throws {
        try requireZbar()
        let link =
            "https://127.0.0.1:43897/open?dispatchTokenResponse=eyJubWFfZGF0YSI6eyJyZWRlZW1fdXJsIjoiaHR0cHM6Ly8xMjcuMC4wLjE6NDM4OTcvbmV2aXNmaWRvL3Rva2VuL3JlZGVlbS9yZWdpc3RyYXRpb24iLCJ0b2tlbiI6IjQtdmo4WmVhcF83aUVDcjVmaU1SWFlNb1M5aE9ENm9NZmR0T1I4THdIb2MifSwibm1hX2RhdGFfY29udGVudF90eXBlIjoiYXBwbGljYXRpb24vanNvbiIsIm5tYV9kYXRhX3ZlcnNpb24iOiIxIn0"
        XCTAssertEqual(try decodeWithZbar(try PNGImage.encode(try QRCode(bytes: Array(link.utf8)))), link)
    }

    func testZbarDecodesAShortPayload() throws {
        try requireZbar()
        XCTAssertEqual(try decodeWithZbar(try PNGImage.encode(try QRCode(bytes: Array("mauth".utf8)))), "mauth")
    }

    func testZbarDecodesTheOutOfBandPayloadOfARegistration() throws {
        try requireZbar()
        let payload =
            #"{"nma_data":{"token":"8a4ba0b2-33ea-4e1f-a6e8-0c8e7f0b3d1a","redeem_url":"https://fido.example.com/nevisfido/token/redeem/registration"},"nma_data_content_type":"application/json","nma_data_version":"1"}"#
        let code = try QRCode(bytes: Array(payload.utf8))
        XCTAssertEqual(try decodeWithZbar(try PNGImage.encode(code)), payload)
    }

    func testZbarDecodesEveryVersionFrom1To27() throws {
        try requireZbar()
        // A payload at each version's byte capacity, so every table row and version block up to 27 is exercised.
        for version in 1...27 {
            let capacity = QRCode.byteCapacity(version: version, level: .medium)
            let payload = String((0..<capacity).map { i in Character(UnicodeScalar(UInt8(0x21 + (i * 7 + version) % 90))) })
            let code = try QRCode(bytes: Array(payload.utf8))
            XCTAssertEqual(code.version, version)
            XCTAssertEqual(try decodeWithZbar(try PNGImage.encode(code, moduleSize: 3)), payload, "version \(version)")
        }
    }

    func testZbarDecodesALongLinkPayloadAtEveryLevel() throws {
        try requireZbar()
        let link = "https://app.example.com/oob?dispatchTokenResponse=" + String(repeating: "eyJubWFfZGF0YSI6", count: 40)
        for level in QRCode.ErrorCorrection.allCases {
            let code = try QRCode(bytes: Array(link.utf8), errorCorrection: level)
            XCTAssertEqual(try decodeWithZbar(try PNGImage.encode(code, moduleSize: 3)), link, "\(level)")
        }
    }
}
