extension DisplayPNGCharacteristicsDescriptor {
    /// The PNG signature (PNG §5.2).
    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// The characteristics a PNG's header declares: its first chunk, IHDR, of 13 bytes (PNG §11.2.2). Nil when
    /// `png` does not start with the signature and that chunk, or when the header is out of PNG's own ranges (a
    /// zero or over-large side). The palette is not read: it is the image's business, not its shape.
    public init?(png: [UInt8]) {
        guard png.count >= 8 + 8 + 13, Array(png[0..<8]) == Self.pngSignature,
            Array(png[8..<12]) == [0, 0, 0, 13], Array(png[12..<16]) == Array("IHDR".utf8)
        else { return nil }
        func u32(_ at: Int) -> UInt32 { png[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        let width = u32(16)
        let height = u32(20)
        guard (1...0x7FFF_FFFF).contains(width), (1...0x7FFF_FFFF).contains(height) else { return nil }
        self.init(width: width, height: height, bitDepth: png[24], colorType: png[25], compression: png[26], filter: png[27], interlace: png[28])
    }

    /// Whether `header` (read from the image) is what these characteristics declare: every IHDR field equal.
    public func describes(_ header: DisplayPNGCharacteristicsDescriptor) -> Bool {
        width == header.width && height == header.height && bitDepth == header.bitDepth && colorType == header.colorType
            && compression == header.compression && filter == header.filter && interlace == header.interlace
    }
}
