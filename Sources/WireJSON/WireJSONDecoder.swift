import Foundation

/// Decodes `Decodable` values from JSON, about three times as fast as Foundation's `JSONDecoder`, and stricter.
///
/// The whole input is checked first (RFC 8259 grammar, UTF-8, escapes, nesting depth) and indexed; values are then
/// decoded from the index, reading member names and numbers in place. Its contract, for wire messages from anyone:
///
/// - strict JSON: no trailing commas (which `JSONDecoder` lets through), no comments, no NaN or Infinity, no leading
///   zeros; a leading UTF-8 byte order mark is skipped (as `JSONDecoder` does); other encodings are refused;
/// - **an object that names a member twice is refused**: two readers of one message must never see different values
///   (`JSONDecoder` keeps the first, other parsers the last);
/// - invalid UTF-8 and lone surrogate escapes are refused, nesting deeper than ``maximumDepth`` is refused;
/// - numbers: an integer type takes a number that is exactly an integer in its range (`1.0` and `1e2` included, as
///   `JSONDecoder`), computed in decimal; `JSONDecoder` also takes a number with a fraction when the Double nearest it
///   is whole (`-1e-400` as 0, `-9922337203685477.5` as -9922337203685477), this decoder refuses it; `Double` and
///   `Float` refuse a number too large for them or that rounds a non-zero value to zero (as `JSONDecoder`);
/// - default strategies of `JSONDecoder`: Date from seconds since 2001, Data from base64, URL from its string;
/// - unknown members are ignored; `null` or a missing member decodes as `nil` for an optional;
/// - `codingPath` is empty, and an error names only the member or element it is about (a value that fails as a
///   whole, such as an unknown raw value or `null` for an object, is named by the member that holds it).
public struct WireJSONDecoder: Sendable {
    public static let maximumDepth = 512

    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from bytes: some Sequence<UInt8>) throws -> T {
        let document = try JSONDocument(Array(bytes))
        return try document.decode(T.self, at: 0, key: nil)
    }

    public func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        try decode(type, from: text.utf8)
    }
}

// MARK: - the index

/// One value of the input. Containers are followed by their contents; `end` of a container is the index of the
/// node after its last descendant (so siblings are found without reading the contents).
struct JSONNode {
    enum Kind: UInt8 { case object, array, string, number, bool, null }
    var kind: Kind
    /// string: has escapes; number: has a fraction or an exponent; bool: its value.
    var flag: Bool
    /// string: first byte after the opening quote; number: its first byte.
    var start: Int
    /// string: the closing quote; number: one past its last byte; container: the node after its contents.
    var end: Int
    /// Members of an object, elements of an array.
    var count: Int

    /// The index of the node after this one (at `index`) and its contents: its next sibling.
    @inline(__always) func next(after index: Int) -> Int { kind == .object || kind == .array ? end : index + 1 }
}

/// A checked, indexed input.
final class JSONDocument {
    let bytes: [UInt8]
    let nodes: [JSONNode]

    init(_ bytes: [UInt8]) throws {
        self.bytes = bytes
        var parser = JSONParser(bytes: bytes)
        try parser.parseDocument()
        nodes = parser.nodes
    }

    @inline(__always) func after(_ index: Int) -> Int { nodes[index].next(after: index) }

    /// The value of member `name` of object `object`, if present.
    func member(_ name: String, of object: Int) -> Int? {
        var name = name
        return name.withUTF8 { wanted -> Int? in
            var index = object + 1
            for _ in 0..<nodes[object].count {
                let key = nodes[index]
                if key.flag {
                    if unescaped(key) == Array(wanted) { return index + 1 }
                } else if key.end - key.start == wanted.count,
                    bytes.withUnsafeBufferPointer({ all in
                        wanted.count == 0 || memcmp(all.baseAddress! + key.start, wanted.baseAddress!, wanted.count) == 0
                    })
                {
                    return index + 1
                }
                index = after(index + 1)
            }
            return nil
        }
    }

