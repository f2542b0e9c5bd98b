/// One decoded TLV element. `encoded` is the whole element including its 4-byte header, which is what
/// signatures cover (uaf-spec §2.3: "the entire TAG_UAFV1_KRD TLV including its 4-byte tag+length header").
public struct TLVElement: Sendable, Equatable {
    public let tag: TLVTag
    public let value: ArraySlice<UInt8>
    public let encoded: ArraySlice<UInt8>
    /// Children of a composite element, in wire order; empty for a leaf.
    public let children: [TLVElement]
}

/// A total UAFV1TLV decoder: any byte string yields elements or a ``TLVError``, never a trap.
public enum TLVDecoder {
    /// Deepest composite nesting accepted (real assertions nest 3 deep).
    public static let maximumDepth = 8

    /// Decodes a sequence of TLVs that must fill `bytes` exactly.
    public static func decodeSequence(_ bytes: ArraySlice<UInt8>, depth: Int = 0) throws(TLVError) -> [TLVElement] {
        guard depth <= maximumDepth else { throw TLVError.nestingTooDeep }
        var elements: [TLVElement] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            guard bytes.endIndex - offset >= 4 else { throw TLVError.truncatedHeader(offset: offset - bytes.startIndex) }
            let tag = TLVTag(UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8)
            let length = Int(UInt16(bytes[offset + 2]) | UInt16(bytes[offset + 3]) << 8)
            let valueStart = offset + 4
            guard bytes.endIndex - valueStart >= length else {
                throw TLVError.lengthExceedsInput(tag: tag, length: length, available: bytes.endIndex - valueStart)
            }
            let value = bytes[valueStart..<(valueStart + length)]
            let children = tag.isComposite ? try decodeSequence(value, depth: depth + 1) : []
            elements.append(TLVElement(tag: tag, value: value, encoded: bytes[offset..<(valueStart + length)], children: children))
            offset = valueStart + length
        }
        return elements
    }

    /// Decodes exactly one outermost element with tag `expected`.
    public static func decodeSingle(_ bytes: [UInt8], expected: TLVTag) throws(TLVError) -> TLVElement {
        guard bytes.count >= 4 else { throw TLVError.truncatedHeader(offset: 0) }
        let tag = TLVTag(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
        guard tag == expected else { throw TLVError.unexpectedTag(expected: expected, found: tag) }
        let length = Int(UInt16(bytes[2]) | UInt16(bytes[3]) << 8)
        guard bytes.count - 4 >= length else {
            throw TLVError.lengthExceedsInput(tag: tag, length: length, available: bytes.count - 4)
        }
        guard bytes.count - 4 == length else { throw TLVError.trailingBytes(count: bytes.count - 4 - length) }
        let elements = try decodeSequence(bytes[...])
        return elements[0]
    }
}

/// The children of a composite, indexed by tag, with the "any order, each known tag once, unknown critical tags
/// rejected, unknown non-critical tags skipped" rules of uaf-spec §2.1.
public struct TLVFields: Sendable {
    // A composite holds a handful of children: linear arrays beat hashing here (verification hot path).
    private var single: [TLVElement] = []
    private var repeatedElements: [TLVElement] = []

    /// Repeatable tags (attestation certificates, extensions) in wire order.
    public var repeated: [TLVTag: [TLVElement]] { Dictionary(grouping: repeatedElements, by: \.tag) }

    public init(_ parent: TLVElement, known: Set<TLVTag>, repeatable: Set<TLVTag> = []) throws(TLVError) {
        single.reserveCapacity(parent.children.count)
        for child in parent.children {
            if repeatable.contains(child.tag) {
                repeatedElements.append(child)
            } else if known.contains(child.tag) {
                guard !single.contains(where: { $0.tag == child.tag }) else { throw TLVError.duplicateTag(child.tag) }
                single.append(child)
            } else if child.tag.isCritical {
                throw TLVError.unknownCriticalTag(child.tag)
            }
        }
    }

    /// Whether any repeatable element is present.
    public var hasRepeated: Bool { !repeatedElements.isEmpty }

    public func optional(_ tag: TLVTag) -> TLVElement? { single.first { $0.tag == tag } }

    public func required(_ tag: TLVTag) throws(TLVError) -> TLVElement {
        guard let element = optional(tag) else { throw TLVError.missingTag(tag) }
        return element
    }

    public func bytes(_ tag: TLVTag, length: ClosedRange<Int>) throws(TLVError) -> [UInt8] {
        let element = try required(tag)
        guard length.contains(element.value.count) else { throw TLVError.invalidLength(tag: tag, length: element.value.count) }
        return Array(element.value)
    }
}

/// Reads little-endian integers from a fixed-size TLV value.
struct LittleEndianReader {
    private let bytes: ArraySlice<UInt8>
    private var offset: Int
    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }
    mutating func u8() -> UInt8 {
        defer { offset += 1 }
        return bytes[offset]
    }
    mutating func u16() -> UInt16 {
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }
    mutating func u32() -> UInt32 {
        defer { offset += 4 }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }
}
