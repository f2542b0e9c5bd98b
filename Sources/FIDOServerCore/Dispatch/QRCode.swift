/// A QR code symbol (ISO/IEC 18004:2015), encoded in byte mode at a chosen error-correction level, in the
/// smallest version (1–40) that holds the data. The png-qr-code dispatchers draw it with ``PNGImage``.
///
/// The facts it rests on (the code-word and block tables, the BCH codes of the format and version information,
/// the alignment-pattern positions, the eight masks and the four penalty rules) are the standard's; tests decode
/// what it draws with an independent decoder (zbarimg).
public struct QRCode: Sendable {
    public enum ErrorCorrection: Int, Sendable, CaseIterable {
        // Declared from weakest to strongest; the raw value indexes the tables below.
        case low = 0, medium, quartile, high

        /// The two format bits of the level (ISO/IEC 18004 Table 12: L=01, M=00, Q=11, H=10).
        var formatBits: Int { [1, 0, 3, 2][rawValue] }
    }

    public enum EncodingError: Error, Equatable, Sendable, CustomStringConvertible {
        /// More bytes than version 40 holds at the level.
        case dataTooLong(bytes: Int, capacity: Int)
        public var description: String {
            switch self {
            case .dataTooLong(let bytes, let capacity):
                return "\(bytes) bytes do not fit in a QR code (at most \(capacity) at this error-correction level)"
            }
        }
    }

    public let version: Int
    public let errorCorrection: ErrorCorrection
    public let mask: Int
    /// Modules per side: 17 + 4 × version.
    public let size: Int
    /// Row-major, `true` is dark.
    private let modules: [Bool]

