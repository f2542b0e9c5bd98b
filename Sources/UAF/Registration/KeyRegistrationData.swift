/// TAG_UAFV1_KRD: the signed part of a registration assertion (UAF Authenticator Commands §5.2.1;
/// uaf-spec §2.3).
public struct KeyRegistrationData: Sendable, Equatable {
    public var aaid: String
    public var authenticatorVersion: UInt16
    /// Must be 0x01 for registration.
    public var authenticationMode: UInt8
    /// Algorithm of the attestation signature.
    public var signatureAlgorithm: SignatureAlgorithm
    /// Format of ``publicKey``.
    public var publicKeyEncoding: PublicKeyEncoding
    public var finalChallengeHash: [UInt8]
    public var keyID: [UInt8]
    public var signCounter: UInt32
    public var registrationCounter: UInt32
    public var publicKey: [UInt8]
    /// Signed extensions.
    public var extensions: [AssertionExtension]

    public init(
        aaid: String, authenticatorVersion: UInt16, authenticationMode: UInt8 = 0x01,
        signatureAlgorithm: SignatureAlgorithm, publicKeyEncoding: PublicKeyEncoding,
        finalChallengeHash: [UInt8], keyID: [UInt8], signCounter: UInt32, registrationCounter: UInt32,
        publicKey: [UInt8], extensions: [AssertionExtension] = []
    ) {
        self.aaid = aaid
        self.authenticatorVersion = authenticatorVersion
        self.authenticationMode = authenticationMode
        self.signatureAlgorithm = signatureAlgorithm
        self.publicKeyEncoding = publicKeyEncoding
        self.finalChallengeHash = finalChallengeHash
        self.keyID = keyID
        self.signCounter = signCounter
        self.registrationCounter = registrationCounter
        self.publicKey = publicKey
        self.extensions = extensions
    }

    static let knownTags: Set<TLVTag> = [.aaid, .assertionInfo, .finalChallengeHash, .keyID, .counters, .publicKey]

    /// Parses the fields of a KRD element (tags in any order).
    init(element: TLVElement) throws(TLVError) {
        let fields = try TLVFields(element, known: Self.knownTags, repeatable: AssertionExtension.tags)
        var header = try AssertionHeader(fields, infoLength: 7)
        aaid = header.aaid
        authenticatorVersion = header.authenticatorVersion
        authenticationMode = header.authenticationMode
        signatureAlgorithm = header.signatureAlgorithm
        publicKeyEncoding = PublicKeyEncoding(rawValue: header.reader.u16())
        finalChallengeHash = try fields.bytes(.finalChallengeHash, length: 1...64)
        keyID = try fields.bytes(.keyID, length: KeyID.lengths)
        let counters = try fields.required(.counters)
        guard counters.value.count == 8 else { throw TLVError.invalidLength(tag: .counters, length: counters.value.count) }
        var c = LittleEndianReader(counters.value)
        signCounter = c.u32()
        registrationCounter = c.u32()
        publicKey = try fields.bytes(.publicKey, length: 1...2048)
        extensions = try AssertionExtension.parse(fields)
    }

    /// The canonical encoding of the whole TAG_UAFV1_KRD element (header included): what is signed.
    public func encoded() throws(TLVError) -> [UInt8] {
        var e = TLVEncoder()
        try e.composite(.krd) { (k: inout TLVEncoder) throws(TLVError) in
            try k.leaf(.aaid, Array(aaid.utf8))
            try k.leaf(
                .assertionInfo,
                TLVEncoder.le16(authenticatorVersion) + [authenticationMode]
                    + TLVEncoder.le16(signatureAlgorithm.rawValue) + TLVEncoder.le16(publicKeyEncoding.rawValue))
            try k.leaf(.finalChallengeHash, finalChallengeHash)
            try k.leaf(.keyID, keyID)
            try k.leaf(.counters, TLVEncoder.le32(signCounter) + TLVEncoder.le32(registrationCounter))
            try k.leaf(.publicKey, publicKey)
            for ext in extensions { try ext.encode(into: &k) }
        }
        return e.bytes
    }
}
