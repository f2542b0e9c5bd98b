/// A strict parser for the JSON of FinalChallengeParams, used on the verification hot path instead of
/// `JSONDecoder` (which cost more than the rest of the UAF checks together). It accepts exactly RFC 8259 JSON:
/// members in any order, any whitespace, every string escape including surrogate pairs, unknown members of any
/// type (skipped); it rejects duplicate known members, trailing content and any malformed input.
struct FinalChallengeParamsParser {
    private let bytes: [UInt8]
    private var i = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    static func parse(_ bytes: [UInt8]) -> FinalChallengeParams? {
        var parser = FinalChallengeParamsParser(bytes)
        return parser.parseParams()
    }

    private mutating func parseParams() -> FinalChallengeParams? {
        var appID: String?, challenge: String?, facetID: String?, binding: ChannelBinding?
        let ok = parseObject { parser, key in
            switch key {
            case "appID": guard appID == nil, let v = parser.parseString() else { return false }; appID = v
            case "challenge": guard challenge == nil, let v = parser.parseString() else { return false }; challenge = v
            case "facetID": guard facetID == nil, let v = parser.parseString() else { return false }; facetID = v
            case "channelBinding": guard binding == nil, let v = parser.parseChannelBinding() else { return false }; binding = v
            default: return parser.skipValue()
            }
            return true
        }
        skipWhitespace()
        guard ok, i == bytes.count, let appID, let challenge, let facetID, let binding else { return nil }
        return FinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID, channelBinding: binding)
    }

    private mutating func parseChannelBinding() -> ChannelBinding? {
        var binding = ChannelBinding()
        var seen = Set<String>()
        let ok = parseObject { parser, key in
            let known = ["serverEndPoint", "tlsServerCertificate", "tlsUnique", "cid_pubkey"]
            guard known.contains(key) else { return parser.skipValue() }
            guard seen.insert(key).inserted, let value = parser.parseString() else { return false }
            switch key {
            case "serverEndPoint": binding.serverEndPoint = value
            case "tlsServerCertificate": binding.tlsServerCertificate = value
            case "tlsUnique": binding.tlsUnique = value
            default: binding.cidPubkey = value
            }
            return true
        }
        return ok ? binding : nil
    }

    private mutating func skipWhitespace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
    }

    private mutating func expect(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard i < bytes.count, bytes[i] == byte else { return false }
        i += 1
        return true
    }

    /// Parses `{ "key": value, … }`, handing each key to `member`, which must consume the value.
    private mutating func parseObject(_ member: (inout FinalChallengeParamsParser, String) -> Bool) -> Bool {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 32, expect(UInt8(ascii: "{")) else { return false }
        if expect(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard let key = parseString(), expect(UInt8(ascii: ":")) else { return false }
            skipWhitespace()
            guard member(&self, key) else { return false }
            if expect(UInt8(ascii: ",")) { continue }
            return expect(UInt8(ascii: "}"))
        }
    }

    private mutating func parseString() -> String? {
        skipWhitespace()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        var out: [UInt8] = []
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            switch b {
            case UInt8(ascii: "\""):
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard i < bytes.count else { return nil }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = parseHex4() else { return nil }
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else { return nil }
                        i += 2
                        guard let low = parseHex4(), (0xDC00...0xDFFF).contains(low) else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        return nil
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default:
                    return nil
                }
            default:
                guard b >= 0x20 else { return nil }  // control characters must be escaped
                out.append(b)
            }
        }
        return nil
    }

    private mutating func parseHex4() -> UInt32? {
        guard i + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[i]
            i += 1
            let digit: UInt8
            switch b {
            case 0x30...0x39: digit = b - 0x30
            case 0x41...0x46: digit = b - 0x41 + 10
            case 0x61...0x66: digit = b - 0x61 + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Skips any JSON value (for unknown members).
    private mutating func skipValue() -> Bool {
        skipWhitespace()
        guard i < bytes.count else { return false }
        switch bytes[i] {
        case UInt8(ascii: "\""): return parseString() != nil
        case UInt8(ascii: "{"): return parseObject { parser, _ in parser.skipValue() }
        case UInt8(ascii: "["):
            depth += 1
            defer { depth -= 1 }
            guard depth <= 32 else { return false }
            i += 1
            if expect(UInt8(ascii: "]")) { return true }
            while true {
                guard skipValue() else { return false }
                if expect(UInt8(ascii: ",")) { continue }
                return expect(UInt8(ascii: "]"))
            }
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return skipNumber()
        }
    }

    private mutating func literal(_ word: String) -> Bool {
        let w = Array(word.utf8)
        guard i + w.count <= bytes.count, Array(bytes[i..<(i + w.count)]) == w else { return false }
        i += w.count
        return true
    }

    private mutating func skipNumber() -> Bool {
        let start = i
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits(_ p: inout FinalChallengeParamsParser) -> Int {
            let s = p.i
            while p.i < p.bytes.count, (0x30...0x39).contains(p.bytes[p.i]) { p.i += 1 }
            return p.i - s
        }
        guard i < bytes.count else { return false }
        if bytes[i] == 0x30 { i += 1 } else if digits(&self) == 0 { return false }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") { i += 1; guard digits(&self) > 0 else { return false } }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard digits(&self) > 0 else { return false }
        }
        // A number no Double can hold (1e309) is refused, as Foundation's JSON parsers refuse it: fcParams that one
        // JSON reader accepts and another refuses would be read differently by the client and by a relying party.
        guard i > start, let value = Double(String(decoding: bytes[start..<i], as: UTF8.self)), value.isFinite else { return false }
        return true
    }
}
