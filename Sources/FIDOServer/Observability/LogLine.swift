import FIDOServerCore
import Foundation
import Logging
import Primitives
import WireJSON

/// The two line formats of ``ServerLogHandler``.
///
/// ``json(time:level:label:message:source:metadata:)`` (`observability.logFormat` `json`), for a log pipeline:
/// `time` (RFC 3339, UTC, milliseconds), `level`, `label`, `message`, `source`, and each metadata key as a member of
/// its own. A metadata key that would replace one of those is written as `metadata.<key>`. Members are in byte order
/// of their names; strings are escaped as JSON requires, so a username or path with quotes, newlines or control
/// characters cannot break a line or forge a member.
///
/// ``text(time:level:label:message:metadata:)`` (`text`, the default), for a person at a terminal and for `grep`:
/// `time level label: message key="value" …`, the time in RFC 3339 (UTC, milliseconds), the metadata in byte order
/// of their keys. Why not swift-log's `StreamLogHandler`: it writes metadata values as they are, so a username
/// holding a space and `code=1200` forges a field, and a newline forges a line. Here every value is quoted and every
/// unsafe scalar of a value, a key or the message is escaped (`UntrustedText`): one event is one line, and a field
/// is what the server wrote.
enum LogLine {
    static let jsonReserved: Set<String> = ["time", "level", "label", "message", "source"]

    /// One JSON line's bytes (no newline).
    static func json(time: Date, level: Logger.Level, label: String, message: String, source: String, metadata: Logger.Metadata) -> [UInt8] {
        var object: [String: Value] = [
            "time": .string(AuditEvent.timestamp(time)), "level": .string(level.rawValue), "label": .string(label),
            "message": .string(message), "source": .string(source),
        ]
        for (key, value) in metadata { object[jsonReserved.contains(key) ? "metadata.\(key)" : key] = Value(value) }
        // Encoding strings, arrays and objects of strings cannot fail; an empty object is the fallback regardless.
        return (try? WireJSONEncoder().encode(object)) ?? Array("{}".utf8)
    }

    /// A metadata value as JSON: strings, arrays and objects as they are; a whole number given as one (an audit event's
    /// `code`) as a number.
    enum Value: Encodable {
        case string(String)
        case number(Int)
        case array([Value])
        case object([String: Value])

        init(_ value: Logger.Metadata.Value) {
            switch value {
            case .string(let text): self = .string(text)
            case .stringConvertible(let convertible): self = (convertible as? Int).map(Value.number) ?? .string(convertible.description)
            case .array(let values): self = .array(values.map(Value.init))
            case .dictionary(let members): self = .object(members.mapValues(Value.init))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .number(let number): try container.encode(number)
            case .array(let values): try container.encode(values)
            case .object(let members): try container.encode(members)
            }
        }
    }

    /// One text line (no newline).
    static func text(time: Date, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var line = "\(AuditEvent.timestamp(time)) \(level.rawValue) \(UntrustedText.escaped(label)): \(UntrustedText.escaped(message))"
        for key in metadata.keys.sorted() {
            line += " \(UntrustedText.escaped(key))=\(UntrustedText.quoted(Self.plain(metadata[key]!), limit: 2000))"
        }
        return line
    }

    private static func plain(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): "[" + values.map(plain).joined(separator: ", ") + "]"
        case .dictionary(let members): "[" + members.keys.sorted().map { "\($0): \(plain(members[$0]!))" }.joined(separator: ", ") + "]"
        }
    }
}
