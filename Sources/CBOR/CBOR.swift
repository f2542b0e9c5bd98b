/// One CBOR data item (RFC 8949), as WebAuthn and CTAP2 use them: attestation objects, COSE keys, extensions.
///
/// Integers keep their major type: `unsigned(n)` is n, `negative(n)` is −1 − n, so every value of both major types
/// (−2⁶⁴ … 2⁶⁴ − 1) is represented exactly. Half-, single- and double-precision floats are all `float`.
public indirect enum CBOR: Sendable, Hashable {
    case unsigned(UInt64)
    /// The integer −1 − n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map(CBORMap)
    case tagged(UInt64, CBOR)
    /// A simple value other than `false`, `true`, `null` and `undefined` (0…19 and 32…255).
    case simple(UInt8)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    /// An integer as a CBOR integer of the right major type.
    public static func int(_ value: Int64) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The value of an integer that fits in `Int64`; nil for anything else.
    public var int: Int64? {
        switch self {
        case .unsigned(let n): return n <= UInt64(Int64.max) ? Int64(n) : nil
        case .negative(let n): return n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: return nil
        }
    }

    public var bytes: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }
    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }
    public var array: [CBOR]? {
        if case .array(let value) = self { return value }
        return nil
    }
    public var map: CBORMap? {
        if case .map(let value) = self { return value }
        return nil
    }
}

/// A CBOR map: its entries in the order they were encoded (or given). Keys are unique in every map the decoder
/// returns; ``CBOREncoder`` writes the entries in canonical order whatever order they are in here.
public struct CBORMap: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var key: CBOR
        public var value: CBOR
        public init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    public var entries: [Entry]

    public init(_ entries: [Entry] = []) { self.entries = entries }

    /// The value under `key`, nil when the map has no such key.
    public subscript(key: CBOR) -> CBOR? { entries.first { $0.key == key }?.value }
    /// The value under the integer key `key` (COSE keys, CTAP2 maps).
    public subscript(int key: Int64) -> CBOR? { self[.int(key)] }
    /// The value under the text key `key` (attestation objects and statements).
    public subscript(text key: String) -> CBOR? { self[.text(key)] }

    /// The keys, in order.
    public var keys: [CBOR] { entries.map(\.key) }
}