    /// The member names of object `object`, in order, with their value nodes.
    func members(of object: Int) -> [(name: String, value: Int)] {
        var result: [(name: String, value: Int)] = []
        result.reserveCapacity(nodes[object].count)
        var index = object + 1
        for _ in 0..<nodes[object].count {
            result.append((string(nodes[index]), index + 1))
            index = after(index + 1)
        }
        return result
    }

    func string(_ node: JSONNode) -> String {
        if node.flag { return String(decoding: unescaped(node), as: UTF8.self) }
        return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[node.start..<node.end]), as: UTF8.self) }
    }

    func unescaped(_ node: JSONNode) -> [UInt8] { Self.unescaped(bytes, node) }

    /// A string's bytes with its escapes resolved (the parser has checked every escape).
    static func unescaped(_ bytes: [UInt8], _ node: JSONNode) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(node.end - node.start)
        var index = node.start
        while index < node.end {
            // The run up to the next escape, copied at once.
            var runEnd = index
            while runEnd < node.end, bytes[runEnd] != UInt8(ascii: "\\") { runEnd += 1 }
            if runEnd > index { out.append(contentsOf: bytes[index..<runEnd]) }
            index = runEnd
            guard index < node.end else { break }
            let escape = bytes[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = UInt32(JSONParser.hex4(bytes, index)!)
                index += 4
                if scalar >= 0xD800, scalar < 0xDC00 {
                    let low = UInt32(JSONParser.hex4(bytes, index + 2)!)
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                UTF8.encode(Unicode.Scalar(scalar)!) { out.append($0) }
            default: out.append(escape)  // " \ /
            }
        }
        return out
    }

    // MARK: values

    func decode<T: Decodable>(_ type: T.Type, at index: Int, key: (any CodingKey)?) throws -> T {
        let node = nodes[index]
        if T.self == String.self { return unsafeBitCast(try decodeString(node, T.self, key), to: T.self) }
        if T.self == Int.self { return unsafeBitCast(try integer(node, Int.self, key), to: T.self) }
        if T.self == Bool.self { return unsafeBitCast(try bool(node, key), to: T.self) }
        if T.self == Int64.self { return unsafeBitCast(try integer(node, Int64.self, key), to: T.self) }
        if T.self == UInt8.self { return unsafeBitCast(try integer(node, UInt8.self, key), to: T.self) }
        if T.self == UInt16.self { return unsafeBitCast(try integer(node, UInt16.self, key), to: T.self) }
        if T.self == UInt32.self { return unsafeBitCast(try integer(node, UInt32.self, key), to: T.self) }
        if T.self == UInt64.self { return unsafeBitCast(try integer(node, UInt64.self, key), to: T.self) }
        if T.self == UInt.self { return unsafeBitCast(try integer(node, UInt.self, key), to: T.self) }
        if T.self == Int8.self { return unsafeBitCast(try integer(node, Int8.self, key), to: T.self) }
        if T.self == Int16.self { return unsafeBitCast(try integer(node, Int16.self, key), to: T.self) }
        if T.self == Int32.self { return unsafeBitCast(try integer(node, Int32.self, key), to: T.self) }
        if T.self == Double.self { return unsafeBitCast(try double(node, key), to: T.self) }
        if T.self == Float.self { return unsafeBitCast(try float(node, key), to: T.self) }
        if T.self == Data.self {
            guard let data = Data(base64Encoded: try decodeString(node, Data.self, key)) else {
                throw corrupted(key, "Encountered Data is not valid Base64.")
            }
            return unsafeBitCast(data, to: T.self)
        }
        if T.self == Date.self { return unsafeBitCast(Date(timeIntervalSinceReferenceDate: try double(node, key)), to: T.self) }
        if T.self == URL.self {
            guard let url = URL(string: try decodeString(node, URL.self, key)) else { throw corrupted(key, "Invalid URL string.") }
            return unsafeBitCast(url, to: T.self)
        }
        if T.self == Decimal.self {
            guard node.kind == .number, let decimal = Decimal(string: text(node), locale: Locale(identifier: "en_US_POSIX")) else {
                throw mismatch(Decimal.self, node, key)
            }
            return unsafeBitCast(decimal, to: T.self)
        }
        do {
            return try T(from: WireDecoderImpl(document: self, index: index))
        } catch let error as DecodingError {
            // A value that failed as a whole (null, not an object, an unknown raw value) is named by its member.
            throw Self.naming(error, key)
        }
    }

    /// The value at `index`, by the kind the parser recorded (``JSONValue``'s reading without trial). A number that
    /// does not fit a `Double` is refused, as decoding it as `Double` would be.
    func value(at index: Int) throws -> JSONValue {
        let node = nodes[index]
        switch node.kind {
        case .null: return .null
        case .bool: return .bool(node.flag)
        case .string: return .string(string(node))
        case .number: return .number(try double(node, nil))
        case .array:
            var values: [JSONValue] = []
            values.reserveCapacity(node.count)
            var child = index + 1
            for _ in 0..<node.count {
                values.append(try value(at: child))
                child = after(child)
            }
            return .array(values)
        case .object:
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(node.count)
            var child = index + 1
            for _ in 0..<node.count {
                members[string(nodes[child])] = try value(at: child + 1)
                child = after(child + 1)
            }
            return .object(members)
        }
    }

    /// `error`, with `key` as its path if it names no member of its own.
    static func naming(_ error: DecodingError, _ key: (any CodingKey)?) -> DecodingError {
        guard let key else { return error }
        switch error {
        case .valueNotFound(let type, let context) where context.codingPath.isEmpty:
            return .valueNotFound(
                type, .init(codingPath: [key], debugDescription: context.debugDescription, underlyingError: context.underlyingError))
        case .typeMismatch(let type, let context) where context.codingPath.isEmpty:
            return .typeMismatch(type, .init(codingPath: [key], debugDescription: context.debugDescription, underlyingError: context.underlyingError))
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return .dataCorrupted(.init(codingPath: [key], debugDescription: context.debugDescription, underlyingError: context.underlyingError))
        default:
            return error
        }
    }

    func decodeString<T>(_ node: JSONNode, _ type: T.Type, _ key: (any CodingKey)?) throws -> String {
        guard node.kind == .string else { throw mismatch(T.self, node, key) }
        return string(node)
    }

    func bool(_ node: JSONNode, _ key: (any CodingKey)?) throws -> Bool {
        guard node.kind == .bool else { throw mismatch(Bool.self, node, key) }
        return node.flag
    }

    func text(_ node: JSONNode) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[node.start..<node.end]), as: UTF8.self) }
    }

    func integer<I: FixedWidthInteger>(_ node: JSONNode, _ type: I.Type, _ key: (any CodingKey)?) throws -> I {
        guard node.kind == .number else { throw mismatch(I.self, node, key) }
        let fits = { self.corrupted(key, "Parsed JSON number <\(self.text(node))> does not fit in \(I.self).") }
        guard let value = exactInteger(node, I.self) else { throw fits() }
        return value
    }

    /// The number as an integer of type I, computed in decimal (never through a Double, which would round a large
    /// one): nil when it has a non-zero fraction or is out of I's range. `1.0`, `1e2` and `0.01e2` are integers.
    private func exactInteger<I: FixedWidthInteger>(_ node: JSONNode, _ type: I.Type) -> I? {
        var index = node.start
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard node.flag else {
            var value: I = 0
            while index < node.end {
                guard let next = Self.appending(bytes[index] &- UInt8(ascii: "0"), to: value, negative: negative) else { return nil }
                value = next
                index += 1
            }
            return value
        }
        // Significant digits (integer and fraction parts), then the power of ten they are scaled by.
        var digits: [UInt8] = []
        var fractionDigits = 0
        var inFraction = false
        while index < node.end, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            if bytes[index] == UInt8(ascii: ".") {
                inFraction = true
            } else {
                if !(digits.isEmpty && bytes[index] == UInt8(ascii: "0")) { digits.append(bytes[index] &- UInt8(ascii: "0")) }
                if inFraction { fractionDigits += 1 }
            }
            index += 1
        }
        var exponent = 0
        if index < node.end {
            index += 1
            let negativeExponent = bytes[index] == UInt8(ascii: "-")
            if bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            while index < node.end {
                exponent = min(exponent * 10 + Int(bytes[index] &- UInt8(ascii: "0")), 1_000_000)
                index += 1
            }
            if negativeExponent { exponent = -exponent }
        }
        guard !digits.isEmpty else { return 0 }
        var scale = exponent - fractionDigits
        while scale < 0 {
            guard digits.last == 0 else { return nil }
            digits.removeLast()
            scale += 1
        }
        guard digits.count + scale <= 40 else { return nil }  // more than 40 digits fits no integer type
        var value: I = 0
        for digit in digits + repeatElement(0, count: scale) {
            guard let next = Self.appending(digit, to: value, negative: negative) else { return nil }
            value = next
        }
        return value
    }

    /// value * 10 ± digit, or nil on overflow.
    @inline(__always) private static func appending<I: FixedWidthInteger>(_ digit: UInt8, to value: I, negative: Bool) -> I? {
        let (shifted, overflow1) = value.multipliedReportingOverflow(by: 10)
        let (next, overflow2) = negative ? shifted.subtractingReportingOverflow(I(digit)) : shifted.addingReportingOverflow(I(digit))
        return overflow1 || overflow2 ? nil : next
    }

    func double(_ node: JSONNode, _ key: (any CodingKey)?) throws -> Double {
        guard node.kind == .number else { throw mismatch(Double.self, node, key) }
        guard let value = Double(text(node)), value.isFinite, value != 0 || !hasNonZeroDigit(node) else {
            throw corrupted(key, "Parsed JSON number <\(text(node))> does not fit in Double.")
        }
        return value
    }

    func float(_ node: JSONNode, _ key: (any CodingKey)?) throws -> Float {
        guard node.kind == .number else { throw mismatch(Float.self, node, key) }
        guard let value = Float(text(node)), value.isFinite, value != 0 || !hasNonZeroDigit(node) else {
            throw corrupted(key, "Parsed JSON number <\(text(node))> does not fit in Float.")
        }
        return value
    }

    /// Whether a number's digits before its exponent are not all zero (a non-zero value that rounded to zero).
    private func hasNonZeroDigit(_ node: JSONNode) -> Bool {
        for index in node.start..<node.end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return false }
            if byte >= UInt8(ascii: "1"), byte <= UInt8(ascii: "9") { return true }
        }
        return false
    }

    // MARK: errors

    func mismatch<T>(_ type: T.Type, _ node: JSONNode, _ key: (any CodingKey)?) -> DecodingError {
        let path = key.map { [$0] } ?? []
        if node.kind == .null {
            return .valueNotFound(T.self, .init(codingPath: path, debugDescription: "Cannot get value of type \(T.self) -- found null value instead"))
        }
        return .typeMismatch(T.self, .init(codingPath: path, debugDescription: "Expected to decode \(T.self) but found \(node.kind) instead."))
    }

    func corrupted(_ key: (any CodingKey)?, _ description: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: key.map { [$0] } ?? [], debugDescription: description))
    }
}

