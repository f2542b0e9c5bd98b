/// USER_VERIFY_* (32-bit), uaf-spec §3.3.
public struct UserVerificationMethods: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let presence = Self(rawValue: 0x01)
    public static let fingerprint = Self(rawValue: 0x02)
    public static let passcode = Self(rawValue: 0x04)
    public static let voiceprint = Self(rawValue: 0x08)
    public static let faceprint = Self(rawValue: 0x10)
    public static let location = Self(rawValue: 0x20)
    public static let eyeprint = Self(rawValue: 0x40)
    public static let pattern = Self(rawValue: 0x80)
    public static let handprint = Self(rawValue: 0x100)
    public static let none = Self(rawValue: 0x200)
    public static let all = Self(rawValue: 0x400)
    public static let passcodeExternal = Self(rawValue: 0x800)
    public static let patternExternal = Self(rawValue: 0x1000)
}

/// KEY_PROTECTION_* (16-bit).
public struct KeyProtection: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let software = Self(rawValue: 0x01)
    public static let hardware = Self(rawValue: 0x02)
    public static let tee = Self(rawValue: 0x04)
    public static let secureElement = Self(rawValue: 0x08)
    public static let remoteHandle = Self(rawValue: 0x10)
}

/// MATCHER_PROTECTION_* (16-bit).
public struct MatcherProtection: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let software = Self(rawValue: 0x01)
    public static let tee = Self(rawValue: 0x02)
    public static let onChip = Self(rawValue: 0x04)
}

/// ATTACHMENT_HINT_* (32-bit).
public struct AttachmentHint: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let `internal` = Self(rawValue: 0x01)
    public static let external = Self(rawValue: 0x02)
    public static let wired = Self(rawValue: 0x04)
    public static let wireless = Self(rawValue: 0x08)
    public static let nfc = Self(rawValue: 0x10)
    public static let bluetooth = Self(rawValue: 0x20)
    public static let network = Self(rawValue: 0x40)
    public static let ready = Self(rawValue: 0x80)
    public static let wifiDirect = Self(rawValue: 0x100)
}

/// TRANSACTION_CONFIRMATION_DISPLAY_* (16-bit).
public struct TransactionConfirmationDisplay: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let any = Self(rawValue: 0x01)
    public static let privilegedSoftware = Self(rawValue: 0x02)
    public static let tee = Self(rawValue: 0x04)
    public static let hardware = Self(rawValue: 0x08)
    public static let remote = Self(rawValue: 0x10)
}

/// The assertion scheme this implementation speaks.
public enum AssertionScheme {
    public static let uafV1TLV = "UAFV1TLV"
}
