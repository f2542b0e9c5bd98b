/// Builds UAFV1TLV byte strings. Composite values are built by nested closures so lengths are always right.
public struct TLVEncoder: Sendable {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// Appends a leaf element.
    public mutating func leaf<C: Collection>(_ tag: TLVTag, _ value: C) throws(TLVError) where C.Element == UInt8 {
        guard value.count <= Int(UInt16.max) else { throw TLVError.valueTooLong(tag: tag, length: value.count) }
        appendHeader(tag, value.count)
        bytes.append(contentsOf: value)
    }

    /// Appends a composite element whose value `body` writes.
    public mutating func composite(_ tag: TLVTag, _ body: (inout TLVEncoder) throws(TLVError) -> Void) throws(TLVError) {
        var inner = TLVEncoder()
        try body(&inner)
        try leaf(tag, inner.bytes)
    }

    /// Appends already-encoded TLV bytes verbatim.
    public mutating func raw(_ encoded: some Collection<UInt8>) { bytes.append(contentsOf: encoded) }

    private mutating func appendHeader(_ tag: TLVTag, _ length: Int) {
        bytes.append(UInt8(tag.rawValue & 0xFF))
        bytes.append(UInt8(tag.rawValue >> 8))
        bytes.append(UInt8(length & 0xFF))
        bytes.append(UInt8(length >> 8))
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * $0)) & 0xFF) } }
}
