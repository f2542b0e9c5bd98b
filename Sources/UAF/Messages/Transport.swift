import Foundation
import Primitives
import WireJSON

/// GetUAFRequest (server-api §B.1). `context` is a stringified JSON object.
public struct GetUAFRequest: Codable, Hashable, Sendable {
    public var op: UAFOperation?
    public var previousRequest: String?
    public var context: String?
    public init(op: UAFOperation? = nil, previousRequest: String? = nil, context: String? = nil) {
        self.op = op
        self.previousRequest = previousRequest
        self.context = context
    }
}

/// ReturnUAFRequest (server-api §B.2). `uafRequest` is the stringified UAF message array.
public struct ReturnUAFRequest: Codable, Hashable, Sendable {
    public var statusCode: Int
    public var uafRequest: String?
    public var op: UAFOperation?
    public var lifetimeMillis: Int64?
    public init(statusCode: Int, uafRequest: String? = nil, op: UAFOperation? = nil, lifetimeMillis: Int64? = nil) {
        self.statusCode = statusCode
        self.uafRequest = uafRequest
        self.op = op
        self.lifetimeMillis = lifetimeMillis
    }
}

/// SendUAFResponse (server-api §B.3). `uafResponse` is the stringified array with one response.
public struct SendUAFResponse: Codable, Hashable, Sendable {
    public var uafResponse: String
    public var context: String?
    public init(uafResponse: String, context: String? = nil) {
        self.uafResponse = uafResponse
        self.context = context
    }
}

/// Token types (uaf-spec §7).
public enum TokenType: String, Codable, Sendable {
    case httpCookie = "HTTP_COOKIE", oauth = "OAUTH", oauth2 = "OAUTH2", saml11 = "SAML1_1", saml2 = "SAML2"
    case jwt = "JWT", openIDConnect = "OPENID_CONNECT"
}

/// Token (uaf-spec §7).
public struct Token: Codable, Hashable, Sendable {
    public var type: TokenType
    public var value: String
    public init(type: TokenType, value: String) {
        self.type = type
        self.value = value
    }
}

/// ServerResponse (uaf-spec §7).
public struct ServerResponse: Codable, Hashable, Sendable {
    public var statusCode: Int
    public var description: String?
    public var additionalTokens: [Token]?
    public var location: String?
    public var postData: String?
    public var newUAFRequest: String?
    public init(
        statusCode: Int, description: String? = nil, additionalTokens: [Token]? = nil, location: String? = nil,
        postData: String? = nil, newUAFRequest: String? = nil
    ) {
        self.statusCode = statusCode
        self.description = description
        self.additionalTokens = additionalTokens
        self.location = location
        self.postData = postData
        self.newUAFRequest = newUAFRequest
    }
}

/// TrustedFacets (uaf-spec §4; server-api §B.4).
public struct TrustedFacets: Codable, Hashable, Sendable {
    public struct Entry: Codable, Hashable, Sendable {
        public var version: Version
        public var ids: [String]
        public init(version: Version, ids: [String]) {
            self.version = version
            self.ids = ids
        }
    }
    public var trustedFacets: [Entry]
    public init(trustedFacets: [Entry]) { self.trustedFacets = trustedFacets }
}

/// Encodes and decodes the stringified JSON arrays UAF puts inside the transport objects, with the wire JSON codec
/// (`WireJSONEncoder`: sorted keys, slashes as they are; `WireJSONDecoder`: strict, a repeated member refused).
public enum UAFMessageCodec {
    /// Encodes `messages` as a JSON array string.
    public static func encode<T: Encodable>(_ messages: [T]) throws -> String {
        try WireJSONEncoder().encodeToString(messages)
    }

    /// Decodes a JSON array string into its messages.
    public static func decode<T: Decodable>(_ type: T.Type, from string: String) throws -> [T] {
        try WireJSONDecoder().decode([T].self, from: string)
    }

    /// Encodes a Codable value (a context object) as a JSON string.
    public static func encodeObject<T: Encodable>(_ value: T) throws -> String {
        try WireJSONEncoder().encodeToString(value)
    }
}
