import XCTest

@testable import Primitives

final class SecureRandomTests: XCTestCase {
    func testEveryLengthIsFilledExactly() {
        for count in [0, 1, 7, 8, 9, 16, 31, 32, 33, 255, 256, 257, 1000] {
            XCTAssertEqual(SecureRandom.bytes(count).count, count)
        }
    }

    func testTwoDrawsDiffer() {
        XCTAssertNotEqual(SecureRandom.bytes(32), SecureRandom.bytes(32))
    }

    func testEveryByteValueAndEveryPositionIsUsed() {
        // 64 KiB of output, drawn 9 bytes at a time: each of the 256 values appears (expected 256 times each), and no
        // position within a draw is stuck at zero.
        var counts = [Int](repeating: 0, count: 256)
        var nonZeroAt = [Bool](repeating: false, count: 9)
        for _ in 0..<(65_536 / 9) {
            for (position, byte) in SecureRandom.bytes(9).enumerated() {
                counts[Int(byte)] += 1
                if byte != 0 { nonZeroAt[position] = true }
            }
        }
        XCTAssertEqual(counts.filter { $0 == 0 }.count, 0)
        XCTAssertLessThan(counts.max()!, 512, "no value is grossly over-represented")
        XCTAssertEqual(nonZeroAt, [Bool](repeating: true, count: 9))
    }

    func testADrawLongerThanOneSystemCallIsRandomThroughout() {
        // 600 bytes take three getentropy calls (256 bytes each at most): no stretch after a call boundary may be
        // left unfilled.
        let draw = SecureRandom.bytes(600)
        for start in stride(from: 0, to: 600, by: 50) {
            XCTAssertNotEqual(Array(draw[start..<start + 50]), [UInt8](repeating: 0, count: 50), "bytes \(start)..<\(start + 50)")
        }
    }

    func testTheFallbackDrawFillsEveryPosition() {
        // The path taken where getentropy is missing: 9-byte draws, so every offset within its 8-byte words is seen.
        var nonZeroAt = [Bool](repeating: false, count: 9)
        var buffer = [UInt8](repeating: 0, count: 9)
        for _ in 0..<200 {
            buffer.withUnsafeMutableBytes { SecureRandom.fillFromGenerator($0) }
            for (position, byte) in buffer.enumerated() where byte != 0 { nonZeroAt[position] = true }
        }
        XCTAssertEqual(nonZeroAt, [Bool](repeating: true, count: 9))
    }
}
