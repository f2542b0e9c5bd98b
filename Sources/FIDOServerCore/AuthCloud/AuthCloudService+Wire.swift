import Foundation
import JWTKit
import NevisProtocol
import UAF

/// The Auth Cloud API's request and answer bodies (server-api §A.7, §B.10), as the service reads and writes them.
extension AuthCloudService {
    package struct EnrollRequest: Decodable, Sendable {
        var username: String?
        var userId: String?
        var channel: String?
        /// The passkey's display name (channel `fido2`), at most 64 bytes; the username when absent.
        var displayName: String?
        var fido2Options: FIDO2Options?
        package init(username: String?, userId: String?, channel: String?, displayName: String? = nil, fido2Options: FIDO2Options? = nil) {
            self.username = username
            self.userId = userId
            self.channel = channel
            self.displayName = displayName
            self.fido2Options = fido2Options
        }
    }

    /// What the relying party may ask of the passkey ceremony (channel `fido2`), in WebAuthn's member names: an
    /// enrollment takes `authenticatorSelection`, `attestation` and `hints`; an approval `userVerification` and
    /// `hints`. Each is held to the server's `fido2` configuration as on nevisFIDO's own FIDO2 API.
    package struct FIDO2Options: Decodable, Sendable {
        var authenticatorSelection: FIDO2API.AuthenticatorSelection?
        var attestation: String?
        var userVerification: String?
        var hints: [String]?
        package init(
            authenticatorSelection: FIDO2API.AuthenticatorSelection? = nil, attestation: String? = nil, userVerification: String? = nil,
            hints: [String]? = nil
        ) {
            self.authenticatorSelection = authenticatorSelection
            self.attestation = attestation
            self.userVerification = userVerification
            self.hints = hints
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
        var fido2Options: FIDO2Options?
        package init(
            username: String?, userId: String?, authenticatorId: String?, channel: String?, prompt: Bool?,
            message: String?, notificationMessage: String?, fido2Options: FIDO2Options? = nil
        ) {
            self.fido2Options = fido2Options
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

    /// An enrollment: for the app, its link and QR code; for a passkey (`fido2`), the options the page hands to
    /// `navigator.credentials.create`, whose answer goes to `/nevisfido/fido2/attestation/result`.
    package struct Enrollment: Codable, Sendable {
        var transactionId: String
        package var statusToken: String
        package var qrCode: QRCodeImage?
        package var appLinkUri: String?
        package var fido2Options: FIDO2API.CreationOptions?
    }

    package struct Authenticator: Codable, Sendable, Equatable {
        package struct UAFKey: Codable, Sendable, Equatable {
            var aaid: String
            var keyId: String
            var enrolledAt: String
        }
        var authenticatorId: String
        var name: String?
        /// `app` or `fido2`.
        var authenticatorType: String
        /// For a passkey, `synced` (its provider may copy it to the user's other devices: backup eligible) or
        /// `device-bound`; absent for the app, whose platform the server does not know.
        var type: String?
        var state: String
        var pushEnabled: Bool
        var enrolledAt: String
        var updatedAt: String
        /// When a passkey last signed in; absent for the app and for a passkey never used.
        var lastUsedAt: String?
        /// The app's keys.
        var uaf: [UAFKey]?
        /// The passkey, as nevisFIDO's passkey list describes it (provider name, backup state, transports).
        var fido2: FIDO2API.PasskeyDescription?
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
        /// `dispatched`, or `dispatchError` when the push did not leave (the device can still fetch the operation);
        /// absent for `fido2`, where nothing is dispatched.
        var dispatchResult: String?
        /// For `fido2`: the options the page hands to `navigator.credentials.get` (also with `mediation:
        /// "conditional"`, autofill), whose answer goes to `/nevisfido/fido2/assertion/result`.
        package var fido2Options: FIDO2API.RequestOptions?
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
        /// The channel the operation runs on: `app`, `push` or `fido2` (which reads a passkey ceremony's status).
        var channel: String?
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
        /// `app`, `push` or `fido2`.
        var channel: String?
        var status: String
        /// The UAF authenticator's AAID; absent for a passkey.
        var aaid: String?
        /// The UAF key ID, or the passkey's credential ID (base64url).
        var keyid: String?
        var txn_hash: String?
        var iat: Int64
        var exp: Int64
        package func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}
