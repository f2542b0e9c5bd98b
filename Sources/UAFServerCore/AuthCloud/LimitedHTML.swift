import Foundation
import Primitives

/// The limited HTML an Auth Cloud approval `message` may use (server-api §B.10: "unsupported tags or attributes
/// give a 400"), bare or in the documented wrapper `<html>…</html>` around the whole message, once.
/// Our contract: the tags `b strong i em u br p ul ol li`, without attributes, properly nested
/// (`br` stands alone, as `<br>` or `<br/>`); `&` only as an entity (`&amp; &lt; &gt; &quot; &apos; &#39; &nbsp;`
/// or a numeric one); no comments, no other markup; no control character but the line feed, no bidirectional
/// formatting character, line separator, byte order mark or non-character (`UntrustedText.isUnsafe(_:)`), neither
/// written nor referenced (`&#0;`, `&#x202E;`, a surrogate or a number past U+10FFFF). The message is what the
/// device shows and the user confirms, so everything outside this subset is refused rather than cleaned: a
/// silently changed text would be signed as something the relying party did not send.
enum LimitedHTML {
    static let allowedTags: Set<String> = ["b", "strong", "i", "em", "u", "br", "p", "ul", "ol", "li"]
    static let namedEntities: Set<String> = ["amp", "lt", "gt", "quot", "apos", "nbsp"]

    package enum Refusal: Error, Equatable, CustomStringConvertible {
        case empty
        case tooLong(limit: Int)
        case controlCharacter
        case unsupportedTag(String)
        case attributesNotAllowed(String)
        case unbalanced(String)
        case malformedMarkup
        case malformedEntity
        case misplacedWrapper

        var description: String {
            switch self {
            case .empty: return "message is empty"
            case .tooLong(let limit): return "message is longer than \(limit) characters"
            case .controlCharacter: return "message contains a control, bidirectional formatting or non-character, written or referenced"
            case .unsupportedTag(let tag): return "the tag <\(tag)> is not supported"
            case .attributesNotAllowed(let tag): return "attributes are not allowed (on <\(tag)>)"
            case .unbalanced(let tag): return "the tag <\(tag)> is not closed or not opened"
            case .malformedMarkup: return "a '<' that does not start a supported tag"
            case .malformedEntity: return "a '&' that does not start a supported entity"
            case .misplacedWrapper: return "<html> may only wrap the whole message, once: <html>…</html>"
            }
        }
    }

    /// Checks `message`; `limit` is in characters (the UAF transaction text limit, since the message is confirmed
    /// as the transaction).
    static func validate(_ message: String, limit: Int) throws(Refusal) {
        guard !message.isEmpty else { throw .empty }
        guard message.count <= limit else { throw .tooLong(limit: limit) }
        // A bidirectional override would make the device show the words in another order than they are signed in.
        guard !message.unicodeScalars.contains(where: { $0 != "\n" && UntrustedText.isUnsafe($0) }) else {
            throw .controlCharacter
        }
        // The documented form `<html>…</html>` (server-api §B.10): the wrapper around the whole message, once, is
        // what the Nevis apps look for to render the subset; anywhere else it is refused like any misplaced tag.
        // The limit counts the wrapper too: the whole message is the transaction text the device shows and signs.
        let wrapped = message.count >= 13 && message.prefix(6).lowercased() == "<html>" && message.suffix(7).lowercased() == "</html>"
        let body = wrapped ? message.dropFirst(6).dropLast(7) : message[...]
        guard !body.isEmpty else { throw .empty }
        let scalars = Array(body.unicodeScalars)
        var open: [String] = []
        var index = 0
        while index < scalars.count {
            switch scalars[index] {
            case "<":
                guard let end = scalars[index...].firstIndex(of: ">") else { throw .malformedMarkup }
                var inside = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                index = end + 1
                let closing = inside.hasPrefix("/")
                if closing { inside.removeFirst() }
                let selfClosing = !closing && inside.hasSuffix("/")
                if selfClosing { inside.removeLast() }
                let parts = inside.split(separator: " ", omittingEmptySubsequences: true)
                guard let first = parts.first, first.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw .malformedMarkup }
                let name = first.lowercased()
                guard allowedTags.contains(name) || name == "html" else { throw .unsupportedTag(name) }
                guard parts.count == 1, !inside.contains("=") else { throw .attributesNotAllowed(name) }
                guard name != "html" else { throw .misplacedWrapper }
                if name == "br" {
                    guard !closing else { throw .unbalanced(name) }
                    continue
                }
                guard !selfClosing else { throw .unbalanced(name) }
                if closing {
                    guard open.last == name else { throw .unbalanced(name) }
                    open.removeLast()
                } else {
                    open.append(name)
                }
            case ">":
                throw .malformedMarkup
            case "&":
                guard let end = scalars[index...].prefix(12).firstIndex(of: ";") else { throw .malformedEntity }
                let entity = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                guard Self.isEntity(entity) else { throw .malformedEntity }
                if let referenced = Self.referencedScalar(entity) {
                    guard let scalar = Unicode.Scalar(referenced), scalar == "\n" || !UntrustedText.isUnsafe(scalar) else { throw .controlCharacter }
                }
                index = end + 1
            default:
                index += 1
            }
        }
        if let unclosed = open.last { throw .unbalanced(unclosed) }
    }

    /// The code point a numeric reference names (`#65`, `#x41`), nil for a named entity.
    private static func referencedScalar(_ name: String) -> UInt32? {
        guard name.hasPrefix("#") else { return nil }
        let digits = name.dropFirst()
        if digits.hasPrefix("x") || digits.hasPrefix("X") { return UInt32(digits.dropFirst(), radix: 16) ?? UInt32.max }
        return UInt32(digits) ?? UInt32.max
    }

    private static func isEntity(_ name: String) -> Bool {
        if namedEntities.contains(name) { return true }
        guard name.hasPrefix("#") else { return false }
        let digits = name.dropFirst()
        if digits.hasPrefix("x") || digits.hasPrefix("X") {
            let hex = digits.dropFirst()
            return (1...6).contains(hex.count) && hex.allSatisfy(\.isHexDigit)
        }
        return (1...7).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
