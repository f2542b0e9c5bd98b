/// Text that came from a request (a header, a claim, a username), made safe to write into a decision, a log line, a
/// database row or a terminal.
///
/// Why: a log line or an audit row is read by people and by tools that split on newlines, `key=value` pairs and
/// quotes, and a terminal obeys escape sequences. A caller who can put a newline into a value forges whole lines; an
/// ANSI escape rewrites what an operator sees; a bidirectional override makes `alice` read as someone else. So every
/// scalar that is not plain printable text is written as a visible escape, `\u{1B}`, and the text says where the
/// caller's value begins and ends.
public enum UntrustedText {
    /// The longest value ``quoted(_:limit:)`` keeps by default, in characters.
    public static let defaultLimit = 64

    /// `value` in double quotes: `"` and `\` escaped with a backslash, every unsafe scalar (``isUnsafe(_:)``) as
    /// `\u{XXXX}`, and cut after `limit` characters, with the number of characters left out: `"abc"…(+12)`.
    public static func quoted(_ value: some StringProtocol, limit: Int = defaultLimit) -> String {
        var result = "\""
        var kept = 0
        var omitted = 0
        for character in value {
            guard kept < limit else {
                omitted += 1
                continue
            }
            kept += 1
            for scalar in character.unicodeScalars {
                if scalar == "\"" || scalar == "\\" { result.append("\\") }
                appendEscaped(scalar, to: &result)
            }
        }
        result.append("\"")
        if omitted > 0 { result.append("…(+\(omitted))") }
        return result
    }

    /// `text` with every unsafe scalar written as `\u{XXXX}` and nothing else changed; `text` itself, without a copy,
    /// when it has none. For the fields of a line or a row that the server composes but that may carry a caller's
    /// text (a detail, a username), so no sink depends on every writer having quoted.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars { appendEscaped(scalar, to: &result) }
        return result
    }

    /// `text` escaped as ``escaped(_:)`` and cut after `limit` characters (`…(+N)` saying how many were left out).
    public static func escaped(_ text: String, limit: Int) -> String {
        guard text.count > limit else { return escaped(text) }
        return escaped(String(text.prefix(limit))) + "…(+\(text.count - limit))"
    }

    /// Whether `scalar` must not reach a line or a terminal as it is: the C0 controls (newline and tab included),
    /// DEL and the C1 controls (ESC and CSI start terminal sequences), the bidirectional formatting characters
    /// (Unicode's "Trojan Source" set: LRM, RLM, ALM, LRE…RLO, LRI…PDI), the line and paragraph separators, the byte
    /// order mark, and the non-characters (U+FDD0…U+FDEF and every U+xFFFE, U+xFFFF).
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        switch value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        case 0x2028, 0x2029, 0xFEFF: return true
        case 0xFDD0...0xFDEF: return true
        default: return value & 0xFFFE == 0xFFFE
        }
    }

    private static func appendEscaped(_ scalar: Unicode.Scalar, to result: inout String) {
        guard isUnsafe(scalar) else {
            result.unicodeScalars.append(scalar)
            return
        }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        result.append("\\u{" + String(repeating: "0", count: max(0, 2 - hex.count)) + hex + "}")
    }
}
