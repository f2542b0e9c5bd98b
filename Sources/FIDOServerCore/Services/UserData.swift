import Foundation
import Primitives

/// What the server holds about one user, and what removing part or all of it means. One rule for every way in: UAF
/// deregistration, the Auth Cloud API's user deletion, and an operator's `mauth admin user`.
package enum UserData {
    /// The user's registrations, passkeys, live sessions, dispatch targets and outstanding UAF requests.
    package struct Summary: Sendable {
        package var registrations: [RegistrationRecord]
        package var passkeys: [PasskeyRecord]
        package var sessions: [SessionRecord]
        package var targets: [DispatchTargetRecord]
        /// Unexpired requests that count against the user's cap (``ServerConfiguration/Limits/outstandingRequestsPerUsername``).
        package var outstandingRequests: Int
        /// The App Attest keys that registered the user's keys, by key ID (those still stored).
        package var appAttestKeys: [String: AppAttestKeyState] = [:]
        package var isEmpty: Bool { registrations.isEmpty && passkeys.isEmpty && sessions.isEmpty && targets.isEmpty && outstandingRequests == 0 }
    }

    /// A summary as an operator reads it (`mauth admin user show --json`, `GET /nevisfido/admin/user`). Never a
    /// secret: sessions by their public id, no tokens, no keys' private parts.
    package struct Report: Encodable, Sendable {
        struct Key: Encodable {
            var aaid: String
            var keyID: String
            var registeredAt: Date
            var signCounter: UInt32
            var deviceId: String?
            var appAttestation: AppAttestation?
        }
        /// The app attestation a key's registration passed, and the state of the App Attest key of the install that
        /// registered it (its counter and last use; nil when that key is no longer stored).
        struct AppAttestation: Encodable {
            var verdict: String
            var appAttestKeyID: String?
            var appID: String?
            var environment: String?
            var counter: UInt32?
            var lastUsedAt: Date?
        }
        struct Passkey: Encodable {
            var credentialID: String
            var name: String?
            /// Who keeps it, by its AAGUID (``PasskeyProviders``), when known.
            var providerName: String?
            var aaguid: String
            var attestation: String
            var registeredAt: Date
            var lastUsedAt: Date?
            var signCounter: UInt32
            var backedUp: Bool
            var discoverable: Bool?
        }
        /// A session and the credential that opened it: `method` `uaf` (a key: `aaid`, `keyID`) or `passkey` (`credentialID`),
        /// as the session's JWT names them.
        struct Session: Encodable {
            var id: String
            var method: String
            var aaid: String?
            var keyID: String?
            var credentialID: String?
            var openedAt: Date
            var expiresAt: Date
        }
        struct Target: Encodable {
            var id: String
            var name: String
            var dispatcher: String
            var deviceId: String?
            var createdAt: Date
        }
        var username: String
        var keys: [Key]
        var passkeys: [Passkey]
        var sessions: [Session]
        var dispatchTargets: [Target]
        var outstandingRequests: Int

        package init(username: String, _ summary: Summary, providers: PasskeyProviders = .bundled) {
            self.username = username
            keys = summary.registrations.map { record in
                let attestation = record.appAttestation.map { verdict in
                    let state = record.appAttestKeyID.flatMap { summary.appAttestKeys[$0] }
                    return AppAttestation(
                        verdict: verdict, appAttestKeyID: record.appAttestKeyID, appID: state?.appID, environment: state?.environment,
                        counter: state?.counter, lastUsedAt: state?.lastUsedAt)
                }
                return Key(
                    aaid: record.aaid, keyID: record.keyID, registeredAt: record.createdAt, signCounter: record.signCounter,
                    deviceId: record.deviceId, appAttestation: attestation)
            }
            passkeys = summary.passkeys.map {
                Passkey(
                    credentialID: $0.credentialID, name: $0.name, providerName: providers.name(aaguid: $0.aaguid, metadata: nil), aaguid: $0.aaguid,
                    attestation: "\($0.attestationFormat) (\($0.attestationType), \($0.trust ?? "trust unknown"))",
                    registeredAt: $0.createdAt, lastUsedAt: $0.lastUsedAt, signCounter: $0.signCount, backedUp: $0.backupState,
                    discoverable: $0.discoverable)
            }
            sessions = summary.sessions.map {
                let credential = $0.credential
                return Session(
                    id: $0.id, method: credential.kind.rawValue, aaid: credential.aaid, keyID: credential.kind == .uaf ? credential.id : nil,
                    credentialID: credential.kind == .passkey ? credential.id : nil, openedAt: $0.createdAt, expiresAt: $0.expiresAt)
            }
            dispatchTargets = summary.targets.map {
                Target(id: $0.id, name: $0.name, dispatcher: $0.dispatcher, deviceId: $0.deviceId, createdAt: $0.createdAt)
            }
            outstandingRequests = summary.outstandingRequests
        }

        /// The report as lines a person reads (`mauth admin user show`): the JSON's content, one item a line. A name a
        /// user chose is quoted and escaped (``UntrustedText``), so it never reaches the operator's terminal raw.
        package var lines: [String] {
            let formatter = ISO8601DateFormatter()
            var lines = ["user \(username)", "keys (\(keys.count)):"]
            for key in keys {
                lines.append(
                    "  \(key.aaid)  key \(key.keyID)  registered \(formatter.string(from: key.registeredAt))  counter \(key.signCounter)"
                        + (key.deviceId.map { "  device \($0)" } ?? ""))
                guard let attestation = key.appAttestation else { continue }
                // The verdict quotes what the app sent (a package name, say): escaped like any text a user chose.
                lines.append("    app attestation: \(UntrustedText.escaped(attestation.verdict))")
                if let keyID = attestation.appAttestKeyID {
                    lines.append(
                        "    App Attest key \(keyID)"
                            + (attestation.counter.map { ": counter \($0)" } ?? ": no longer stored")
                            + (attestation.lastUsedAt.map { ", last used \(formatter.string(from: $0))" } ?? ""))
                }
            }
            lines.append("passkeys (\(passkeys.count)):")
            lines += passkeys.map { passkey in
                "  \(passkey.credentialID)  \(passkey.aaguid)\(passkey.providerName.map { " (\($0))" } ?? "")  \(passkey.attestation)  registered \(formatter.string(from: passkey.registeredAt))"
                    + (passkey.lastUsedAt.map { "  last used \(formatter.string(from: $0))" } ?? "  never used") + "  counter \(passkey.signCounter)"
                    + (passkey.name.map { "  \(UntrustedText.quoted($0))" } ?? "")
            }
            lines.append("live sessions (\(sessions.count)):")
            lines += sessions.map { session in
                "  \(session.id)  opened \(formatter.string(from: session.openedAt))  expires \(formatter.string(from: session.expiresAt))  "
                    + (session.credentialID.map { "passkey \($0)" } ?? "key \(session.keyID ?? "")")
            }
            lines.append("dispatch targets (\(dispatchTargets.count)):")
            lines += dispatchTargets.map { target in
                "  \(target.id)  \(UntrustedText.quoted(target.name))  \(target.dispatcher)  created \(formatter.string(from: target.createdAt))"
                    + (target.deviceId.map { "  device \($0)" } ?? "")
            }
            lines.append("outstanding requests: \(outstandingRequests)")
            return lines
        }

        /// The JSON both ways in write: members sorted, dates in ISO 8601.
        package func json() throws -> Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            return try encoder.encode(self)
        }
    }

    package static func summary(_ stores: Stores, username: String, now: Date) async throws -> Summary {
        let registrations = try await stores.registrations.registrations(username: username)
        let appAttestKeys = try await stores.appAttestKeys.states(keyIDs: Array(Set(registrations.compactMap(\.appAttestKeyID))))
        return Summary(
            registrations: registrations,
            passkeys: try await stores.passkeys.passkeys(username: username),
            sessions: try await stores.sessions.live(username: username, now: now),
            targets: try await stores.dispatchTargets.targets(username: username),
            outstandingRequests: try await stores.uafCeremonies.outstanding(username: username, now: now),
            appAttestKeys: Dictionary(appAttestKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first }))
    }

    /// Removes the user's registrations (all with neither list; else those of the AAIDs or the KeyIDs; with
    /// `deviceId`, only that device's) and ends the sessions they opened; with the user's last key, every session of
    /// hers. Returns what was removed.
    package static func removeRegistrations(
        from registrations: RegistrationStore, endingSessionsIn sessions: SessionStore, username: String, aaids: [String]? = nil,
        keyIDs: [String]? = nil,
        deviceId: String? = nil, now: Date
    ) async throws -> [RegistrationRecord] {
        let removed = try await registrations.delete(username: username, aaids: aaids, keyIDs: keyIDs, deviceId: deviceId)
        // A session opened with a removed key ends with it (a stolen key must not keep a session alive).
        _ = try await sessions.revoke(username: username, .uaf, ids: removed.map(\.keyID), now: now)
        if try await registrations.registrations(username: username).isEmpty {
            _ = try await sessions.revokeAll(username: username, now: now)
        }
        return removed
    }

    /// Removes the user's passkeys (all, or those of `ids`) and ends the sessions they opened. Returns what was removed.
    package static func removePasskeys(
        from passkeys: PasskeyStore, endingSessionsIn sessions: SessionStore, username: String, ids: [String]? = nil, now: Date
    ) async throws -> [PasskeyRecord] {
        let removed = try await passkeys.delete(username: username, ids: ids)
        // The session of a removed (perhaps stolen) passkey ends with it.
        _ = try await sessions.revoke(username: username, .passkey, ids: removed.map(\.credentialID), now: now)
        return removed
    }

    /// What ``erase(_:username:now:)`` removed or ended.
    package struct Erased: Sendable, Equatable, Encodable {
        package var registrations: Int
        package var passkeys: Int
        package var sessions: Int
        package var targets: Int
        package var dispatchTokens: Int
        package var requests: Int
        /// Whether an Auth Cloud user of that name went too: set by an operator's erasure
        /// (``eraseWithCloudUser(_:username:now:)``), nil (and left out of the JSON) where none was looked for.
        package var authCloudUser: Bool? = nil
    }

    /// Removes everything the server holds that could act for the user: registrations, passkeys, sessions, dispatch targets,
    /// unredeemed dispatch tokens and outstanding requests. An enrollment link or a registration request issued
    /// before must not enrol a key for a user who no longer exists (or for the next user given the same name).
    /// Status records and expired rows go with the purge.
    package static func erase(_ stores: Stores, username: String, now: Date) async throws -> Erased {
        let registrations = try await stores.registrations.delete(username: username).count
        let passkeys = try await stores.passkeys.delete(username: username).count
        _ = try await stores.passkeyCeremonies.deleteCounted(username: username)
        let sessions = try await stores.sessions.revokeAll(username: username, now: now)
        var targets = 0
        for target in try await stores.dispatchTargets.targets(username: username) {
            if try await stores.dispatchTargets.delete(id: target.id) { targets += 1 }
        }
        let tokens = try await stores.dispatchTokens.expireUnredeemed(username: username, now: now)
        let requests = try await stores.uafCeremonies.deleteCounted(username: username)
        return Erased(
            registrations: registrations, passkeys: passkeys, sessions: sessions, targets: targets, dispatchTokens: tokens, requests: requests)
    }

    /// An operator's erasure (`mauth admin user erase`, `DELETE /nevisfido/admin/user`): ``erase(_:username:now:)`` and the
    /// Auth Cloud user of that name, in one unit of work; `authCloudUser` says whether there was such a user.
    package static func eraseWithCloudUser(_ stores: Stores, username: String, now: Date) async throws -> Erased {
        try await stores.database.unitOfWork {
            var erased = try await erase(stores, username: username, now: now)
            let cloudUser = try await stores.authCloudUsers.user(username: username)
            if let cloudUser { _ = try await stores.authCloudUsers.delete(id: cloudUser.userId) }
            erased.authCloudUser = cloudUser != nil
            return erased
        }
    }
}
