import Primitives

/// The limited HTML a transaction text may use: the Auth Cloud approval `message` (server-api §B.10: "unsupported
/// tags or attributes give a 400"), bare or in the documented wrapper `<html>…</html>` around the whole message, once.
/// Our contract: the tags `b strong i em u br p ul ol li`, without attributes, properly nested
/// (`br` stands alone, as `<br>` or `<br/>`); `&` only as an entity (`&amp; &lt; &gt; &quot; &apos; &#39; &nbsp;`
/// or a numeric one); no comments, no other markup; no control character but the line feed, no bidirectional
/// formatting character, line separator, byte order mark or non-character (`UntrustedText.isUnsafe(_:)`), neither
/// written nor referenced (`&#0;`, `&#x202E;`, a surrogate or a number past U+10FFFF). The message is what the
/// device shows and the user confirms, so everything outside this subset is refused rather than cleaned: a
/// silently changed text would be signed as something the relying party did not send.
///
/// One home for both sides: the server validates a message with ``validate(_:limit:)``; a device shows a transaction
/// text with ``displayText(_:)``, which renders a text that follows these rules and shows any other text as it is.
public enum LimitedHTML {
    public static let allowedTags: Set<String> = ["b", "strong", "i", "em", "u", "br", "p", "ul", "ol", "li"]
    static let namedEntities: [String: Unicode.Scalar] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}"]

    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case empty
        case tooLong(limit: Int)
        case controlCharacter
        case unsupportedTag(String)
        case attributesNotAllowed(String)
        case unbalanced(String)
        case malformedMarkup
        case malformedEntity
        case misplacedWrapper

        public var description: String {
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

    /// What a message is made of, once its rules hold: text (entities decoded) and the subset's tags.
    public enum Token: Equatable, Sendable {
        case text(String)
        case open(String)
        case close(String)
        case lineBreak
    }

    /// Checks `message`; `limit` is in characters (the UAF transaction text limit, since the message is confirmed
    /// as the transaction).
    public static func validate(_ message: String, limit: Int) throws(Refusal) {
        _ = try tokens(message, limit: limit)
    }

    /// The text, tags and line breaks of `message`, in order, or the first rule it breaks.
    public static func tokens(_ message: String, limit: Int = Int.max) throws(Refusal) -> [Token] {
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
        var tokens: [Token] = []
        var text = String.UnicodeScalarView()
        func flush() {
            if !text.isEmpty {
                tokens.append(.text(String(text)))
                text = String.UnicodeScalarView()
            }
        }
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
                flush()
                if name == "br" {
                    guard !closing else { throw .unbalanced(name) }
                    tokens.append(.lineBreak)
                    continue
                }
                guard !selfClosing else { throw .unbalanced(name) }
                if closing {
                    guard open.last == name else { throw .unbalanced(name) }
                    open.removeLast()
                    tokens.append(.close(name))
                } else {
                    open.append(name)
                    tokens.append(.open(name))
                }
            case ">":
                throw .malformedMarkup
            case "&":
                guard let end = scalars[index...].prefix(12).firstIndex(of: ";") else { throw .malformedEntity }
                let entity = String(String.UnicodeScalarView(scalars[(index + 1)..<end]))
                guard let scalar = Self.entity(entity) else { throw .malformedEntity }
                guard scalar == "\n" || !UntrustedText.isUnsafe(scalar) else { throw .controlCharacter }
                text.append(scalar)
                index = end + 1
            default:
                text.append(scalars[index])
                index += 1
            }
        }
        if let unclosed = open.last { throw .unbalanced(unclosed) }
        flush()
        return tokens
    }

    /// What a device shows for a transaction text, as plain lines: a text that follows the rules above is rendered
    /// (`<br>` a line break, a paragraph its own block, a list item a line with `•` or its number, entities as their
    /// characters; emphasis has no plain form and shows as the words), any other text exactly as it is. The relying
    /// party's markup is never shown as tags, and text that merely looks like markup (`5 < 6`, `Tom & Jerry`) is not
    /// changed: it breaks the rules, so it is not markup.
    public static func displayText(_ text: String) -> String {
        guard let tokens = try? tokens(text) else { return text }
        var lines: [String] = [""]
        var lists: [(ordered: Bool, count: Int)] = []
        func newLine() { if !lines[lines.count - 1].isEmpty { lines.append("") } }
        func blankLine() {
            newLine()
            if lines.count > 1, !lines[lines.count - 2].isEmpty { lines.append("") }
        }
        for token in tokens {
            switch token {
            case .text(let words):
                for (offset, part) in words.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    if offset > 0 { lines.append("") }
                    lines[lines.count - 1] += part
                }
            case .lineBreak: lines.append("")
            case .open("p"), .close("p"): blankLine()
            case .open("ul"):
                newLine()
                lists.append((false, 0))
            case .open("ol"):
                newLine()
                lists.append((true, 0))
            case .close("ul"), .close("ol"):
                newLine()
                if !lists.isEmpty { lists.removeLast() }
            case .open("li"):
                newLine()
                let indent = String(repeating: "  ", count: max(0, lists.count - 1))
                if var list = lists.popLast() {
                    list.count += 1
                    lines[lines.count - 1] = indent + (list.ordered ? "\(list.count). " : "• ")
                    lists.append(list)
                } else {
                    lines[lines.count - 1] = "• "
                }
            case .close("li"): newLine()
            case .open, .close: break
            }
        }
        while lines.count > 1, lines.last?.isEmpty == true { lines.removeLast() }
        while lines.count > 1, lines.first?.isEmpty == true { lines.removeFirst() }
        return lines.joined(separator: "\n")
    }

    /// A transaction text as HTML for a page: a text that follows the rules above becomes the subset's own tags (no
    /// attribute can exist) around its text, every character escaped; any other text is escaped whole and shown as
    /// it is. Built from the tokens, never from the text, so nothing of the relying party's text reaches the page as
    /// markup except those tags.
    public static func htmlText(_ text: String) -> String {
        guard let tokens = try? tokens(text) else { return escapedHTML(text) }
        var html = ""
        for token in tokens {
            switch token {
            case .text(let words): html += escapedHTML(words).replacingOccurrences(of: "\n", with: "<br>")
            case .open(let tag): html += "<\(tag)>"
            case .close(let tag): html += "</\(tag)>"
            case .lineBreak: html += "<br>"
            }
        }
        return html
    }

    /// `text` with `& < > " '` as entities, safe inside an element or a quoted attribute.
    public static func escapedHTML(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    /// The character an entity names (`amp`, `#65`, `#x41`), nil when the name is not a supported entity.
    private static func entity(_ name: String) -> Unicode.Scalar? {
        if let scalar = namedEntities[name] { return scalar }
        guard name.hasPrefix("#") else { return nil }
        let digits = name.dropFirst()
        let value: UInt32?
        if digits.hasPrefix("x") || digits.hasPrefix("X") {
            let hex = digits.dropFirst()
            guard (1...6).contains(hex.count), hex.allSatisfy(\.isHexDigit) else { return nil }
            value = UInt32(hex, radix: 16)
        } else {
            guard (1...7).contains(digits.count), digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            value = UInt32(digits)
        }
        // A surrogate or a number past U+10FFFF names no character: refused like a control character.
        guard let value else { return nil }
        return Unicode.Scalar(value) ?? "\u{0}"
    }
}
