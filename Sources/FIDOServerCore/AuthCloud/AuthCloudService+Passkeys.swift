import Foundation
import NevisProtocol
import Primitives

/// The Auth Cloud API's `fido2` channel: an enrollment is a passkey registration ceremony, an approval a passkey
/// sign-in, both of nevisFIDO's FIDO2 API. The relying party's backend asks with its access key and hands the options
/// in the answer to its page, which calls WebAuthn and posts the browser's answer to `/nevisfido/fido2/attestation/result`
/// or `/nevisfido/fido2/assertion/result`; the status token then reads the ceremony's status.
extension AuthCloudService {
    /// The longest `displayName` of a passkey enrollment, in UTF-8 bytes (server-api §B.10).
    static let maximumDisplayNameBytes = 64

    /// The passkey service, or 409 when the server has no `fido2` configuration.
    private func requirePasskeys() throws -> PasskeyService {
        guard let passkeys else {
            throw Refusal(.conflict, "fido2_unavailable", "Passkeys are not configured on this server (fido2).")
        }
        return passkeys
    }

    /// `POST /api/v1/users/enroll` with `channel: fido2`: registration options for the user (created when new, after
    /// the options were issued, so a refused request creates nobody).
    func enrollPasskey(_ request: EnrollRequest, principal: Principal) async throws -> User {
        let passkeys = try requirePasskeys()
        if let displayName = request.displayName {
            // The passkey provider shows it in its account picker: a bidirectional override would show another name.
            guard !displayName.isEmpty, displayName.utf8.count <= Self.maximumDisplayNameBytes,
                !displayName.unicodeScalars.contains(where: UntrustedText.isUnsafe)
            else {
                throw Refusal(
                    .badRequest, "bad_request",
                    "displayName must be 1...\(Self.maximumDisplayNameBytes) bytes without control or bidirectional formatting characters.")
            }
        }
        let options = request.fido2Options ?? FIDO2Options()
        guard options.userVerification == nil else {
            throw Refusal(.badRequest, "bad_request", "fido2Options.userVerification of an enrollment goes in authenticatorSelection.")
        }
        var existing: AuthCloudUserRecord?
        let username: String
        if let userId = request.userId {
            let found = try await enrolledUser(id: userId, named: request.username, principal: principal)
            existing = found
            username = found.username
        } else {
            guard let named = request.username else { throw Refusal(.badRequest, "bad_request", "username or userId is required.") }
            try Self.validate(username: named)
            // The demo's rule (a new username only) is checked before anything is issued.
            if principal.source == .demoSite { existing = try await demoUser(username: named) }
            username = named
        }
        let creation = try await passkeys.registrationOptions(
            FIDO2API.OptionsRequest(
                username: username, displayName: request.displayName ?? username,
                authenticatorSelection: options.authenticatorSelection ?? FIDO2API.AuthenticatorSelection(), attestation: options.attestation,
                hints: options.hints),
            principal: principal)
        let user: AuthCloudUserRecord
        if let existing {
            user = existing
        } else {
            user = try await stores.authCloudUsers.findOrCreate(username: username, now: environment.clock()).record
        }
        let statusToken = try await statusToken(
            transactionId: creation.fido2SessionId, user: user, op: "enroll", channel: "fido2", transactionHash: nil)
        var answer = try await describe(user)
        answer.enrollment = Enrollment(
            transactionId: creation.fido2SessionId, statusToken: statusToken, qrCode: nil, appLinkUri: nil, fido2Options: creation)
        environment.decide(
            "auth cloud enroll", username, 1200, "passkey registration options issued, transaction \(OrderedToken.label(creation.fido2SessionId))")
        return answer
    }

