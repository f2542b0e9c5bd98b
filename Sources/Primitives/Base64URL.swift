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

    /// The base64url text of `data`, in one allocation (none for up to 15 characters): the bytes are read where they
    /// are when they are contiguous, and the text is written in place. Every login encodes a few of these (its
    /// challenge, ids, the token's parts); copying the input and building the text through an array cost two more.
    public static func encode<D: DataProtocol>(_ data: D) -> String {
        if let text = data.withContiguousStorageIfAvailable({ encode($0) }) { return text }
        return Array(data).withUnsafeBufferPointer { encode($0) }
    }

    /// Appends the base64url text of `data` to `out`.
    public static func append<D: DataProtocol>(_ data: D, to out: inout [UInt8]) {
        if data.withContiguousStorageIfAvailable({ append($0, to: &out) }) != nil { return }
        Array(data).withUnsafeBufferPointer { append($0, to: &out) }
    }

    /// How many characters the base64url text of `count` bytes has.
    public static func encodedCount(_ count: Int) -> Int { (count * 4 + 2) / 3 }

    private static func encode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: encodedCount(bytes.count)) { write(bytes, into: $0) }
    }

    private static func append(_ bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        let start = out.count
        let count = encodedCount(bytes.count)
        out.append(contentsOf: repeatElement(0, count: count))
        out.withUnsafeMutableBufferPointer { buffer in
            _ = write(bytes, into: UnsafeMutableBufferPointer(rebasing: buffer[start..<(start + count)]))
        }
    }

    /// Writes the text of `bytes` at the start of `out`, which has room for it, and returns its length.
    private static func write(_ bytes: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        alphabet.withUnsafeBufferPointer { alphabet in
            var i = 0
            var o = 0
            while i + 3 <= bytes.count {
                let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out[o] = alphabet[Int(v >> 18 & 63)]
                out[o + 1] = alphabet[Int(v >> 12 & 63)]
                out[o + 2] = alphabet[Int(v >> 6 & 63)]
                out[o + 3] = alphabet[Int(v & 63)]
                i += 3
                o += 4
            }
            let rest = bytes.count - i
            if rest > 0 {
                let v = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                out[o] = alphabet[Int(v >> 18 & 63)]
                out[o + 1] = alphabet[Int(v >> 12 & 63)]
                o += 2
                if rest == 2 {
                    out[o] = alphabet[Int(v >> 6 & 63)]
                    o += 1
                }
            }
            return o
        }
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