// MARK: - the parser

struct JSONParser {
    let bytes: [UInt8]
    var position = 0
    var nodes: [JSONNode] = []

    init(bytes: [UInt8]) {
        self.bytes = bytes
        nodes.reserveCapacity(64)
    }

    mutating func parseDocument() throws {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { position = 3 }
        skipWhitespace()
        try parseValue(depth: 1)
        skipWhitespace()
        guard position == bytes.count else { throw failure("unexpected data after the JSON value") }
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws {
        guard position < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[position] {
        case UInt8(ascii: "{"): try parseObject(depth: depth)
        case UInt8(ascii: "["): try parseArray(depth: depth)
        case UInt8(ascii: "\""): try parseString()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try parseNumber()
        case UInt8(ascii: "t"): try parseLiteral("true", .bool, flag: true)
        case UInt8(ascii: "f"): try parseLiteral("false", .bool, flag: false)
        case UInt8(ascii: "n"): try parseLiteral("null", .null, flag: false)
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseLiteral(_ literal: StaticString, _ kind: JSONNode.Kind, flag: Bool) throws {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - position >= count,
            literal.withUTF8Buffer({ expected in (0..<count).allSatisfy { bytes[position + $0] == expected[$0] } })
        else {
            throw failure("invalid literal")
        }
        nodes.append(JSONNode(kind: kind, flag: flag, start: position, end: position + count, count: 0))
        position += count
    }

    private mutating func parseObject(depth: Int) throws {
        guard depth <= WireJSONDecoder.maximumDepth else { throw failure("nested deeper than \(WireJSONDecoder.maximumDepth)") }
        let index = nodes.count
        nodes.append(JSONNode(kind: .object, flag: false, start: position, end: 0, count: 0))
        position += 1
        skipWhitespace()
        var count = 0
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a member name") }
                try parseString()
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("expected ':'") }
                position += 1
                skipWhitespace()
                try parseValue(depth: depth + 1)
                count += 1
                skipWhitespace()
                guard position < bytes.count else { throw failure("unexpected end of input") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    skipWhitespace()
                    continue
                }
                guard bytes[position] == UInt8(ascii: "}") else { throw failure("expected ',' or '}'") }
                position += 1
                break
            }
        }
        nodes[index].count = count
        nodes[index].end = nodes.count
        try refuseRepeatedNames(object: index)
    }

