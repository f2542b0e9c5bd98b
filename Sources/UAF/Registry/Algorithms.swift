/// ALG_SIGN_* values (FIDO Registry §3.6.1; uaf-spec §3.1).
public struct SignatureAlgorithm: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let secp256r1ECDSASHA256Raw = Self(rawValue: 0x0001)
    public static let secp256r1ECDSASHA256DER = Self(rawValue: 0x0002)
    public static let rsassaPSSSHA256Raw = Self(rawValue: 0x0003)
    public static let rsassaPSSSHA256DER = Self(rawValue: 0x0004)
    public static let secp256k1ECDSASHA256Raw = Self(rawValue: 0x0005)
    public static let secp256k1ECDSASHA256DER = Self(rawValue: 0x0006)
    public static let sm2SM3Raw = Self(rawValue: 0x0007)
    public static let rsaEMSAPKCS1SHA256Raw = Self(rawValue: 0x0008)
    public static let rsaEMSAPKCS1SHA256DER = Self(rawValue: 0x0009)

    public var description: String {
        switch self {
        case .secp256r1ECDSASHA256Raw: return "ALG_SIGN_SECP256R1_ECDSA_SHA256_RAW"
        case .secp256r1ECDSASHA256DER: return "ALG_SIGN_SECP256R1_ECDSA_SHA256_DER"
        case .rsassaPSSSHA256Raw: return "ALG_SIGN_RSASSA_PSS_SHA256_RAW"
        case .rsassaPSSSHA256DER: return "ALG_SIGN_RSASSA_PSS_SHA256_DER"
        case .rsaEMSAPKCS1SHA256Raw: return "ALG_SIGN_RSA_EMSA_PKCS1_SHA256_RAW"
        case .rsaEMSAPKCS1SHA256DER: return "ALG_SIGN_RSA_EMSA_PKCS1_SHA256_DER"
        default: return String(format: "ALG_SIGN_0x%04X", rawValue)
        }
    }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(UInt16.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}

/// ALG_KEY_* public key formats (FIDO Registry §3.6.2; uaf-spec §3.2).
public struct PublicKeyEncoding: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// `04 ‖ X ‖ Y`, 65 bytes.
    public static let eccX962Raw = Self(rawValue: 0x0100)
    /// DER SubjectPublicKeyInfo with a named curve.
    public static let eccX962DER = Self(rawValue: 0x0101)
    /// n (256 bytes) ‖ e.
    public static let rsa2048Raw = Self(rawValue: 0x0102)
    /// DER PKCS#1 RSAPublicKey.
    public static let rsa2048DER = Self(rawValue: 0x0103)
    public static let cose = Self(rawValue: 0x0104)

    public var description: String {
        switch self {
        case .eccX962Raw: return "ALG_KEY_ECC_X962_RAW"
        case .eccX962DER: return "ALG_KEY_ECC_X962_DER"
        case .rsa2048Raw: return "ALG_KEY_RSA_2048_RAW"
        case .rsa2048DER: return "ALG_KEY_RSA_2048_DER"
        default: return String(format: "ALG_KEY_0x%04X", rawValue)
        }
    }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(UInt16.self) }
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rawValue)
    }
}

/// Attestation types; the values are the TLV tags of the attestation blocks (uaf-spec §2.2).
public enum AttestationType: UInt16, Codable, Sendable, CaseIterable {
    case basicFull = 0x3E07
    case basicSurrogate = 0x3E08
    case ecdaa = 0x3E09
    case attCA = 0x3E0A
}

/// AuthenticationMode in TAG_ASSERTION_INFO (uaf-spec §2.4).
public enum AuthenticationMode: UInt8, Sendable {
    /// The user was explicitly verified.
    case userVerified = 0x01
    /// Transaction content was shown and the user confirmed it.
    case transactionConfirmed = 0x02
}
