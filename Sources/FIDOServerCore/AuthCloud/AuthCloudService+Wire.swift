import Foundation
import JWTKit
import UAF

/// The Auth Cloud API's request and answer bodies (server-api §A.7, §B.10), as the service reads and writes them.
extension AuthCloudService {
    package struct EnrollRequest: Decodable, Sendable {
        var username: String?
        var userId: String?
        var channel: String?
        package init(username: String?, userId: String?, channel: String?) {
            self.username = username
            self.userId = userId
            self.channel = channel
        }
    }

    package struct ApprovalRequest: Decodable, Sendable {
        var username: String?
        var userId: String?
        var authenticatorId: String?
        var channel: String?
        var prompt: Bool?
        var message: String?
        var notificationMessage: String?
        package init(
            username: String?, userId: String?, authenticatorId: String?, channel: String?, prompt: Bool?,
            message: String?, notificationMessage: String?
        ) {
            self.username = username
            self.userId = userId
            self.authenticatorId = authenticatorId
            self.channel = channel
            self.prompt = prompt
            self.message = message
            self.notificationMessage = notificationMessage
        }
    }

    package struct StatusRequest: Decodable, Sendable {
        package var statusToken: String
        package init(statusToken: String) { self.statusToken = statusToken }
    }

    /// The authentication context an approval dispatches (the members ``AuthenticationService/Context`` reads).
    package struct AuthenticationContext: Encodable {
        var username: String?
        var transaction: [Transaction]?
    }

    package struct QRCodeImage: Codable, Sendable, Equatable {
        var type: String
        var size: Int
        var dataUri: String
    }

    package struct Enrollment: Codable, Sendable {
        var transactionId: String
        package var statusToken: String
        package var qrCode: QRCodeImage
        package var appLinkUri: String
    }

    package struct Authenticator: Codable, Sendable, Equatable {
        package struct UAFKey: Codable, Sendable, Equatable {
            var aaid: String
            var keyId: String
            var enrolledAt: String
        }
        var authenticatorId: String
        var name: String?
        var authenticatorType: String
        var state: String
        var pushEnabled: Bool
        var enrolledAt: String
        var updatedAt: String
        var uaf: [UAFKey]
    }

    package struct User: Codable, Sendable {
        var userId: String
        var username: String
        var status: String
        var createdAt: String
        var updatedAt: String
        var lastLoginDateSuccess: String?
        var authenticators: [Authenticator]
        package var enrollment: Enrollment?
    }

    package struct ApprovalAnswer: Codable, Sendable {
        var transactionId: String
        package var statusToken: String
        var userId: String?
        var username: String?
        var channel: String
        package var qrCode: QRCodeImage?
        package var appLinkUri: String?
        /// `dispatched`, or `dispatchError` when the push did not leave (the device can still fetch the operation).
        var dispatchResult: String
    }

    package struct StatusAnswer: Codable, Sendable {
        var transactionId: String
        package var status: String
        var userId: String?
        var username: String?
        package var token: String?
        var createdAt: String
        var lastUpdatedAt: String?
    }

    /// The status token: which operation, for whom; it is the only credential `/api/v1/status` needs.
    package struct StatusClaims: JWTPayload, AudienceBound {
        static let audience = "mauth-auth-cloud-status"
        var iss: String
        var aud: String
        var sub: String
        var uid: String?
        var username: String?
        var op: String
        /// base64url SHA-256 of the approval message, the transaction the user must confirm.
        var txn_hash: String?
        var iat: Int64
        var exp: Int64
        package func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The result token of a succeeded operation: what the relying party's backend verifies (JWKS at
    /// `/.well-known/jwks.json`) before it trusts the front end's "approved".
    package struct ResultClaims: JWTPayload, AudienceBound, Equatable {
        package static let audience = "mauth-auth-cloud-result"
        var iss: String
        var aud: String
        var sub: String
        var username: String
        var transaction_id: String
        var op: String
        var status: String
        var aaid: String?
        var keyid: String?
        var txn_hash: String?
        var iat: Int64
        var exp: Int64
        package func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