    private mutating func parseArray(depth: Int) throws {
        guard depth <= WireJSONDecoder.maximumDepth else { throw failure("nested deeper than \(WireJSONDecoder.maximumDepth)") }
        let index = nodes.count
        nodes.append(JSONNode(kind: .array, flag: false, start: position, end: 0, count: 0))
        position += 1
        skipWhitespace()
        var count = 0
        if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
            position += 1
        } else {
            while true {
                try parseValue(depth: depth + 1)
                count += 1
                skipWhitespace()
                guard position < bytes.count else { throw failure("unexpected end of input") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    skipWhitespace()
                    continue
                }
                guard bytes[position] == UInt8(ascii: "]") else { throw failure("expected ',' or ']'") }
                position += 1
                break
            }
        }
        nodes[index].count = count
        nodes[index].end = nodes.count
    }

    /// Two members with one name are refused, names compared after their escapes are resolved.
    private func refuseRepeatedNames(object: Int) throws {
        let count = nodes[object].count
        guard count > 1 else { return }
        var names: [Int] = []
        names.reserveCapacity(count)
        var index = object + 1
        for _ in 0..<count {
            names.append(index)
            index = nodes[index + 1].next(after: index + 1)
        }
        if count <= 16 && !names.contains(where: { nodes[$0].flag }) {
            for a in 0..<count {
                let first = nodes[names[a]]
                for b in (a + 1)..<count {
                    let second = nodes[names[b]]
                    if first.end - first.start == second.end - second.start,
                        bytes[first.start..<first.end].elementsEqual(bytes[second.start..<second.end])
                    {
                        throw failure(
                            "an object names member \(String(decoding: bytes[first.start..<first.end], as: UTF8.self).debugDescription) twice")
                    }
                }
            }
            return
        }
        var seen = Set<[UInt8]>()
        for name in names {
            let resolved = JSONDocument.unescaped(bytes, nodes[name])
            guard seen.insert(resolved).inserted else {
                throw failure("an object names member \(String(decoding: resolved, as: UTF8.self).debugDescription) twice")
            }
        }
    }

    private mutating func parseString() throws {
        position += 1
        let start = position
        var escaped = false
        while true {
            guard position < bytes.count else { throw failure("unterminated string") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw failure("control character in a string") }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                try checkEscape()
            } else if byte >= 0x80 {
                try checkUTF8()
            } else {
                position += 1
            }
        }
        nodes.append(JSONNode(kind: .string, flag: escaped, start: start, end: position, count: 0))
        position += 1
    }

    private mutating func checkEscape() throws {
        guard position + 1 < bytes.count else { throw failure("unterminated string") }
        switch bytes[position + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            position += 2
        case UInt8(ascii: "u"):
            guard let unit = Self.hex4(bytes, position + 2) else { throw failure("invalid \\u escape") }
            position += 6
            if unit >= 0xDC00, unit < 0xE000 { throw failure("a lone low surrogate escape") }
            if unit >= 0xD800, unit < 0xDC00 {
                guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u"),
                    let low = Self.hex4(bytes, position + 2), low >= 0xDC00, low < 0xE000
                else {
                    throw failure("a lone high surrogate escape")
                }
                position += 6
            }
        default:
            throw failure("invalid escape")
        }
    }

    static func hex4(_ bytes: [UInt8], _ at: Int) -> UInt16? {
        guard at + 4 <= bytes.count else { return nil }
        var value: UInt16 = 0
        for index in at..<(at + 4) {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }

    /// One UTF-8 sequence of two to four bytes (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
    private mutating func checkUTF8() throws {
        let lead = bytes[position]
        let length: Int
        let secondRange: ClosedRange<UInt8>
        switch lead {
        case 0xC2...0xDF:
            length = 2
            secondRange = 0x80...0xBF
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF:
            length = 3
            secondRange = 0x80...0xBF
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3:
            length = 4
            secondRange = 0x80...0xBF
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: throw failure("invalid UTF-8")
        }
        guard position + length <= bytes.count, secondRange.contains(bytes[position + 1]) else { throw failure("invalid UTF-8") }
        for index in (position + 2)..<(position + length) where bytes[index] & 0xC0 != 0x80 {
            throw failure("invalid UTF-8")
        }
        position += length
    }

    private mutating func parseNumber() throws {
        let start = position
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, isDigit(bytes[position]) else { throw failure("invalid number") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        var fractional = false
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            fractional = true
            position += 1
            guard position < bytes.count, isDigit(bytes[position]) else { throw failure("invalid number") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            fractional = true
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard position < bytes.count, isDigit(bytes[position]) else { throw failure("invalid number") }
            while position < bytes.count, isDigit(bytes[position]) { position += 1 }
        }
        if position < bytes.count, isDigit(bytes[position]) { throw failure("invalid number (a leading zero)") }
        // A number no Double can hold (1e309) is refused wherever it stands, in a member nobody reads too, as
        // Foundation's parsers refuse it: a message one reader accepts and another refuses would be read differently
        // by a client and a relying party. Only an exponent or more than 308 digits can reach that far.
        if (fractional && bytes[start..<position].contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }))
            || position - start > 308
        {
            guard let value = Double(String(decoding: bytes[start..<position], as: UTF8.self)), value.isFinite else {
                position = start
                throw failure("a number beyond the range of a Double")
            }
        }
        nodes.append(JSONNode(kind: .number, flag: fractional, start: start, end: position, count: 0))
    }

    @inline(__always) private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private func failure(_ reason: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "The given data was not valid JSON: \(reason) at byte \(position)."))
    }
}

