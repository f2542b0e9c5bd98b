/// Any JSON value: JWT claims whose names come from configuration, and the extensions a WebAuthn options request
/// may carry, which the server echoes without knowing them all.
public enum JSONValue: Codable, Sendable, Equatable {
    case string(String), number(Double), bool(Bool), array([JSONValue]), object([String: JSONValue]), null

    /// Read by the kind of the value the input holds, never by trial: through ``WireJSONDecoder`` (every server
    /// path that reads a caller's JSON) each value is built straight from the parsed index, so a body of 32,000 empty
    /// objects costs one pass, not four failed decodes per value. Another decoder is asked for a keyed or unkeyed
    /// container only after its single value proved to be no scalar, which costs one refused decode per container.
    public init(from decoder: any Decoder) throws {
        if let wire = decoder as? WireDecoderImpl {
            self = try wire.document.value(at: wire.index)
            return
        }
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let v = try? c.decode(Bool.self) {
            self = .bool(v)
        } else if let v = try? c.decode(Double.self) {
            self = .number(v)
        } else if let v = try? c.decode(String.self) {
            self = .string(v)
        } else if let v = try? c.decode([JSONValue].self) {
            self = .array(v)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let v): try c.encode(v)
        case .number(let v): try c.encode(v)
        case .bool(let v): try c.encode(v)
        case .array(let v): try c.encode(v)
        case .object(let v): try c.encode(v)
        case .null: try c.encodeNil()
        }
    }

    public var string: String? {
        if case .string(let v) = self { return v }
        return nil
    }
    public var number: Double? {
        if case .number(let v) = self { return v }
        return nil
    }
    /// A string, or the strings of an array (how `aud` and `scp` may be written).
    public var strings: [String]? {
        switch self {
        case .string(let v): return [v]
        case .array(let values):
            let strings = values.compactMap(\.string)
            return strings.count == values.count ? strings : nil
        default: return nil
        }
    }
}
