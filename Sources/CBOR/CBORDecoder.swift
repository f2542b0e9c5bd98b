/// Why the decoder refused its input, and where.
public struct CBORError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .truncated`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case truncated
            case trailingBytes
            case indefiniteLength
            case unexpectedBreak
            case reservedAdditionalInformation(UInt8)
            case invalidSimpleValue(UInt8)
            case invalidUTF8
            case tooDeep(limit: Int)
            case tooLarge(limit: Int)
            case duplicateMapKey
            case notShortest
            case mapKeysOutOfOrder
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`tooDeep(limit: 16)`), for logs and tests.
        public var description: String { "\(kind)" }

        /// The input ends inside an item.
        public static let truncated = Self(.truncated)

        /// Bytes follow the one item the input must hold.
        public static let trailingBytes = Self(.trailingBytes)

        /// An indefinite-length string, array or map (CTAP2 and WebAuthn use definite lengths only).
        public static let indefiniteLength = Self(.indefiniteLength)

        /// A "break" (0xff) outside an indefinite-length item.
        public static let unexpectedBreak = Self(.unexpectedBreak)

        /// Additional information 28, 29 or 30 (reserved), or 31 on an integer or a tag.
        public static func reservedAdditionalInformation(_ value: UInt8) -> Self { Self(.reservedAdditionalInformation(value)) }

        /// A simple value below 32 written in two bytes (not well-formed in RFC 8949).
        public static func invalidSimpleValue(_ value: UInt8) -> Self { Self(.invalidSimpleValue(value)) }

        /// A text string that is not UTF-8.
        public static let invalidUTF8 = Self(.invalidUTF8)

        /// Nesting deeper than the decoder's ``CBORDecoder/maximumDepth``.
        public static func tooDeep(limit: Int) -> Self { Self(.tooDeep(limit: limit)) }

        /// An input longer than the decoder's ``CBORDecoder/maximumBytes``.
        public static func tooLarge(limit: Int) -> Self { Self(.tooLarge(limit: limit)) }

        /// A map with the same key twice.
        public static let duplicateMapKey = Self(.duplicateMapKey)

        /// Canonical rules: an integer, length or tag not in its shortest form, or a float that a narrower float
        /// represents exactly.
        public static let notShortest = Self(.notShortest)

        /// Canonical rules: map keys not in CTAP2 canonical order (shorter encoding first, then bytewise).
        public static let mapKeysOutOfOrder = Self(.mapKeysOutOfOrder)
    }

    public var reason: Reason
    /// The offset of the item's first byte in the input (the input's length for `truncated` at its end).
    public var offset: Int

    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String {
        let what: String
        switch reason.kind {
        case .truncated: what = "the input ends inside an item"
        case .trailingBytes: what = "bytes follow the item"
        case .indefiniteLength: what = "an indefinite length (only definite lengths are allowed)"
        case .unexpectedBreak: what = "a break outside an indefinite-length item"
        case .reservedAdditionalInformation(let value): what = "reserved additional information \(value)"
        case .invalidSimpleValue(let value): what = "simple value \(value) in two bytes"
        case .invalidUTF8: what = "a text string that is not UTF-8"
        case .tooDeep(let limit): what = "nesting deeper than \(limit)"
        case .tooLarge(let limit): what = "an input longer than \(limit) bytes"
        case .duplicateMapKey: what = "a map key repeated"
        case .notShortest: what = "a value not in its shortest encoding"
        case .mapKeysOutOfOrder: what = "map keys out of canonical order"
        }
        return "CBOR: \(what) at byte \(offset)"
    }
}

/// Decodes CBOR with definite lengths only, within a depth and a size limit. Every malformed input is a
/// ``CBORError``; no input traps, and no declared length makes it allocate more than the input's size.
///
/// Two rule sets:
/// - ``Rules/canonical``: CTAP2's canonical form (CTAP 2.1 §8 "Message Encoding"): integers, lengths and tags in
///   their shortest form, map keys in length-first bytewise order, and, beyond CTAP2, floats in the shortest width
///   that holds their value (RFC 8949 §4.2.1, NaN as 0xf97e00). What it accepts, ``CBOREncoder`` writes back byte for
///   byte.
/// - ``Rules/wellFormed``: any well-formed definite-length encoding, for what authenticators and browsers send in an
///   attestation object, which WebAuthn does not require to be canonical.
///
/// Both refuse a map with the same key twice: two readers could otherwise see two different values.
public struct CBORDecoder: Sendable {
    public enum Rules: Sendable { case canonical, wellFormed }

    public var rules: Rules
    /// Arrays, maps and tags nest at most this deep (the top item is depth 1).
    public var maximumDepth: Int
    /// The longest input accepted.
    public var maximumBytes: Int

    public init(rules: Rules = .canonical, maximumDepth: Int = 16, maximumBytes: Int = 262_144) {
        self.rules = rules
        self.maximumDepth = maximumDepth
        self.maximumBytes = maximumBytes
    }

    /// The one item `bytes` holds; trailing bytes are an error.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBOR {
        let (value, end) = try decodePrefix(bytes[...])
        guard end == bytes.endIndex else { throw CBORError(.trailingBytes, at: end) }
        return value
    }

    /// The first item of `bytes` and the index just after it (WebAuthn's attested credential data is a COSE key
    /// followed by more bytes). Offsets in errors are indices of `bytes`.
    public func decodePrefix(_ bytes: ArraySlice<UInt8>) throws(CBORError) -> (value: CBOR, end: Int) {
        guard bytes.count <= maximumBytes else { throw CBORError(.tooLarge(limit: maximumBytes), at: bytes.startIndex) }
        var reader = Reader(bytes: bytes, position: bytes.startIndex, rules: rules, maximumDepth: maximumDepth)
        let value = try reader.item(depth: 1)
        return (value, reader.position)
    }
}

private struct Reader {
    let bytes: ArraySlice<UInt8>
    var position: Int
    let rules: CBORDecoder.Rules
    let maximumDepth: Int

    var remaining: Int { bytes.endIndex - position }

    mutating func byte() throws(CBORError) -> UInt8 {
        guard position < bytes.endIndex else { throw CBORError(.truncated, at: bytes.endIndex) }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func take(_ count: Int) throws(CBORError) -> ArraySlice<UInt8> {
        guard count <= remaining else { throw CBORError(.truncated, at: bytes.endIndex) }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    mutating func bigEndian(_ count: Int) throws(CBORError) -> UInt64 {
        var value: UInt64 = 0
        for byte in try take(count) { value = value << 8 | UInt64(byte) }
        return value
    }

    /// The argument of an item whose additional information is `info` (not a float), shortest-checked under the
    /// canonical rules.
    mutating func argument(_ info: UInt8, major: UInt8, start: Int) throws(CBORError) -> UInt64 {
        let value: UInt64
        let smallest: UInt64
        switch info {
        case 0..<24: return UInt64(info)
        case 24:
            value = try bigEndian(1)
            smallest = 24
        case 25:
            value = try bigEndian(2)
            smallest = 0x100
        case 26:
            value = try bigEndian(4)
            smallest = 0x1_0000
        case 27:
            value = try bigEndian(8)
            smallest = 0x1_0000_0000
        case 31 where (2...5).contains(major): throw CBORError(.indefiniteLength, at: start)
        default: throw CBORError(.reservedAdditionalInformation(info), at: start)
        }
        if rules == .canonical, value < smallest { throw CBORError(.notShortest, at: start) }
        return value
    }

    /// A declared count or length as an `Int`, refused as truncated when the input cannot hold that many bytes
    /// (`each` bytes at least per element), before anything is allocated for it.
    func count(_ value: UInt64, each: Int) throws(CBORError) -> Int {
        guard value <= UInt64(remaining / each) else { throw CBORError(.truncated, at: bytes.endIndex) }
        return Int(value)
    }

    mutating func item(depth: Int) throws(CBORError) -> CBOR {
        let start = position
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1f
        switch major {
        case 0: return .unsigned(try argument(info, major: major, start: start))
        case 1: return .negative(try argument(info, major: major, start: start))
        case 2:
            let length = try count(try argument(info, major: major, start: start), each: 1)
            return .bytes(Array(try take(length)))
        case 3:
            let length = try count(try argument(info, major: major, start: start), each: 1)
            let bytes = try take(length)
            guard Self.isUTF8(bytes) else { throw CBORError(.invalidUTF8, at: start) }
            return .text(String(decoding: bytes, as: UTF8.self))
        case 4:
            let length = try count(try argument(info, major: major, start: start), each: 1)
            guard depth < maximumDepth || length == 0 else { throw CBORError(.tooDeep(limit: maximumDepth), at: start) }
            var items: [CBOR] = []
            items.reserveCapacity(length)
            for _ in 0..<length { items.append(try item(depth: depth + 1)) }
            return .array(items)
        case 5:
            let length = try count(try argument(info, major: major, start: start), each: 2)
            guard depth < maximumDepth || length == 0 else { throw CBORError(.tooDeep(limit: maximumDepth), at: start) }
            var entries: [CBORMap.Entry] = []
            entries.reserveCapacity(length)
            // Two keys are the same key when their canonical encodings are: 1 written in one byte or in two, every NaN.
            var seen = Set<[UInt8]>()
            var previousKey: ArraySlice<UInt8>?
            for _ in 0..<length {
                let keyStart = position
                let key = try item(depth: depth + 1)
                let encodedKey = bytes[keyStart..<position]
                if rules == .canonical, let previousKey {
                    // Length first, then bytewise.
                    if encodedKey.elementsEqual(previousKey) { throw CBORError(.duplicateMapKey, at: keyStart) }
                    if encodedKey.count < previousKey.count
                        || (encodedKey.count == previousKey.count && encodedKey.lexicographicallyPrecedes(previousKey))
                    {
                        throw CBORError(.mapKeysOutOfOrder, at: keyStart)
                    }
                }
                guard seen.insert(rules == .canonical ? Array(encodedKey) : CBOREncoder.encode(key)).inserted else {
                    throw CBORError(.duplicateMapKey, at: keyStart)
                }
                previousKey = encodedKey
                entries.append(CBORMap.Entry(key, try item(depth: depth + 1)))
            }
            return .map(CBORMap(entries))
        case 6:
            let tag = try argument(info, major: major, start: start)
            guard depth < maximumDepth else { throw CBORError(.tooDeep(limit: maximumDepth), at: start) }
            return .tagged(tag, try item(depth: depth + 1))
        default:
            return try simpleOrFloat(info, start: start)
        }
    }

    /// Whether `bytes` are UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF). By hand:
    /// `String(validating:as:)` needs macOS 15 and iOS 18.
    static func isUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    mutating func simpleOrFloat(_ info: UInt8, start: Int) throws(CBORError) -> CBOR {
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(info)
        case 24:
            let value = try byte()
            guard value >= 32 else { throw CBORError(.invalidSimpleValue(value), at: start) }
            return .simple(value)
        case 25:
            let bits = UInt16(try bigEndian(2))
            let value = HalfFloat.double(bits)
            if rules == .canonical, value.isNaN, bits != 0x7e00 { throw CBORError(.notShortest, at: start) }
            return .float(value)
        case 26:
            let value = Double(Float(bitPattern: UInt32(try bigEndian(4))))
            if rules == .canonical, value.isNaN || HalfFloat.bits(exactly: value) != nil { throw CBORError(.notShortest, at: start) }
            return .float(value)
        case 27:
            let value = Double(bitPattern: try bigEndian(8))
            if rules == .canonical, value.isNaN || Float(exactly: value) != nil || value.isInfinite { throw CBORError(.notShortest, at: start) }
            return .float(value)
        case 31: throw CBORError(.unexpectedBreak, at: start)
        default: throw CBORError(.reservedAdditionalInformation(info), at: start)
        }
    }
}

/// IEEE 754 half precision, by hand: `Float16` is missing on macOS on Intel.
enum HalfFloat {
    static func double(_ bits: UInt16) -> Double {
        let sign: Double = bits & 0x8000 == 0 ? 1 : -1
        let exponent = Int(bits >> 10 & 0x1f)
        let fraction = Double(bits & 0x3ff)
        switch exponent {
        case 0: return sign * fraction * 0x1p-24
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1024 + fraction) * Double(sign: .plus, exponent: exponent - 25, significand: 1)
        }
    }

    /// The half-precision bits that hold `value` exactly (NaN as 0x7e00), nil when none do.
    static func bits(exactly value: Double) -> UInt16? {
        if value.isNaN { return 0x7e00 }
        let sign: UInt16 = value.sign == .minus ? 0x8000 : 0
        if value.isInfinite { return sign | 0x7c00 }
        if value == 0 { return sign }
        let magnitude = value.magnitude
        // Subnormal halves are multiples of 2⁻²⁴ below 2⁻¹⁴; normal ones have 11 significant bits, exponent −14…15.
        let candidate: UInt16
        if magnitude < 0x1p-14 {
            let scaled = magnitude * 0x1p24
            guard scaled == scaled.rounded(), scaled >= 1 else { return nil }
            candidate = UInt16(scaled)
        } else {
            guard magnitude < 65536 else { return nil }
            let exponent = Int(magnitude.exponent)  // −14…15
            let significand = magnitude * Double(sign: .plus, exponent: 10 - exponent, significand: 1)  // 1024…2047.x
            guard significand == significand.rounded() else { return nil }
            candidate = UInt16(exponent + 15) << 10 | (UInt16(significand) - 1024)
        }
        return double(candidate) == magnitude ? sign | candidate : nil
    }
}
