import Foundation

/// Little-endian, length-prefixed binary writer for the store format.
struct StoreByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func raw<C: Collection>(_ c: C) where C.Element == UInt8 { bytes.append(contentsOf: c) }
    /// 16-bit length prefix then the bytes.
    mutating func short<C: Collection>(_ c: C) where C.Element == UInt8 {
        u16(UInt16(c.count))
        raw(c)
    }
    /// 32-bit length prefix then the bytes.
    mutating func long<C: Collection>(_ c: C) where C.Element == UInt8 {
        u32(UInt32(c.count))
        raw(c)
    }
}

/// Total reader: every read either returns a value or throws `corrupted`, never traps.
struct StoreByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
        guard n >= 0, n <= remaining else { throw SecureStorageError.corrupted(reason: "truncated at offset \(offset)") }
        defer { offset += n }
        return bytes[offset..<(offset + n)]
    }
    mutating func u8() throws -> UInt8 { try take(1).first! }
    mutating func u16() throws -> UInt16 { try take(2).reversed().reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func u32() throws -> UInt32 { try take(4).reversed().reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func u64() throws -> UInt64 { try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) } }
    mutating func short() throws -> ArraySlice<UInt8> { try take(Int(u16())) }
    mutating func long() throws -> ArraySlice<UInt8> { try take(Int(u32())) }
}
