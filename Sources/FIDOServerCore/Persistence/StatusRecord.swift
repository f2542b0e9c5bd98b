import Foundation
import SQLKit

/// The Status Service's record of one operation (server-api §B.5).
public struct StatusRecord: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        case tokenCreated, clientRegistering, clientAuthenticating, clientDeregistering, succeeded, failed, unknown
        /// The relying party withdrew the operation before it ended (our extension of nevisFIDO's vocabulary).
        case cancelled
    }
    public struct AuthenticatorReference: Codable, Sendable, Equatable {
        public var aaid: String
        public var keyId: String
    }
    public var sessionId: String
    public var status: Status
    public var operation: String
    public var username: String?
    public var uafStatusCode: Int?
    public var asmStatusCode: Int?
    public var clientErrorCode: Int?
    public var authenticators: [AuthenticatorReference]
    public var updatedAt: Date
    /// For a dispatched operation: how its token fared.
    public var tokenInformation: TokenInformation?

    /// The Status Service's `tokenInformation` (server-api §B.5), plus the token's expiry, which the service uses to
    /// report a token nobody redeemed in time as `tokenTimedOut` (not sent on the wire).
    public struct TokenInformation: Codable, Sendable, Equatable {
        public enum TokenResult: String, Codable, Sendable { case tokenRedeemed, tokenTimedOut }
        public struct DispatcherInformation: Codable, Sendable, Equatable {
            public var name: String
            public var response: String?
        }
        public var dispatchTargetExtId: String?
        public var tokenResult: TokenResult?
        public var dispatcherInformation: DispatcherInformation?
        public var tokenExpiresAt: Int64?
    }

    public init(
        sessionId: String, status: Status, operation: String, username: String?, uafStatusCode: Int? = nil, asmStatusCode: Int? = nil,
        clientErrorCode: Int? = nil, authenticators: [AuthenticatorReference] = [], updatedAt: Date, tokenInformation: TokenInformation? = nil
    ) {
        self.sessionId = sessionId
        self.status = status
        self.operation = operation
        self.username = username
        self.uafStatusCode = uafStatusCode
        self.asmStatusCode = asmStatusCode
        self.clientErrorCode = clientErrorCode
        self.authenticators = authenticators
        self.updatedAt = updatedAt
        self.tokenInformation = tokenInformation
    }
}
