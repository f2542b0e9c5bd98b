import Foundation

/// Foundation's `JSONEncoder` as the wire JSON encoder (`WireJSONEncoder`) must match it byte for byte: sorted keys,
/// slashes unescaped, default strategies. The one definition the tests and the `wire-json` fuzz target compare
/// against.
public func foundationWireEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
}

/// Any JSON value, decoded by asking for each kind in turn, so that the wire JSON codec and Foundation's can be
/// compared on any input (`WireJSONTests` and the `wire-json` fuzz target).
public indirect enum JSONTree: Codable, Equatable, Sendable {
    case null, bool(Bool), int(Int), double(Double), string(String), array([JSONTree]), object([String: JSONTree])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONTree].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONTree].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Equal, except where Foundation decides whether a number with a fraction or an exponent is an Int through the
    /// Double nearest it, and the wire decoder by its decimal digits: Foundation takes `72352646508083.99686` as
    /// 72352646508084 and `-9922337203685477.5` as -9922337203685477 (the wire decoder: Doubles), and refuses as an Int
    /// `92233720368547758e2`, whose nearest Double is past Int.max (the wire decoder: the Int 9223372036854775800).
    /// Within one unit, another kind.
    public func matches(_ foundation: JSONTree) -> Bool {
        switch (self, foundation) {
        case (.double(let wire), .int(let foundationInt)): return abs(wire - Double(foundationInt)) <= max(1, wire.ulp)
        case (.int(let wireInt), .double(let number)): return abs(Double(wireInt) - number) <= max(1, number.ulp)
        case (.array(let a), .array(let b)): return a.count == b.count && zip(a, b).allSatisfy { $0.matches($1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && a.allSatisfy { key, value in b[key].map(value.matches) ?? false }
        default: return self == foundation
        }
    }
}
