/// Writes CBOR in the form ``CBORDecoder/Rules/canonical`` accepts: CTAP2's canonical form (shortest integers,
/// lengths and tags, map keys sorted length-first then bytewise), with floats in the shortest width that holds
/// their value (NaN as 0xf97e00). Map entries are written in that order whatever order they are given in; keys
/// are not checked for repeats (a map with a repeated key is written as given, and no decoder here accepts it).
public enum CBOREncoder {
    public static func encode(_ value: CBOR) -> [UInt8] {
        var out: [UInt8] = []
        write(value, to: &out)
        return out
    }

    static func write(_ value: CBOR, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let n): head(0, n, &out)
        case .negative(let n): head(1, n, &out)
        case .bytes(let bytes):
            head(2, UInt64(bytes.count), &out)
            out += bytes
        case .text(let text):
            head(3, UInt64(text.utf8.count), &out)
            out += text.utf8
        case .array(let items):
            head(4, UInt64(items.count), &out)
            for item in items { write(item, to: &out) }
        case .map(let map):
            head(5, UInt64(map.entries.count), &out)
            let sorted = map.entries.map { (key: encode($0.key), value: $0.value) }.sorted { a, b in
                a.key.count != b.key.count ? a.key.count < b.key.count : a.key.lexicographicallyPrecedes(b.key)
            }
            for entry in sorted {
                out += entry.key
                write(entry.value, to: &out)
            }
        case .tagged(let tag, let item):
            head(6, tag, &out)
            write(item, to: &out)
        case .simple(let n): if n < 24 { out.append(0xe0 | n) } else { out += [0xf8, n] }
        case .bool(let flag): out.append(flag ? 0xf5 : 0xf4)
        case .null: out.append(0xf6)
        case .undefined: out.append(0xf7)
        case .float(let number):
            if let half = HalfFloat.bits(exactly: number) {
                out += [0xf9, UInt8(half >> 8), UInt8(half & 0xff)]
            } else if let single = Float(exactly: number) {
                out.append(0xfa)
                bigEndian(UInt64(single.bitPattern), 4, &out)
            } else {
                out.append(0xfb)
                bigEndian(number.bitPattern, 8, &out)
            }
        }
    }

    private static func head(_ major: UInt8, _ argument: UInt64, _ out: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xff:
            out.append(type | 24)
            bigEndian(argument, 1, &out)
        case 0x100...0xffff:
            out.append(type | 25)
            bigEndian(argument, 2, &out)
        case 0x1_0000...0xffff_ffff:
            out.append(type | 26)
            bigEndian(argument, 4, &out)
        default:
            out.append(type | 27)
            bigEndian(argument, 8, &out)
        }
    }

    private static func bigEndian(_ value: UInt64, _ count: Int, _ out: inout [UInt8]) {
        for shift in stride(from: (count - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}
