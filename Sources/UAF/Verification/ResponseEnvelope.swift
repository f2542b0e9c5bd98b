import Foundation
import WireJSON

/// The envelope of a response against its contents: which structural error is 1400 and which 1498 (the server's
/// "Status codes" article). Here, beside the rejections, since the messages know nothing of them.
extension UAFMessageCodec {
    /// Decodes the `uafResponse` of a SendUAFResponse under the rule the FIDO conformance tool holds a server to:
    /// - the envelope, a JSON array with at least one element, must parse, or the message is not understood
    ///   (``UAFVerificationError/notAMessageArray``, 1400);
    /// - past it, any structural error (an element that is not an object, a member missing or of the wrong JSON type
    ///   at any level, an unknown operation) is a problem with the message's contents
    ///   (``UAFVerificationError/malformedMessage(_:)``, 1498).
    public static func decodeResponses<T: Decodable>(_ type: T.Type, from string: String) throws(UAFVerificationError) -> [T] {
        let messages: [T]
        do {
            messages = try decode(T.self, from: string)
        } catch {
            // Read again only on this path, as a bare array: whether the envelope or the contents failed.
            guard let count = try? WireJSONDecoder().decode(ArrayCount.self, from: string).count, count > 0 else {
                throw UAFVerificationError.notAMessageArray
            }
            throw UAFVerificationError.malformedMessage(Self.describe(error))
        }
        guard !messages.isEmpty else { throw UAFVerificationError.notAMessageArray }
        return messages
    }

    /// A decoding error in words: which member, and what is wrong with it.
    static func describe(_ error: any Error) -> String {
        func name(_ path: [any CodingKey]) -> String {
            guard let key = path.last else { return "a message" }
            return key.intValue.map { "element \($0)" } ?? "member \"\(key.stringValue)\""
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?: return "member \"\(key.stringValue)\" is missing"
        case .valueNotFound(_, let context)?: return "\(name(context.codingPath)) is null"
        case .typeMismatch(_, let context)?: return "\(name(context.codingPath)) is of the wrong JSON type"
        case .dataCorrupted(let context)?: return "\(name(context.codingPath)) has a value this server does not know"
        default: return "a message is not in the expected structure"
        }
    }

    /// The number of elements of a JSON array, whatever they are.
    private struct ArrayCount: Decodable {
        var count: Int
        init(from decoder: any Decoder) throws { count = try decoder.unkeyedContainer().count ?? 0 }
    }
}