    public func isDark(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// Encodes `data` in byte mode, in the smallest version that holds it at `errorCorrection` (M by default:
    /// about 15 % of the symbol may be damaged).
    public init(bytes data: [UInt8], errorCorrection: ErrorCorrection = .medium) throws(EncodingError) {
        guard let version = (1...40).first(where: { QRCode.fits(data.count, version: $0, level: errorCorrection) }) else {
            throw .dataTooLong(bytes: data.count, capacity: QRCode.byteCapacity(version: 40, level: errorCorrection))
        }
        let codewords = QRCode.addErrorCorrection(
            QRCode.dataCodewords(data, version: version, level: errorCorrection),
            version: version, level: errorCorrection)
        var best: (matrix: Matrix, mask: Int, penalty: Int)?
        for mask in 0..<8 {
            var matrix = Matrix(version: version)
            matrix.place(codewords)
            matrix.applyMask(mask)
            matrix.drawFormatBits(level: errorCorrection, mask: mask)
            let penalty = matrix.penalty()
            if best == nil || penalty < best!.penalty { best = (matrix, mask, penalty) }
        }
        self.version = version
        self.errorCorrection = errorCorrection
        self.mask = best!.mask
        self.size = best!.matrix.size
        self.modules = best!.matrix.dark
    }

    // MARK: Capacity

    /// Byte-mode data that fits: 4 mode bits, the character count (8 bits up to version 9, 16 above), 8 bits a byte.
    static func fits(_ count: Int, version: Int, level: ErrorCorrection) -> Bool {
        count <= byteCapacity(version: version, level: level)
    }

    static func byteCapacity(version: Int, level: ErrorCorrection) -> Int {
        let countBits = version <= 9 ? 8 : 16
        let bits = dataCodewordCount(version: version, level: level) * 8 - 4 - countBits
        return min(bits / 8, (1 << countBits) - 1)
    }

    /// Modules left for data and error correction once the function patterns are drawn (ISO/IEC 18004 Table 1).
    static func rawDataModules(version v: Int) -> Int {
        var result = (16 * v + 128) * v + 64  // all modules minus finders, separators, timing and format areas
        if v >= 2 {
            let alignments = v / 7 + 2
            result -= (25 * alignments - 10) * alignments - 55  // alignment patterns, less their overlap with timing
            if v >= 7 { result -= 36 }  // two version-information blocks of 18 modules
        }
        return result
    }

    static func dataCodewordCount(version: Int, level: ErrorCorrection) -> Int {
        rawDataModules(version: version) / 8
            - eccCodewordsPerBlock[level.rawValue][version] * errorCorrectionBlocks[level.rawValue][version]
    }

    // MARK: Code words

    /// Mode indicator 0100 (byte), character count, the bytes, a terminator of up to four zero bits, zero bits to
    /// the byte boundary, then the pad bytes 0xEC and 0x11 alternately.
    static func dataCodewords(_ data: [UInt8], version: Int, level: ErrorCorrection) -> [UInt8] {
        var bits = BitBuffer()
        bits.append(0b0100, count: 4)
        bits.append(data.count, count: version <= 9 ? 8 : 16)
        for byte in data { bits.append(Int(byte), count: 8) }
        let capacity = dataCodewordCount(version: version, level: level) * 8
        bits.append(0, count: min(4, capacity - bits.count))
        bits.append(0, count: (8 - bits.count % 8) % 8)
        var bytes = bits.bytes
        var pad: UInt8 = 0xEC
        while bytes.count < capacity / 8 {
            bytes.append(pad)
            pad ^= 0xEC ^ 0x11
        }
        return bytes
    }

    /// Splits the data into the version's blocks, appends each block's Reed–Solomon code words, and interleaves:
    /// the data code words column by column across blocks, then the error-correction code words likewise.
    static func addErrorCorrection(_ data: [UInt8], version: Int, level: ErrorCorrection) -> [UInt8] {
        let blockCount = errorCorrectionBlocks[level.rawValue][version]
        let eccLength = eccCodewordsPerBlock[level.rawValue][version]
        let total = rawDataModules(version: version) / 8
        let shortBlocks = blockCount - total % blockCount
        let shortBlockLength = total / blockCount  // data + ecc of a short block; long blocks have one more data word
        let divisor = ReedSolomon.generator(degree: eccLength)
        var dataBlocks: [[UInt8]] = []
        var eccBlocks: [[UInt8]] = []
        var offset = 0
        for index in 0..<blockCount {
            let length = shortBlockLength - eccLength + (index < shortBlocks ? 0 : 1)
            let block = Array(data[offset..<offset + length])
            offset += length
            dataBlocks.append(block)
            eccBlocks.append(ReedSolomon.remainder(block, divisor: divisor))
        }
        var result: [UInt8] = []
        result.reserveCapacity(total)
        for column in 0...(shortBlockLength - eccLength) {
            for block in dataBlocks where column < block.count { result.append(block[column]) }
        }
        for column in 0..<eccLength {
            for block in eccBlocks { result.append(block[column]) }
        }
        return result
    }

    // MARK: Tables (ISO/IEC 18004 Table 9), indexed [level][version]; index 0 is unused

    static let eccCodewordsPerBlock: [[Int]] = [
        [
            0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30,
        ],
        [
            0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
            28, 28, 28, 28, 28, 28,
        ],
        [
            0, 13, 22, 18, 26, 18, 24, 18, 22, 20, 24, 28, 26, 24, 20, 30, 24, 28, 28, 26, 30, 28, 30, 30, 30, 30, 28, 30, 30, 30, 30, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30,
        ],
        [
            0, 17, 28, 22, 16, 22, 28, 26, 26, 24, 28, 24, 28, 22, 24, 24, 30, 28, 28, 26, 28, 30, 24, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30,
            30, 30, 30, 30, 30, 30,
        ],
    ]

    static let errorCorrectionBlocks: [[Int]] = [
        [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
        [
            0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43,
            45, 47, 49,
        ],
        [
            0, 1, 1, 2, 2, 4, 4, 6, 6, 8, 8, 8, 10, 12, 16, 12, 17, 16, 18, 21, 20, 23, 23, 25, 27, 29, 34, 34, 35, 38, 40, 43, 45, 48, 51, 53, 56,
            59, 62, 65, 68,
        ],
        [
            0, 1, 1, 2, 4, 4, 4, 5, 6, 8, 8, 11, 11, 16, 16, 18, 16, 19, 21, 25, 25, 25, 34, 30, 32, 35, 37, 40, 42, 45, 48, 51, 54, 57, 60, 63, 66,
            70, 74, 77, 81,
        ],
    ]
}

// MARK: - The module matrix

extension QRCode {
    package struct Matrix {
        let version: Int
        let size: Int
        var dark: [Bool]
        /// Modules of the finder, separator, timing, alignment, format and version patterns: data never goes there
        /// and masks never touch them.
        var reserved: [Bool]

        init(version: Int) {
            self.version = version
            size = 17 + 4 * version
            dark = Array(repeating: false, count: size * size)
            reserved = Array(repeating: false, count: size * size)
            drawFunctionPatterns()
        }

        mutating func set(_ x: Int, _ y: Int, _ isDark: Bool) {
            dark[y * size + x] = isDark
            reserved[y * size + x] = true
        }

        subscript(x: Int, y: Int) -> Bool { dark[y * size + x] }

        mutating func drawFunctionPatterns() {
            for i in 0..<size {  // timing patterns: row 6 and column 6 alternate, dark on even indices
                set(6, i, i % 2 == 0)
                set(i, 6, i % 2 == 0)
            }
            drawFinder(centerX: 3, centerY: 3)
            drawFinder(centerX: size - 4, centerY: 3)
            drawFinder(centerX: 3, centerY: size - 4)
            let positions = QRCode.alignmentPositions(version: version)
            for (i, cx) in positions.enumerated() {
                for (j, cy) in positions.enumerated() {
                    let last = positions.count - 1
                    // The three corners that a finder pattern already occupies.
                    if (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0) { continue }
                    for dy in -2...2 {
                        for dx in -2...2 { set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1) }
                    }
                }
            }
            drawFormatBits(level: .medium, mask: 0)  // reserves the areas; the real bits are drawn after masking
            drawVersionBits()
        }

        /// A 7×7 finder with its one-module light separator (clipped at the symbol's edge).
        mutating func drawFinder(centerX: Int, centerY: Int) {
            for dy in -4...4 {
                for dx in -4...4 {
                    let x = centerX + dx
                    let y = centerY + dy
                    guard (0..<size).contains(x), (0..<size).contains(y) else { continue }
                    let distance = max(abs(dx), abs(dy))
                    set(x, y, distance != 2 && distance != 4)
                }
            }
        }

        /// The 15 format bits: level and mask, a BCH(15,5) code (generator x¹⁰+x⁸+x⁵+x⁴+x²+x+1 = 0x537), XORed with
        /// 0x5412 so that no format is all light; drawn twice, around the top-left finder and split across the others.
        mutating func drawFormatBits(level: ErrorCorrection, mask: Int) {
            let data = level.formatBits << 3 | mask
            var remainder = data
            for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
            let bits = (data << 10 | remainder) ^ 0x5412
            func bit(_ i: Int) -> Bool { (bits >> i) & 1 != 0 }
            for i in 0...5 { set(8, i, bit(i)) }
            set(8, 7, bit(6))
            set(8, 8, bit(7))
            set(7, 8, bit(8))
            for i in 9..<15 { set(14 - i, 8, bit(i)) }
            for i in 0..<8 { set(size - 1 - i, 8, bit(i)) }
            for i in 8..<15 { set(8, size - 15 + i, bit(i)) }
            set(8, size - 8, true)  // the dark module
        }

        /// From version 7: 6 version bits and a BCH(18,6) code (generator 0x1F25), in two 6×3 blocks.
        mutating func drawVersionBits() {
            guard version >= 7 else { return }
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for i in 0..<18 {
                let isDark = (bits >> i) & 1 != 0
                let a = size - 11 + i % 3
                let b = i / 3
                set(a, b, isDark)
                set(b, a, isDark)
            }
        }

        /// Places the code words in the two-module-wide columns, right to left, alternately upwards and downwards,
        /// skipping the vertical timing column; leftover remainder bits stay light.
        mutating func place(_ codewords: [UInt8]) {
            var bitIndex = 0
            let totalBits = codewords.count * 8
            var right = size - 1
            while right >= 1 {
                if right == 6 { right = 5 }
                let upwards = ((right + 1) & 2) == 0
                for step in 0..<size {
                    let y = upwards ? size - 1 - step : step
                    for x in [right, right - 1] where !reserved[y * size + x] && bitIndex < totalBits {
                        dark[y * size + x] = (codewords[bitIndex >> 3] >> (7 - UInt8(bitIndex & 7))) & 1 != 0
                        bitIndex += 1
                    }
                }
                right -= 2
            }
        }

        /// XORs the data modules with mask pattern `mask` (ISO/IEC 18004 Table 10; x is the column, y the row).
        mutating func applyMask(_ mask: Int) {
            for y in 0..<size {
                for x in 0..<size where !reserved[y * size + x] {
                    let invert: Bool
                    switch mask {
                    case 0: invert = (x + y) % 2 == 0
                    case 1: invert = y % 2 == 0
                    case 2: invert = x % 3 == 0
                    case 3: invert = (x + y) % 3 == 0
                    case 4: invert = (x / 3 + y / 2) % 2 == 0
                    case 5: invert = (x * y) % 2 + (x * y) % 3 == 0
                    case 6: invert = ((x * y) % 2 + (x * y) % 3) % 2 == 0
                    default: invert = ((x + y) % 2 + (x * y) % 3) % 2 == 0
                    }
                    if invert { dark[y * size + x].toggle() }
                }
            }
        }

        /// The four penalty rules of ISO/IEC 18004 §7.8.3; the mask with the lowest total is used.
        func penalty() -> Int {
            var total = 0
            // N1 (3 + run − 5 for runs of five or more) and N3 (40 per finder-like 1:1:3:1:1 with four light modules
            // on one side), along rows and columns.
            for horizontal in [true, false] {
                for line in 0..<size {
                    let cells = (0..<size).map { horizontal ? self[$0, line] : self[line, $0] }
                    var run = 1
                    for i in 1...size {
                        if i < size && cells[i] == cells[i - 1] {
                            run += 1
                            continue
                        }
                        if run >= 5 { total += 3 + run - 5 }
                        run = 1
                    }
                    if size >= 11 {
                        for start in 0...(size - 11) {
                            let window = Array(cells[start..<start + 11])
                            if window == QRCode.finderLikeBefore || window == QRCode.finderLikeAfter { total += 40 }
                        }
                    }
                }
            }
            // N2: 3 per 2×2 block of one colour.
            for y in 0..<(size - 1) {
                for x in 0..<(size - 1) {
                    let c = self[x, y]
                    if c == self[x + 1, y] && c == self[x, y + 1] && c == self[x + 1, y + 1] { total += 3 }
                }
            }
            // N4: 10 per full 5 % that the dark proportion deviates from 50 %.
            let darkCount = dark.reduce(0) { $0 + ($1 ? 1 : 0) }
            let deviation = abs(darkCount * 20 - size * size * 10)  // = |dark% − 50| × size² / 5
            total += 10 * (deviation / (size * size))
            return total
        }
    }

    static let finderLikeBefore: [Bool] = [true, false, true, true, true, false, true, false, false, false, false]
    static let finderLikeAfter: [Bool] = [false, false, false, false, true, false, true, true, true, false, true]

    /// Centres of the alignment patterns along each axis (ISO/IEC 18004 Annex E): 6, then evenly spaced (an even
    /// step) ending at size − 7.
    static func alignmentPositions(version: Int) -> [Int] {
        guard version >= 2 else { return [] }
        let count = version / 7 + 2
        let size = 17 + 4 * version
        let step = version == 32 ? 26 : (version * 4 + count * 2 + 1) / (count * 2 - 2) * 2
        var positions = [6]
        for index in 0..<(count - 1) { positions.insert(size - 7 - index * step, at: 1) }
        return positions
    }
}

// MARK: - Bits and Reed–Solomon over GF(2⁸)

struct BitBuffer {
    private(set) var count = 0
    private(set) var bytes: [UInt8] = []