    /// What the `fido2` channel cannot do, refused rather than ignored: a passkey signs no message (WebAuthn has no
    /// transaction text), so a relying party asking for one must not read `succeeded` as "she confirmed it".
    static func refuseUAFMembers(_ request: ApprovalRequest) throws {
        guard request.message == nil, request.prompt == nil else {
            throw Refusal(.badRequest, "bad_request", "message and prompt need the push or app channel: a passkey confirms no message.")
        }
        guard request.notificationMessage == nil else {
            throw Refusal(.badRequest, "bad_request", "notificationMessage belongs to the push channel.")
        }
        guard request.authenticatorId != "*" else {
            throw Refusal(.badRequest, "bad_request", "authenticatorId * is only allowed with the app channel.")
        }
        guard request.fido2Options?.authenticatorSelection == nil, request.fido2Options?.attestation == nil else {
            throw Refusal(.badRequest, "bad_request", "fido2Options.authenticatorSelection and attestation belong to an enrollment.")
        }
    }

    /// `POST /api/v1/approval` with `channel: fido2`: sign-in options for `user` (her passkeys, or the one
    /// `authenticatorId` names), or without a user for any discoverable passkey (autofill).
    func approvePasskey(_ request: ApprovalRequest, user: AuthCloudUserRecord?, principal: Principal) async throws -> ApprovalAnswer {
        let passkeys = try requirePasskeys()
        if user == nil {
            guard request.username == nil else { throw Self.userNotFound }
            guard request.authenticatorId == nil else { throw Refusal(.badRequest, "bad_request", "authenticatorId needs username or userId.") }
        }
        let options: FIDO2API.RequestOptions
        do {
            // For the access key, a caller who may act for her, the options refuse a user without a passkey and an
            // authenticatorId that is not hers (404 `no_passkey`), which this API calls `no_authenticator`.
            options = try await passkeys.authenticationOptions(
                FIDO2API.OptionsRequest(
                    username: user?.username ?? "", userVerification: request.fido2Options?.userVerification, hints: request.fido2Options?.hints),
                caller: principal, onlyCredential: request.authenticatorId)
        } catch let refusal as Refusal where refusal.error == "no_passkey" {
            throw Refusal(
                .notFound, "no_authenticator", "The user has no passkey\(request.authenticatorId == nil ? "" : " with this authenticatorId").")
        }
        let statusToken = try await statusToken(
            transactionId: options.fido2SessionId, user: user, op: "approval", channel: "fido2", transactionHash: nil)
        environment.decide(
            "auth cloud approval", user?.username, 1200,
            "passkey sign-in options issued\(user == nil ? " for any passkey" : request.authenticatorId == nil ? "" : " for one passkey"), transaction \(OrderedToken.label(options.fido2SessionId))"
        )
        return ApprovalAnswer(
            transactionId: options.fido2SessionId, statusToken: statusToken, userId: user?.userId, username: user?.username,
            channel: "fido2", qrCode: nil, appLinkUri: nil, dispatchResult: nil, fido2Options: options)
    }

    /// The status of a `fido2` operation: its passkey ceremony's. `pending` until answered (or expired: `failed`);
    /// `succeeded` with a result token naming the passkey (`keyid`, its credential ID); `cancelled`; `unknown` once the
    /// ceremony's row is purged, or on a server whose `fido2` configuration was removed.
    func passkeyOutcome(_ claims: StatusClaims, answer: StatusAnswer) async throws -> (answer: StatusAnswer, ending: Ending?) {
        var answer = answer
        guard passkeys != nil, let status = try await stores.passkeyCeremonies.status(sessionID: claims.sub) else { return (answer, nil) }
        let now = environment.clock()
        switch status.state {
        case .succeeded:
            try await succeed(&answer, claims, username: status.username, aaid: nil, keyID: status.credentialID, now: now)
            return (answer, nil)
        case .failed:
            answer.status = "failed"
            return (answer, .failed)
        case .cancelled:
            answer.status = "cancelled"
            return (answer, .cancelled)
        case .initialized, .answered:
            guard status.expiresAt < now else {
                answer.status = "pending"
                return (answer, nil)
            }
            answer.status = "failed"
            return (answer, .expired)
        }
    }
}
