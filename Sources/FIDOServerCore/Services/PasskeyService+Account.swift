import Foundation
import NevisProtocol

/// The user's own passkeys, managed by her (with her session) or for her (the relying party's token, its proxy):
/// listed with what WebAuthn's Signal API needs, renamed, removed. Our contract; nevisFIDO leaves this to nevisIDM.
extension PasskeyService {
    /// Whose passkeys a call manages: `username` when the caller names one, else her own (a session's subject). The
    /// caller must be one who may add credentials for her (a device signature, which proves the phone and not the
    /// user, may not).
    func owner(_ username: String?, principal: Principal) throws -> String {
        guard let owner = username ?? principal.subject else {
            throw Refusal(.badRequest, "bad_request", "name the user: the username query parameter is required for this caller")
        }
        try ServiceEnvironment.validate(username: owner)
        guard principal.mayRegisterFor(owner) else {
            throw AuthorizationFailure.forbidden("\(principal.subject ?? "?") (\(principal.source)) may not manage the passkeys of \(owner)")
        }
        return owner
    }

    /// Her passkeys, oldest first.
    package func passkeyList(username: String?, principal: Principal) async throws -> FIDO2API.PasskeyList {
        let owner = try owner(username, principal: principal)
        return list(owner, try await stores.passkeys.passkeys(username: owner))
    }

    /// Names her passkey `id` (1…256 bytes without control characters, nevisFIDO's `userFriendlyName`).
    package func renamePasskey(id: String, name: String, username: String?, principal: Principal) async throws -> FIDO2API.PasskeyList {
        let owner = try owner(username, principal: principal)
        try Self.validate(name: name, member: "name")
        guard try await stores.passkeys.rename(username: owner, id: id, name: name) else {
            environment.decide("passkey rename", owner, 404, "refused: no passkey \(id.prefix(10))… of hers")
            throw Refusal(.notFound, "not_found", "this user has no passkey with that credential ID")
        }
        environment.decide("passkey rename", owner, 200, "renamed passkey \(id.prefix(10))…")
        return list(owner, try await stores.passkeys.passkeys(username: owner))
    }

    /// Removes her passkey `id` and ends the sessions it opened; refused (409) when it is her last way to sign in,
    /// unless ``ServerConfiguration/FIDO2/allowRemovingLastCredential``. A session must be recent, as for adding one:
    /// a stolen session must not strip her of her passkeys.
    package func removePasskey(id: String, username: String?, principal: Principal) async throws -> FIDO2API.PasskeyList {
        let owner = try owner(username, principal: principal)
        try environment.signIn.requireRecentAuthentication(principal, for: "removing a passkey")
        switch try await stores.passkeys.remove(username: owner, id: id, allowingLast: settings.configuration.allowRemovingLastCredential) {
        case .notFound:
            environment.decide("passkey removal", owner, 404, "refused: no passkey \(id.prefix(10))… of hers")
            throw Refusal(.notFound, "not_found", "this user has no passkey with that credential ID")
        case .lastCredential:
            environment.decide("passkey removal", owner, 409, "refused: passkey \(id.prefix(10))… is her last credential")
            throw Refusal(
                .conflict, "last_credential",
                "this is the user's last way to sign in: add another passkey (or the app) before removing it")
        case .removed(let removed):
            // Whoever held the passkey (perhaps a thief) is signed out with it.
            let ended = try await stores.sessions.revoke(username: owner, .passkey, ids: [removed.credentialID], now: environment.clock())
            environment.decide("passkey removal", owner, 200, "removed passkey \(id.prefix(10))…; \(ended) session(s) it opened ended")
            var answer = list(owner, try await stores.passkeys.passkeys(username: owner), userHandle: removed.userHandle)
            answer.removed = removed.credentialID
            return answer
        }
    }

    /// `records` as the API shows them; `userHandle` names her when she holds none any more (after a removal).
    func list(_ owner: String, _ records: [PasskeyRecord], userHandle: String? = nil) -> FIDO2API.PasskeyList {
        let times = ISO8601DateFormatter()
        let handle = records.first?.userHandle ?? userHandle
        return FIDO2API.PasskeyList(
            rpId: settings.configuration.rpId,
            // No display name is kept: the username stands for it.
            user: handle.map { FIDO2API.UserEntity(name: owner, id: $0, displayName: owner) },
            passkeys: records.map { Self.describe($0, providers: settings.providers, metadata: metadataSource.store, times: times) })
    }

    /// How the API shows `record`: its provider named from `providers`, then `metadata`.
    static func describe(
        _ record: PasskeyRecord, providers: PasskeyProviders, metadata: MetadataStore?, times: ISO8601DateFormatter
    ) -> FIDO2API.PasskeyDescription {
        FIDO2API.PasskeyDescription(
            credentialId: record.credentialID, name: record.name,
            providerName: providers.name(aaguid: record.aaguid, metadata: metadata), aaguid: record.aaguid,
            createdAt: times.string(from: record.createdAt), lastUsedAt: record.lastUsedAt.map(times.string(from:)),
            backupEligible: record.backupEligible, backedUp: record.backupState, transports: record.transports,
            discoverable: record.discoverable)
    }
}