    /// Appends the low `count` bits of `value`, most significant first.
    mutating func append(_ value: Int, count bitCount: Int) {
        for i in stride(from: bitCount - 1, through: 0, by: -1) {
            if count % 8 == 0 { bytes.append(0) }
            if (value >> i) & 1 != 0 { bytes[count / 8] |= 0x80 >> UInt8(count % 8) }
            count += 1
        }
    }
}

enum ReedSolomon {
    /// Multiplication in GF(2⁸) modulo the QR polynomial x⁸+x⁴+x³+x²+1 (0x11D).
    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        var result = 0
        for i in stride(from: 7, through: 0, by: -1) {
            result = (result << 1) ^ ((result >> 7) * 0x11D)
            if (b >> UInt8(i)) & 1 != 0 { result ^= Int(a) }
        }
        return UInt8(result & 0xFF)
    }

    /// The generator polynomial ∏(x − αⁱ), i = 0 … degree − 1, as its coefficients after the leading 1.
    static func generator(degree: Int) -> [UInt8] {
        var coefficients = [UInt8](repeating: 0, count: degree)
        coefficients[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                coefficients[j] = multiply(coefficients[j], root)
                if j + 1 < degree { coefficients[j] ^= coefficients[j + 1] }
            }
            root = multiply(root, 0x02)
        }
        return coefficients
    }

    /// The remainder of data(x) · x^degree divided by the generator: the block's error-correction code words.
    static func remainder(_ data: [UInt8], divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for i in 0..<result.count { result[i] ^= multiply(divisor[i], factor) }
        }
        return result
    }
}
