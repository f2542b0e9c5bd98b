import Foundation
import WireJSON

/// Reads a configuration file's JSON and says what is wrong with it in an operator's words: where a syntax error
/// is (line and column), which setting is missing, of the wrong kind or null, by its dotted path
/// (`authorization.jwt.issuer`, `facets[2]`), never a Swift type or coding key.
///
/// The syntax is checked first by the wire's strict reader, which also refuses a member named twice (Foundation's
/// reader keeps the last, so an operator's second `"port"` would win without a word) and a trailing comma; then
/// Foundation's decoder, which knows every member's full path, reads the settings.
enum ConfigurationFileDecoding {
    /// `resolving` rewrites the file once its syntax is known good, before its settings are read
    /// (``ConfigurationReferences``).
    static func decode<T: Decodable>(
        _ type: T.Type, from data: Data, file: String, resolving: (Data) throws -> Data = { $0 }
    ) throws -> T {
        do { _ = try WireJSONDecoder().decode(JSONValue.self, from: data) } catch let error as DecodingError {
            throw ServerConfiguration.ConfigurationError.invalid("\(file): \(syntaxMessage(error, in: Array(data)))")
        }
        let data = try resolving(data)
        do { return try JSONDecoder().decode(T.self, from: data) } catch let error as DecodingError {
            throw ServerConfiguration.ConfigurationError.invalid("\(file): \(message(error))")
        } catch ServerConfiguration.ConfigurationError.invalid(let detail) {
            throw ServerConfiguration.ConfigurationError.invalid("\(file): \(detail)")
        } catch {
            // A setting's own rule (an unknown key with its suggestion, a value out of range) says it in words.
            throw ServerConfiguration.ConfigurationError.invalid("\(file): \(error)")
        }
    }

    /// "line 3, column 3: expected ',' or '}'" from the strict reader's "… at byte N." (its offset in `bytes`).
    static func syntaxMessage(_ error: DecodingError, in bytes: [UInt8]) -> String {
        guard case .dataCorrupted(let context) = error else { return message(error) }
        let text = context.debugDescription
        let reason = text.firstRange(of: "not valid JSON: ").map { String(text[$0.upperBound...]) } ?? text
        guard let at = reason.range(of: " at byte ", options: .backwards), let offset = Int(reason[at.upperBound...].dropLast()) else {
            return "not valid JSON: \(reason)"
        }
        return "not valid JSON at \(position(min(offset, bytes.count), in: bytes)): \(reason[..<at.lowerBound])"
    }

    /// "line 3, column 14" of byte `offset` of a file's `bytes`. Columns count characters, not bytes: a name with
    /// "ü" before the place must not shift the column.
    static func position(_ offset: Int, in bytes: [UInt8]) -> String {
        let before = bytes[..<offset]
        let line = before.count(where: { $0 == UInt8(ascii: "\n") }) + 1
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        return "line \(line), column \(String(decoding: bytes[lineStart..<offset], as: UTF8.self).count + 1)"
    }

    /// A decoding error as a sentence about the setting it concerns.
    static func message(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])) is missing"
        case .valueNotFound(_, let context):
            return "\(path(context.codingPath)) must have a value, not null"
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)) must be \(kind(type))"
        case .dataCorrupted(let context):
            if let underlying = context.underlyingError { return "\(path(context.codingPath)): \(underlying)" }
            let detail = context.debugDescription
            // An unknown value of a fixed set (`"logFormat": "xml"`) reads "Cannot initialize X from invalid String value xml".
            if let value = detail.firstRange(of: "from invalid ") {
                return "\(path(context.codingPath)): \(detail[value.upperBound...]) is not one of the allowed values"
            }
            return "\(path(context.codingPath)): \(detail)"
        @unknown default:
            return "\(error)"
        }
    }

    /// `authorization.jwt.issuer`, `facets[2]`; `the file` for the top level.
    static func path(_ keys: [any CodingKey]) -> String {
        var text = ""
        for key in keys {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text.isEmpty ? "the file" : text
    }

    /// What JSON a Swift type is written as, in an operator's words.
    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type: return "a whole number"
        case is Double.Type, is Float.Type: return "a number"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array<") { return "a list ([…])" }
            return "an object ({…})"
        }
    }
}