// MARK: - the Decoder

/// The `Decoder` one value is given.
struct WireDecoderImpl: Decoder {
    let document: JSONDocument
    let index: Int
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let node = document.nodes[index]
        guard node.kind == .object else { throw document.mismatch([String: Any].self, node, nil) }
        return KeyedDecodingContainer(WireKeyedDecoder<Key>(document: document, object: index))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let node = document.nodes[index]
        guard node.kind == .array else { throw document.mismatch([Any].self, node, nil) }
        return WireUnkeyedDecoder(document: document, array: index)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { WireSingleValueDecoder(document: document, index: index) }
}

struct WireKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let document: JSONDocument
    let object: Int
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] { document.members(of: object).compactMap { Key(stringValue: $0.name) } }

    func contains(_ key: Key) -> Bool { document.member(key.stringValue, of: object) != nil }

    private func value(_ key: Key) throws -> Int {
        guard let index = document.member(key.stringValue, of: object) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: [key], debugDescription: "No value associated with key \(key.stringValue.debugDescription)."))
        }
        return index
    }

    func decodeNil(forKey key: Key) throws -> Bool { document.nodes[try value(key)].kind == .null }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try document.decodeString(document.nodes[try value(key)], String.self, key)
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try document.integer(document.nodes[try value(key)], Int.self, key) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try document.bool(document.nodes[try value(key)], key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try document.decode(T.self, at: try value(key), key: key) }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let index = document.member(key.stringValue, of: object), document.nodes[index].kind != .null else { return nil }
        return try document.decodeString(document.nodes[index], String.self, key)
    }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let index = document.member(key.stringValue, of: object), document.nodes[index].kind != .null else { return nil }
        return try document.decode(T.self, at: index, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try WireDecoderImpl(document: document, index: try value(key)).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try WireDecoderImpl(document: document, index: try value(key)).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder { try superDecoder(forKey: Key(stringValue: "super")!) }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        // As JSONDecoder: a missing member decodes as null.
        guard let index = document.member(key.stringValue, of: object) else { return WireDecoderImpl(document: Self.null, index: 0) }
        return WireDecoderImpl(document: document, index: index)
    }

    private static var null: JSONDocument { try! JSONDocument(Array("null".utf8)) }
}

