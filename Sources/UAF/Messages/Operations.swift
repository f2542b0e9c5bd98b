import Crypto
import Foundation
import Primitives

/// RegistrationRequest (uaf-spec §1.2).
public struct RegistrationRequest: Codable, Hashable, Sendable {
    public var header: OperationHeader
    public var challenge: String
    public var username: String
    public var policy: Policy

    public init(header: OperationHeader, challenge: String, username: String, policy: Policy) {
        self.header = header
        self.challenge = challenge
        self.username = username
        self.policy = policy
    }
}

/// AuthenticatorRegistrationAssertion (uaf-spec §1.2).
public struct AuthenticatorRegistrationAssertion: Codable, Hashable, Sendable {
    public var assertionScheme: String
    /// base64url of the TAG_UAFV1_REG_ASSERTION TLV.
    public var assertion: String
    public var tcDisplayPNGCharacteristics: [DisplayPNGCharacteristicsDescriptor]?
    public var exts: [Extension]?

    public init(
        assertionScheme: String = AssertionScheme.uafV1TLV, assertion: String,
        tcDisplayPNGCharacteristics: [DisplayPNGCharacteristicsDescriptor]? = nil, exts: [Extension]? = nil
    ) {
        self.assertionScheme = assertionScheme
        self.assertion = assertion
        self.tcDisplayPNGCharacteristics = tcDisplayPNGCharacteristics
        self.exts = exts
    }
}

/// RegistrationResponse (uaf-spec §1.2).
public struct RegistrationResponse: Codable, Hashable, Sendable {
    public var header: OperationHeader
    public var fcParams: String
    public var assertions: [AuthenticatorRegistrationAssertion]

    public init(header: OperationHeader, fcParams: String, assertions: [AuthenticatorRegistrationAssertion]) {
        self.header = header
        self.fcParams = fcParams
        self.assertions = assertions
    }
}

/// Transaction (uaf-spec §1.3).
public struct Transaction: Codable, Hashable, Sendable {
    /// "text/plain" or "image/png".
    public var contentType: String
    /// base64url of the content.
    public var content: String
    public var tcDisplayPNGCharacteristics: DisplayPNGCharacteristicsDescriptor?

    public init(contentType: String, content: String, tcDisplayPNGCharacteristics: DisplayPNGCharacteristicsDescriptor? = nil) {
        self.contentType = contentType
        self.content = content
        self.tcDisplayPNGCharacteristics = tcDisplayPNGCharacteristics
    }

    /// Longest text/plain content, in characters (uaf-spec §1.3).
    public static let maximumTextLength = 200

    /// The TransactionContentHash the authenticator signs for this transaction: SHA-256 of the base64url-decoded
    /// content (nil if it is not base64url).
    public var contentHash: [UInt8]? { Base64URL.decode(content).map(Self.contentHash(of:)) }

    /// The text of a `text/plain` transaction, nil for another content type or content that is not base64url of
    /// UTF-8.
    public var plainText: String? {
        guard contentType == "text/plain", let bytes = Base64URL.decodeBytes(content) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }

    /// The TransactionContentHash of decoded transaction content (uaf-spec §2.4, TAG_TRANSACTION_CONTENT_HASH).
    public static func contentHash(of content: some DataProtocol) -> [UInt8] { Array(SHA256.hash(data: content)) }
}

/// DisplayPNGCharacteristicsDescriptor (uaf-spec §1.3).
public struct DisplayPNGCharacteristicsDescriptor: Codable, Hashable, Sendable {
    public struct RGBPaletteEntry: Codable, Hashable, Sendable {
        public var r: UInt16, g: UInt16, b: UInt16
    }
    public var width: UInt32
    public var height: UInt32
    public var bitDepth: UInt8
    public var colorType: UInt8
    public var compression: UInt8
    public var filter: UInt8
    public var interlace: UInt8
    public var plte: [RGBPaletteEntry]?

    public init(
        width: UInt32, height: UInt32, bitDepth: UInt8, colorType: UInt8, compression: UInt8, filter: UInt8, interlace: UInt8,
        plte: [RGBPaletteEntry]? = nil
    ) {
        self.width = width
        self.height = height
        self.bitDepth = bitDepth
        self.colorType = colorType
        self.compression = compression
        self.filter = filter
        self.interlace = interlace
        self.plte = plte
    }
}

/// AuthenticationRequest (uaf-spec §1.3).
public struct AuthenticationRequest: Codable, Hashable, Sendable {
    public var header: OperationHeader
    public var challenge: String
    public var transaction: [Transaction]?
    public var policy: Policy

    public init(header: OperationHeader, challenge: String, transaction: [Transaction]? = nil, policy: Policy) {
        self.header = header
        self.challenge = challenge
        self.transaction = transaction
        self.policy = policy
    }
}

/// AuthenticatorSignAssertion (uaf-spec §1.3).
public struct AuthenticatorSignAssertion: Codable, Hashable, Sendable {
    public var assertionScheme: String
    /// base64url of the TAG_UAFV1_AUTH_ASSERTION TLV.
    public var assertion: String
    public var exts: [Extension]?

    public init(assertionScheme: String = AssertionScheme.uafV1TLV, assertion: String, exts: [Extension]? = nil) {
        self.assertionScheme = assertionScheme
        self.assertion = assertion
        self.exts = exts
    }
}

/// AuthenticationResponse (uaf-spec §1.3).
public struct AuthenticationResponse: Codable, Hashable, Sendable {
    public var header: OperationHeader
    public var fcParams: String
    public var assertions: [AuthenticatorSignAssertion]

    public init(header: OperationHeader, fcParams: String, assertions: [AuthenticatorSignAssertion]) {
        self.header = header
        self.fcParams = fcParams
        self.assertions = assertions
    }
}

/// DeregisterAuthenticator (uaf-spec §1.4).
public struct DeregisterAuthenticator: Codable, Hashable, Sendable {
    public var aaid: String
    public var keyID: String
    public init(aaid: String, keyID: String) {
        self.aaid = aaid
        self.keyID = keyID
    }
}

/// DeregistrationRequest (uaf-spec §1.4). There is no response message.
public struct DeregistrationRequest: Codable, Hashable, Sendable {
    public var header: OperationHeader
    public var authenticators: [DeregisterAuthenticator]
    public init(header: OperationHeader, authenticators: [DeregisterAuthenticator]) {
        self.header = header
        self.authenticators = authenticators
    }
}
