import CBOR

/// Why authenticator data was refused.
public struct AuthenticatorDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .tooShort`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case tooShort(length: Int)
            case attestedCredentialDataTruncated
            case credentialIDTooLong(length: Int)
            case credentialPublicKey(COSEKeyError.Reason)
            case extensionsMalformed(CBORError)
            case extensionsNotAMap
            case trailingBytes(count: Int)
            case backupStateWithoutEligibility
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`tooDeep(limit: 16)`), for logs and tests.
        public var description: String { "\(kind)" }

        /// Fewer than the 37 bytes every authenticator data has.
        public static func tooShort(length: Int) -> Self { Self(.tooShort(length: length)) }

        /// The AT flag is set but the attested credential data is cut short.
        public static let attestedCredentialDataTruncated = Self(.attestedCredentialDataTruncated)

        /// A credential ID longer than 1,023 bytes (WebAuthn §6.5.1).
        public static func credentialIDTooLong(length: Int) -> Self { Self(.credentialIDTooLong(length: length)) }

        /// The credential public key is not a key this module accepts.
        public static func credentialPublicKey(_ value: COSEKeyError.Reason) -> Self { Self(.credentialPublicKey(value)) }

        /// The ED flag is set but what follows is not one CBOR map.
        public static func extensionsMalformed(_ value: CBORError) -> Self { Self(.extensionsMalformed(value)) }

        public static let extensionsNotAMap = Self(.extensionsNotAMap)

        /// Bytes after the last part the flags announce (no ED flag, or after the extensions map).
        public static func trailingBytes(count: Int) -> Self { Self(.trailingBytes(count: count)) }

        /// BS (backed up) without BE (backup eligible): WebAuthn §6.1.3 calls this combination invalid.
        public static let backupStateWithoutEligibility = Self(.backupStateWithoutEligibility)
    }

    public var reason: Reason
    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason.kind {
        case .tooShort(let length): return "authenticator data: \(length) bytes, at least 37 needed"
        case .attestedCredentialDataTruncated: return "authenticator data: the attested credential data is cut short"
        case .credentialIDTooLong(let length): return "authenticator data: a credential ID of \(length) bytes (1023 at most)"
        case .credentialPublicKey(let reason): return "authenticator data: \(COSEKeyError(reason))"
        case .extensionsMalformed(let error): return "authenticator data: extensions: \(error)"
        case .extensionsNotAMap: return "authenticator data: the extensions are not a CBOR map"
        case .trailingBytes(let count): return "authenticator data: \(count) bytes after its last part"
        case .backupStateWithoutEligibility: return "authenticator data: backed up (BS) but not backup eligible (BE)"
        }
    }
}

/// Authenticator data (WebAuthn §6.1): what the authenticator signs, parsed exactly: 37 fixed bytes, the attested
/// credential data when AT is set, the extensions map when ED is set, and nothing after.
public struct AuthenticatorData: Sendable {
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let userPresent = Flags(rawValue: 0x01)
        public static let userVerified = Flags(rawValue: 0x04)
        public static let backupEligible = Flags(rawValue: 0x08)
        public static let backupState = Flags(rawValue: 0x10)
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// The credential a registration creates (present when AT is set).
    public struct AttestedCredentialData: Sendable {
        /// The authenticator model's AAGUID, 16 bytes (all zero when the authenticator gives none).
        public let aaguid: [UInt8]
        public let credentialID: [UInt8]
        public let publicKey: COSEKey
    }

    /// The bytes as received: what the signature covers.
    public let bytes: [UInt8]
    /// SHA-256 of the RP ID the credential is scoped to.
    public let rpIDHash: [UInt8]
    /// The flags byte; RFU bits (0x02, 0x20) are kept but mean nothing.
    public let flags: Flags
    public let signCount: UInt32
    public let attestedCredentialData: AttestedCredentialData?
    /// The authenticator extension outputs, by extension identifier.
    public let extensions: CBORMap?

    /// The limit on a credential ID (WebAuthn §6.5.1, and what the level-3 vectors test at its edge).
    public static let maximumCredentialIDLength = 1023

    public init(bytes: [UInt8]) throws(AuthenticatorDataError) {
        guard bytes.count >= 37 else { throw AuthenticatorDataError(.tooShort(length: bytes.count)) }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        // Why here: no authenticator may report a backup without being eligible for one (§6.1.3); the ceremonies
        // refuse it at §7.1 step 17 and §7.2 step 18.
        if flags.contains(.backupState), !flags.contains(.backupEligible) {
            throw AuthenticatorDataError(.backupStateWithoutEligibility)
        }
        // What the authenticator sends is not required to be canonical: read as well-formed, with repeated keys and
        // indefinite lengths still refused (see the CBOR module).
        let decoder = CBORDecoder(rules: .wellFormed, maximumDepth: 8, maximumBytes: bytes.count)
        var position = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= position + 18 else { throw AuthenticatorDataError(.attestedCredentialDataTruncated) }
            let aaguid = Array(bytes[position..<(position + 16)])
            let length = Int(bytes[position + 16]) << 8 | Int(bytes[position + 17])
            position += 18
            guard length <= Self.maximumCredentialIDLength else { throw AuthenticatorDataError(.credentialIDTooLong(length: length)) }
            guard bytes.count >= position + length + 1 else { throw AuthenticatorDataError(.attestedCredentialDataTruncated) }
            let credentialID = Array(bytes[position..<(position + length)])
            position += length
            let (value, end): (CBOR, Int)
            do { (value, end) = try decoder.decodePrefix(bytes[position...]) } catch {
                throw AuthenticatorDataError(.credentialPublicKey(.malformed(error)))
            }
            let key: COSEKey
            do { key = try COSEKey(value, encoded: Array(bytes[position..<end])) } catch {
                throw AuthenticatorDataError(.credentialPublicKey(error.reason))
            }
            position = end
            attestedCredentialData = AttestedCredentialData(aaguid: aaguid, credentialID: credentialID, publicKey: key)
        } else {
            attestedCredentialData = nil
        }
        if flags.contains(.extensionData) {
            let value: CBOR
            do {
                let (decoded, end) = try decoder.decodePrefix(bytes[position...])
                value = decoded
                position = end
            } catch { throw AuthenticatorDataError(.extensionsMalformed(error)) }
            guard let map = value.map else { throw AuthenticatorDataError(.extensionsNotAMap) }
            extensions = map
        } else {
            extensions = nil
        }
        guard position == bytes.count else { throw AuthenticatorDataError(.trailingBytes(count: bytes.count - position)) }
    }
}