struct WireUnkeyedDecoder: UnkeyedDecodingContainer {
    let document: JSONDocument
    let count: Int?
    private(set) var currentIndex = 0
    /// The node of the next element.
    private var cursor: Int
    var codingPath: [any CodingKey] { [] }
    var isAtEnd: Bool { currentIndex >= count! }

    init(document: JSONDocument, array: Int) {
        self.document = document
        count = document.nodes[array].count
        cursor = array + 1
    }

    private struct Position: CodingKey {
        var intValue: Int?
        var stringValue: String { "Index \(intValue!)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    /// The next element's node, the cursor moved past it.
    private mutating func next<T>(_ type: T.Type) throws -> Int {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(T.self, .init(codingPath: [Position(currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        let index = cursor
        cursor = document.after(cursor)
        currentIndex += 1
        return index
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any?.self, .init(codingPath: [Position(currentIndex)], debugDescription: "Unkeyed container is at end."))
        }
        if document.nodes[cursor].kind == .null {
            _ = try next(Any?.self)
            return true
        }
        return false
    }

    mutating func decode(_ type: String.Type) throws -> String {
        let position = Position(currentIndex)
        return try document.decodeString(document.nodes[try next(String.self)], String.self, position)
    }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let position = Position(currentIndex)
        return try document.decode(T.self, at: try next(T.self), key: position)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try WireDecoderImpl(document: document, index: try next([String: Any].self)).container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try WireDecoderImpl(document: document, index: try next([Any].self)).unkeyedContainer()
    }
    mutating func superDecoder() throws -> any Decoder { WireDecoderImpl(document: document, index: try next(Any.self)) }
}

struct WireSingleValueDecoder: SingleValueDecodingContainer {
    let document: JSONDocument
    let index: Int
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { document.nodes[index].kind == .null }
    func decode(_ type: String.Type) throws -> String { try document.decodeString(document.nodes[index], String.self, nil) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try document.decode(T.self, at: index, key: nil) }
}
