/// An extension carried inside an assertion (TAG_EXTENSION, uaf-spec §2.2).
public struct AssertionExtension: Sendable, Equatable {
    public var id: String
    public var data: [UInt8]
    /// `true` for TAG_EXTENSION (0x3E11): a receiver that does not know `id` must reject the assertion.
    public var isCritical: Bool

    public init(id: String, data: [UInt8], isCritical: Bool) {
        self.id = id; self.data = data; self.isCritical = isCritical
    }

    static let tags: Set<TLVTag> = [.extensionCritical, .extensionNonCritical]

    /// Parses the extensions found among `fields`. Critical extensions whose id is not in `understood` are
    /// rejected, as the spec requires; this implementation understands none yet.
    static func parse(_ fields: TLVFields, understood: Set<String> = []) throws(TLVError) -> [AssertionExtension] {
        guard fields.hasRepeated else { return [] }
        var result: [AssertionExtension] = []
        for tag in [TLVTag.extensionCritical, .extensionNonCritical] {
            for element in fields.repeated[tag] ?? [] {
                let inner = try TLVFields(element, known: [.extensionID, .extensionData])
                let idBytes = try inner.bytes(.extensionID, length: 1...32)
                guard let id = String(bytes: idBytes, encoding: .utf8) else {
                    throw TLVError(.invalidValue(tag: .extensionID, detail: "not UTF-8"))
                }
                let data = inner.optional(.extensionData).map { Array($0.value) } ?? []
                let ext = AssertionExtension(id: id, data: data, isCritical: tag == .extensionCritical)
                if ext.isCritical && !understood.contains(id) { throw TLVError(.unknownCriticalExtension(id: id)) }
                result.append(ext)
            }
        }
        return result
    }

    func encode(into encoder: inout TLVEncoder) throws(TLVError) {
        try encoder.composite(isCritical ? .extensionCritical : .extensionNonCritical) { (e: inout TLVEncoder) throws(TLVError) in
            try e.leaf(.extensionID, Array(id.utf8))
            try e.leaf(.extensionData, data)
        }
    }
}

/// The AAID format `VVVV#MMMM` (uaf-spec §4).
public enum AAID {
    public static func isValid(_ aaid: String) -> Bool {
        let bytes = Array(aaid.utf8)
        guard bytes.count == 9, bytes[4] == UInt8(ascii: "#") else { return false }
        return bytes.enumerated().allSatisfy { index, byte in
            index == 4 || (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
        }
    }

    /// AAIDs compare case-insensitively (MDS uses lower case, the spec examples upper case).
    public static func normalized(_ aaid: String) -> String {
        aaid.utf8.contains(where: { $0 >= 0x61 && $0 <= 0x7A }) ? aaid.uppercased() : aaid
    }

    /// Case-insensitive comparison without allocating.
    public static func equal(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { x, y in
            x == y || (x ^ 0x20 == y && (x | 0x20) >= 0x61 && (x | 0x20) <= 0x7A)
        }
    }
}

/// TAG_AAID and TAG_ASSERTION_INFO, common to KRD and SIGNED_DATA (uaf-spec §2.3, §2.4).
struct AssertionHeader {
    let aaid: String
    let authenticatorVersion: UInt16
    let authenticationMode: UInt8
    let signatureAlgorithm: SignatureAlgorithm
    /// The rest of ASSERTION_INFO after the signature algorithm (the public key encoding in a KRD).
    var reader: LittleEndianReader

    /// Reads both fields; ASSERTION_INFO must have `infoLength` bytes (7 in a KRD, 5 in SIGNED_DATA).
    init(_ fields: TLVFields, infoLength: Int) throws(TLVError) {
        let aaidBytes = try fields.bytes(.aaid, length: 9...9)
        guard let aaid = String(bytes: aaidBytes, encoding: .utf8), AAID.isValid(aaid) else {
            throw TLVError(.invalidValue(tag: .aaid, detail: "not an AAID"))
        }
        let info = try fields.required(.assertionInfo)
        guard info.value.count == infoLength else { throw TLVError(.invalidLength(tag: .assertionInfo, length: info.value.count)) }
        var r = LittleEndianReader(info.value)
        self.aaid = aaid
        authenticatorVersion = r.u16()
        authenticationMode = r.u8()
        signatureAlgorithm = SignatureAlgorithm(rawValue: r.u16())
        reader = r
    }
}
