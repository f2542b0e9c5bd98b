/// A UAFV1TLV message could not be decoded or does not have the structure its assertion type requires.
///
/// Compare with the static values (`error == .missingTag(.signature)`). The reasons behind them are internal, so the
/// module can add one without breaking a caller's `switch`.
public struct TLVError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Reason: Hashable, Sendable {
        case truncatedHeader(offset: Int)
        case lengthExceedsInput(tag: TLVTag, length: Int, available: Int)
        case trailingBytes(count: Int)
        case nestingTooDeep
        case unknownCriticalTag(TLVTag)
        case missingTag(TLVTag)
        case duplicateTag(TLVTag)
        case invalidLength(tag: TLVTag, length: Int)
        case unexpectedTag(expected: TLVTag, found: TLVTag)
        case invalidValue(tag: TLVTag, detail: String)
        case valueTooLong(tag: TLVTag, length: Int)
        case unknownCriticalExtension(id: String)
    }

    let reason: Reason
    init(_ reason: Reason) { self.reason = reason }

    /// Fewer than 4 bytes were left for a tag and length.
    public static func truncatedHeader(offset: Int) -> Self { Self(.truncatedHeader(offset: offset)) }
    /// A length field claims more bytes than are left.
    public static func lengthExceedsInput(tag: TLVTag, length: Int, available: Int) -> Self {
        Self(.lengthExceedsInput(tag: tag, length: length, available: available))
    }
    /// Bytes follow the outermost element.
    public static func trailingBytes(count: Int) -> Self { Self(.trailingBytes(count: count)) }
    /// Composite tags nest deeper than allowed.
    public static let nestingTooDeep = Self(.nestingTooDeep)
    /// A critical tag this parser does not understand, or one not allowed at this place.
    public static func unknownCriticalTag(_ tag: TLVTag) -> Self { Self(.unknownCriticalTag(tag)) }
    /// A mandatory tag is absent.
    public static func missingTag(_ tag: TLVTag) -> Self { Self(.missingTag(tag)) }
    /// A tag that may appear once appears again.
    public static func duplicateTag(_ tag: TLVTag) -> Self { Self(.duplicateTag(tag)) }
    /// A fixed-size field has the wrong length.
    public static func invalidLength(tag: TLVTag, length: Int) -> Self { Self(.invalidLength(tag: tag, length: length)) }
    /// The outermost tag is not the expected one.
    public static func unexpectedTag(expected: TLVTag, found: TLVTag) -> Self { Self(.unexpectedTag(expected: expected, found: found)) }
    /// A field's value is outside its allowed range or encoding.
    public static func invalidValue(tag: TLVTag, detail: String) -> Self { Self(.invalidValue(tag: tag, detail: detail)) }
    /// A value is too long to be encoded in 16 bits.
    public static func valueTooLong(tag: TLVTag, length: Int) -> Self { Self(.valueTooLong(tag: tag, length: length)) }
    /// A critical extension whose id this implementation does not know.
    public static func unknownCriticalExtension(id: String) -> Self { Self(.unknownCriticalExtension(id: id)) }

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
