/// A UAFV1TLV message could not be decoded or does not have the structure its assertion type requires.
public struct TLVError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// Fewer than 4 bytes were left for a tag and length.
        case truncatedHeader(offset: Int)
        /// A length field claims more bytes than are left.
        case lengthExceedsInput(tag: TLVTag, length: Int, available: Int)
        /// Bytes follow the outermost element.
        case trailingBytes(count: Int)
        /// Composite tags nest deeper than allowed.
        case nestingTooDeep
        /// A critical tag this parser does not understand, or one not allowed at this place.
        case unknownCriticalTag(TLVTag)
        /// A mandatory tag is absent.
        case missingTag(TLVTag)
        /// A tag that may appear once appears again.
        case duplicateTag(TLVTag)
        /// A fixed-size field has the wrong length.
        case invalidLength(tag: TLVTag, length: Int)
        /// The outermost tag is not the expected one.
        case unexpectedTag(expected: TLVTag, found: TLVTag)
        /// A field's value is outside its allowed range or encoding.
        case invalidValue(tag: TLVTag, detail: String)
        /// A value is too long to be encoded in 16 bits.
        case valueTooLong(tag: TLVTag, length: Int)
        /// A critical extension whose id this implementation does not know.
        case unknownCriticalExtension(id: String)
    }

    public let reason: Reason
    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .truncatedHeader(let offset): return "TLV truncated: no room for a tag and length at offset \(offset)"
        case .lengthExceedsInput(let tag, let length, let available): return "\(tag) claims \(length) bytes but only \(available) remain"
        case .trailingBytes(let count): return "\(count) unexpected bytes after the assertion"
        case .nestingTooDeep: return "TLV nesting too deep"
        case .unknownCriticalTag(let tag): return "unknown or misplaced critical tag \(tag)"
        case .missingTag(let tag): return "mandatory \(tag) is missing"
        case .duplicateTag(let tag): return "\(tag) appears more than once"
        case .invalidLength(let tag, let length): return "\(tag) has invalid length \(length)"
        case .unexpectedTag(let expected, let found): return "expected \(expected), found \(found)"
        case .invalidValue(let tag, let detail): return "\(tag): \(detail)"
        case .valueTooLong(let tag, let length): return "\(tag) value of \(length) bytes does not fit a 16-bit length"
        case .unknownCriticalExtension(let id): return "unknown critical extension \"\(id)\""
        }
    }
}
