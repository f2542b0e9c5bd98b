import Foundation

/// base64url (RFC 4648 §5) as UAF uses it: encoded without `=` padding; decoding tolerates padding
/// (uaf-spec §1, "All binary values in JSON are base64url"). Table-driven over bytes: it sits on the
/// verification hot path, where Foundation's string-based base64 cost more than the TLV parsing.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    public static func encode<D: DataProtocol>(_ data: D) -> String {
        let bytes = Array(data)
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
            out.append(alphabet[Int(v & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)])
            out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url; returns nil for any character outside the alphabet (including the standard `+`/`/`),
    /// padding anywhere but at the end, or an impossible length.
    public static func decode(_ string: String) -> Data? {
        decodeBytes(string).map { Data($0) }
    }

    /// Decodes base64url to bytes (see ``decode(_:)``).
    public static func decodeBytes(_ string: String) -> [UInt8]? {
        var input = Array(string.utf8)
        var padding = 0
        while input.last == UInt8(ascii: "=") && padding < 2 {
            input.removeLast()
            padding += 1
        }
        guard input.count % 4 != 1, padding == 0 || (input.count + padding) % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = reverse[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (canonical encoding).
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
