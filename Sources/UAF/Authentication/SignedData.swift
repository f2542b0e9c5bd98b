/// TAG_UAFV1_SIGNED_DATA: the signed part of an authentication assertion (uaf-spec §2.4).
public struct SignedData: Sendable, Equatable {
    public var aaid: String
    public var authenticatorVersion: UInt16
    /// 0x01 user verified; 0x02 transaction confirmed.
    public var authenticationMode: UInt8
    public var signatureAlgorithm: SignatureAlgorithm
    public var authenticatorNonce: [UInt8]
    public var finalChallengeHash: [UInt8]
    /// Empty in mode 0x01; hash of the displayed transaction content in mode 0x02.
    public var transactionContentHash: [UInt8]
    public var keyID: [UInt8]
    public var signCounter: UInt32
    public var extensions: [AssertionExtension]

    public init(
        aaid: String, authenticatorVersion: UInt16, authenticationMode: UInt8, signatureAlgorithm: SignatureAlgorithm,
        authenticatorNonce: [UInt8], finalChallengeHash: [UInt8], transactionContentHash: [UInt8], keyID: [UInt8],
        signCounter: UInt32, extensions: [AssertionExtension] = []
    ) {
        self.aaid = aaid
        self.authenticatorVersion = authenticatorVersion
        self.authenticationMode = authenticationMode
        self.signatureAlgorithm = signatureAlgorithm
        self.authenticatorNonce = authenticatorNonce
        self.finalChallengeHash = finalChallengeHash
        self.transactionContentHash = transactionContentHash
        self.keyID = keyID
        self.signCounter = signCounter
        self.extensions = extensions
    }

    static let knownTags: Set<TLVTag> = [.aaid, .assertionInfo, .authenticatorNonce, .finalChallengeHash, .transactionContentHash, .keyID, .counters]

    init(element: TLVElement) throws(TLVError) {
        let fields = try TLVFields(element, known: Self.knownTags, repeatable: AssertionExtension.tags)
        let header = try AssertionHeader(fields, infoLength: 5)
        aaid = header.aaid
        authenticatorVersion = header.authenticatorVersion
        authenticationMode = header.authenticationMode
        signatureAlgorithm = header.signatureAlgorithm
        authenticatorNonce = try fields.bytes(.authenticatorNonce, length: 1...64)
        finalChallengeHash = try fields.bytes(.finalChallengeHash, length: 1...64)
        transactionContentHash = try fields.bytes(.transactionContentHash, length: 0...64)
        keyID = try fields.bytes(.keyID, length: KeyID.lengths)
        let counters = try fields.required(.counters)
        guard counters.value.count == 4 else { throw TLVError.invalidLength(tag: .counters, length: counters.value.count) }
        var c = LittleEndianReader(counters.value)
        signCounter = c.u32()
        extensions = try AssertionExtension.parse(fields)
    }

    /// The canonical encoding of the whole TAG_UAFV1_SIGNED_DATA element: what is signed.
    public func encoded() throws(TLVError) -> [UInt8] {
        var e = TLVEncoder()
        try e.composite(.signedData) { (s: inout TLVEncoder) throws(TLVError) in
            try s.leaf(.aaid, Array(aaid.utf8))
            try s.leaf(.assertionInfo, TLVEncoder.le16(authenticatorVersion) + [authenticationMode] + TLVEncoder.le16(signatureAlgorithm.rawValue))
            try s.leaf(.authenticatorNonce, authenticatorNonce)
            try s.leaf(.finalChallengeHash, finalChallengeHash)
            try s.leaf(.transactionContentHash, transactionContentHash)
            try s.leaf(.keyID, keyID)
            try s.leaf(.counters, TLVEncoder.le32(signCounter))
            for ext in extensions { try ext.encode(into: &s) }
        }
        return e.bytes
    }
}

/// TAG_UAFV1_AUTH_ASSERTION (uaf-spec §2.4).
public struct AuthenticationAssertion: Sendable, Equatable {
    public var signedData: SignedData
    /// The exact SIGNED_DATA bytes received (header included). Never re-encoded.
    public var signedBytes: [UInt8]
    public var signature: [UInt8]
    public var unsignedExtensions: [AssertionExtension]

    public init(bytes: [UInt8]) throws(TLVError) {
        let outer = try TLVDecoder.decodeSingle(bytes, expected: .authAssertion)
        let fields = try TLVFields(outer, known: [.signedData, .signature], repeatable: AssertionExtension.tags)
        let signed = try fields.required(.signedData)
        signedData = try SignedData(element: signed)
        signedBytes = Array(signed.encoded)
        signature = try fields.bytes(.signature, length: 1...1024)
        unsignedExtensions = try AssertionExtension.parse(fields)
    }

    public static func encode(signedData: [UInt8], signature: [UInt8], unsignedExtensions: [AssertionExtension] = []) throws(TLVError) -> [UInt8] {
        var e = TLVEncoder()
        try e.composite(.authAssertion) { (a: inout TLVEncoder) throws(TLVError) in
            a.raw(signedData)
            try a.leaf(.signature, signature)
            for ext in unsignedExtensions { try ext.encode(into: &a) }
        }
        return e.bytes
    }
}
