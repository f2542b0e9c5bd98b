import CompressNIO
import Foundation
import NIOCore

/// A minimal PNG writer (ISO/IEC 15948, RFC 2083) for black-and-white images: 1-bit greyscale, no interlacing,
/// filter type 0 on every row, the image data zlib-compressed by compress-nio (the system zlib).
public enum PNGImage {
    public static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The light border around a code, in modules (ISO/IEC 18004 asks for four).
    static let quietZone = 4

    /// The width and height in pixels of `code`'s image, quiet zone included.
    public static func side(of code: QRCode, moduleSize: Int) -> Int { (code.size + 2 * quietZone) * moduleSize }

    /// Draws `code` with `moduleSize` pixels per module and the four-module quiet zone the standard requires.
    public static func encode(_ code: QRCode, moduleSize: Int = 6) throws -> [UInt8] {
        let side = side(of: code, moduleSize: moduleSize)
        return try encode(width: side, height: side) { x, y in
            let mx = x / moduleSize - quietZone
            let my = y / moduleSize - quietZone
            guard (0..<code.size).contains(mx), (0..<code.size).contains(my) else { return false }
            return code.isDark(x: mx, y: my)
        }
    }

    /// Encodes a `width` × `height` image where `isDark(x, y)` tells each pixel's colour.
    public static func encode(width: Int, height: Int, isDark: (Int, Int) -> Bool) throws -> [UInt8] {
        let rowBytes = (width + 7) / 8
        var raw = ByteBuffer()
        raw.reserveCapacity((rowBytes + 1) * height)
        for y in 0..<height {
            raw.writeInteger(UInt8(0))  // filter type: none
            var byte: UInt8 = 0
            for x in 0..<width {
                // In 1-bit greyscale, 1 is white: light pixels set their bit.
                if !isDark(x, y) { byte |= 0x80 >> UInt8(x % 8) }
                if x % 8 == 7 || x == width - 1 {
                    raw.writeInteger(byte)
                    byte = 0
                }
            }
        }
        let compressed = try raw.compress(with: .zlib(configuration: .init(compressionLevel: 9)))

        var header: [UInt8] = []
        header += bigEndian32(UInt32(width)) + bigEndian32(UInt32(height))
        header += [1, 0, 0, 0, 0]  // bit depth 1, colour type 0 (greyscale), deflate, adaptive filtering, no interlace
        var png = signature
        png += chunk("IHDR", header)
        png += chunk("IDAT", Array(compressed.readableBytesView))
        png += chunk("IEND", [])
        return png
    }

    /// length ‖ type ‖ data ‖ CRC-32 of type and data.
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeAndData = Array(type.utf8) + data
        return bigEndian32(UInt32(data.count)) + typeAndData + bigEndian32(CRC32.checksum(typeAndData))
    }

    private static func bigEndian32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static let dataURIPrefix = "data:image/png;base64,"

    /// A `data:` URI of a PNG, the form the dispatchers' responses and web pages carry.
    public static func dataURI(_ png: [UInt8]) -> String {
        dataURIPrefix + Data(png).base64EncodedString()  // standard base64 with padding (RFC 2397)
    }

    /// The PNG bytes of a ``dataURI(_:)``, or nil for anything else.
    public static func bytes(fromDataURI uri: String) -> [UInt8]? {
        guard uri.hasPrefix(dataURIPrefix), let data = Data(base64Encoded: String(uri.dropFirst(dataURIPrefix.count))) else { return nil }
        return Array(data)
    }
}

/// CRC-32 (ISO 3309 / ITU-T V.42, reflected polynomial 0xEDB88320), as PNG chunks use.
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
