/// UAFV1TLV tags (UAF Authenticator Commands §5.1; uaf-spec §2.2).
///
/// Bit `0x1000` marks a composite tag (its value is a sequence of TLVs); bit `0x2000` marks a tag the receiver
/// must understand: an unexpected critical tag aborts parsing, an unexpected non-critical one is skipped.
public struct TLVTag: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public var isComposite: Bool { rawValue & 0x1000 != 0 }
    public var isCritical: Bool { rawValue & 0x2000 != 0 }

    public static let regAssertion = TLVTag(0x3E01)
    public static let authAssertion = TLVTag(0x3E02)
    public static let krd = TLVTag(0x3E03)
    public static let signedData = TLVTag(0x3E04)
    public static let attestationCert = TLVTag(0x2E05)
    public static let signature = TLVTag(0x2E06)
    public static let attestationBasicFull = TLVTag(0x3E07)
    public static let attestationBasicSurrogate = TLVTag(0x3E08)
    public static let attestationECDAA = TLVTag(0x3E09)
    public static let keyID = TLVTag(0x2E09)
    public static let finalChallengeHash = TLVTag(0x2E0A)
    public static let aaid = TLVTag(0x2E0B)
    public static let publicKey = TLVTag(0x2E0C)
    public static let counters = TLVTag(0x2E0D)
    public static let assertionInfo = TLVTag(0x2E0E)
    public static let authenticatorNonce = TLVTag(0x2E0F)
    public static let transactionContentHash = TLVTag(0x2E10)
    public static let extensionCritical = TLVTag(0x3E11)
    public static let extensionNonCritical = TLVTag(0x3E12)
    public static let extensionID = TLVTag(0x2E13)
    public static let extensionData = TLVTag(0x2E14)
    public static let rawUserVerificationIndex = TLVTag(0x0103)
    public static let userVerificationIndex = TLVTag(0x0104)
    public static let rawUserVerificationState = TLVTag(0x0105)
    public static let userVerificationState = TLVTag(0x0106)

    public var description: String {
        let names: [UInt16: String] = [
            0x3E01: "TAG_UAFV1_REG_ASSERTION", 0x3E02: "TAG_UAFV1_AUTH_ASSERTION", 0x3E03: "TAG_UAFV1_KRD",
            0x3E04: "TAG_UAFV1_SIGNED_DATA", 0x2E05: "TAG_ATTESTATION_CERT", 0x2E06: "TAG_SIGNATURE",
            0x3E07: "TAG_ATTESTATION_BASIC_FULL", 0x3E08: "TAG_ATTESTATION_BASIC_SURROGATE",
            0x3E09: "TAG_ATTESTATION_ECDAA", 0x2E09: "TAG_KEYID", 0x2E0A: "TAG_FINAL_CHALLENGE_HASH",
            0x2E0B: "TAG_AAID", 0x2E0C: "TAG_PUB_KEY", 0x2E0D: "TAG_COUNTERS", 0x2E0E: "TAG_ASSERTION_INFO",
            0x2E0F: "TAG_AUTHENTICATOR_NONCE", 0x2E10: "TAG_TRANSACTION_CONTENT_HASH", 0x3E11: "TAG_EXTENSION",
            0x3E12: "TAG_EXTENSION_NON_CRITICAL", 0x2E13: "TAG_EXTENSION_ID", 0x2E14: "TAG_EXTENSION_DATA",
        ]
        return names[rawValue] ?? String(format: "TAG_0x%04X", rawValue)
    }
}
