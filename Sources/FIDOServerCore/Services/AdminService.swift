import Foundation
import Primitives
import UAF

/// The operator's one entry point, whichever way they come in: the HTTP endpoints (`/nevisfido/admin/…`, with a
/// relying-party token of the operator scope) and `mauth admin user` / `mauth admin audit` on the database (as the
/// account that runs `mauth`). One user's data (show, remove keys or passkeys, end sessions, remove a dispatch target,
/// erase) and the audit trail, with the rules of ``UserData``. Every call is a decision (`onDecision`), which the
/// audit trail records with the operator who made it; a refusal is a ``ServiceFailure`` naming the user, which both
/// ways in record as a rejection and answer with the same words.
package struct AdminService: Sendable {
    /// Every store: an operator's report and erasure cover everything the server holds for a user.
    let stores: Stores
    let clock: @Sendable () -> Date
    let onDecision: @Sendable (ServerDecision) -> Void
    /// The passkey providers' names the report shows (``PasskeyProviders``, without the Metadata Service's).
    let providers: PasskeyProviders

    /// `onDecision` hears every decision: the server's audit handler, or the command line's, which writes the same
    /// event with the operator's login as its principal.
    package init(
        stores: Stores, clock: @escaping @Sendable () -> Date, providers: PasskeyProviders = .bundled,
        onDecision: @escaping @Sendable (ServerDecision) -> Void
    ) {
        self.providers = providers
        self.stores = stores
        self.clock = clock
        self.onDecision = onDecision
    }

    private func decide(_ operation: OperationName, _ username: String?, _ detail: String) {
        onDecision(ServerDecision(operation: operation, username: username, statusCode: 200, detail: detail))
    }

    /// The answers, one shape for both ways in (the HTTP body, `mauth admin … --json`).
    package struct RemovedKeys: Sendable, Equatable, Encodable {
        package var removed: [Key]
        package struct Key: Sendable, Equatable, Encodable {
            package var aaid: String
            package var keyID: String
        }
    }
    package struct RemovedPasskeys: Sendable, Equatable, Encodable { package var removed: [String] }
    package struct RenamedPasskey: Sendable, Equatable, Encodable {
        package var credentialID: String
        package var name: String
    }
    package struct EndedSessions: Sendable, Equatable, Encodable { package var ended: Int }

    /// Events one audit query returns at most.
    package static let maximumAuditEvents = 10_000

    /// Only an operator's credential reaches another user's data: a relying-party token with the configured operator
    /// scope (the admin scope when none is configured), or development mode. A user's own token is not enough: these
    /// endpoints are for operators, and a user already has her own ways to see and remove what is hers.
    func requireAdmin(_ principal: Principal) throws {
        guard principal.isOperator || principal.source == .development else {
            throw AuthorizationFailure.forbidden(
                "\(principal.auditName) has no operator scope; the admin endpoints need a relying-party token with it")
        }
    }

    package func user(_ username: String, principal: Principal) async throws -> UserData.Report {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        let summary = try await UserData.summary(stores, username: username, now: clock())
        // Reading a user's data is recorded too: who looked at whose data is part of the trail.
        decide(
            "admin user show", username,
            "\(summary.registrations.count) key(s), \(summary.passkeys.count) passkey(s), \(summary.sessions.count) live session(s), \(summary.targets.count) dispatch target(s) shown"
        )
        return UserData.Report(username: username, summary, providers: providers)
    }

    /// Removes the user's keys of `aaids` or `keyIDs`, or all with `all`; exactly one selection, so a forgotten
    /// parameter never widens into "every key".
    package func removeKeys(_ username: String, aaids: [String], keyIDs: [String], all: Bool, principal: Principal) async throws -> RemovedKeys {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        // Exactly one selection: a forgotten parameter must never widen into "every key".
        guard [all, !aaids.isEmpty, !keyIDs.isEmpty].filter({ $0 }).count == 1 else {
            throw ServiceFailure(.badRequest, "say which keys: aaid, keyID or all (one of them)", username: username)
        }
        if let bad = aaids.first(where: { !AAID.isValid($0) }) {
            throw ServiceFailure(.badRequest, "aaid \(bad.prefix(40)) is not an AAID (VVVV#MMMM)", username: username)
        }
        let removed = try await stores.database.unitOfWork {
            try await UserData.removeRegistrations(
                from: stores.registrations, endingSessionsIn: stores.sessions, username: username, aaids: aaids.isEmpty ? nil : aaids,
                keyIDs: keyIDs.isEmpty ? nil : keyIDs, now: clock())
        }
        guard !removed.isEmpty else { throw ServiceFailure(.notFound, "\(username) has no key that matches", username: username) }
        decide(
            "admin user remove keys", username,
            "removed " + removed.map { "\($0.aaid) key \($0.keyID.prefix(10))…" }.joined(separator: ", ") + "; their sessions ended")
        return RemovedKeys(removed: removed.map { .init(aaid: $0.aaid, keyID: $0.keyID) })
    }

    /// Names the user's passkey `id` (1…256 bytes without control characters); not found when she has none of that ID.
    package func renamePasskey(_ username: String, id: String, name: String, principal: Principal) async throws -> RenamedPasskey {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        guard PasskeyService.isValid(name: name) else {
            throw ServiceFailure(.badRequest, "the name \(PasskeyService.nameRule)", username: username)
        }
        guard try await stores.passkeys.rename(username: username, id: id, name: name) else {
            throw ServiceFailure(.notFound, "\(username) has no passkey \(id.prefix(128))", username: username)
        }
        decide("admin user rename passkey", username, "named passkey \(id.prefix(10))… \(UntrustedText.quoted(name))")
        return RenamedPasskey(credentialID: id, name: name)
    }

    /// Removes the user's passkeys of `ids`, or all with `all` (exactly one selection), and ends their sessions.
    package func removePasskeys(_ username: String, ids: [String], all: Bool, principal: Principal) async throws -> RemovedPasskeys {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        guard all != !ids.isEmpty else { throw ServiceFailure(.badRequest, "say which passkeys: id or all (one of them)", username: username) }
        let removed = try await stores.database.unitOfWork {
            try await UserData.removePasskeys(
                from: stores.passkeys, endingSessionsIn: stores.sessions, username: username, ids: all ? nil : ids, now: clock())
        }
        guard !removed.isEmpty else { throw ServiceFailure(.notFound, "\(username) has no passkey that matches", username: username) }
        decide(
            "admin user remove passkeys", username,
            "removed passkey " + removed.map { "\($0.credentialID.prefix(10))…" }.joined(separator: ", ") + "; their sessions ended")
        return RemovedPasskeys(removed: removed.map(\.credentialID))
    }

    /// Ends the user's live sessions, or only `session` (its public id) when given: not found when it is not a live
    /// session of hers (an id mistyped into another user's must not end theirs).
    package func endSessions(_ username: String, session: String? = nil, principal: Principal) async throws -> EndedSessions {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        let now = clock()
        let ended: Int
        if let session {
            guard session.utf8.count <= 128, let record = try await stores.sessions.session(id: session, now: now), record.username == username,
                try await stores.sessions.revoke(id: session, now: now)
            else {
                throw ServiceFailure(.notFound, "\(username) has no live session \(session.prefix(128))", username: username)
            }
            ended = 1
        } else {
            ended = try await stores.sessions.revokeAll(username: username, now: now)
        }
        decide("admin user end sessions", username, "ended \(ended) session(s)")
        return EndedSessions(ended: ended)
    }

    /// Removes one dispatch target of the user; not found when the user has none of that id (another user's is not hers).
    package func removeTarget(_ username: String, id: String, principal: Principal) async throws {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        guard id.utf8.count <= 128, let target = try await stores.dispatchTargets.target(id: id), target.username == username,
            try await stores.dispatchTargets.delete(id: id)
        else {
            throw ServiceFailure(.notFound, "\(username) has no dispatch target \(id.prefix(128))", username: username)
        }
        decide("admin user remove target", username, "removed dispatch target \(id)")
    }

    /// Erases the user (``UserData/eraseWithCloudUser(_:username:now:)``): what went, and whether an Auth Cloud user did.
    package func erase(_ username: String, principal: Principal) async throws -> UserData.Erased {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        let erased = try await UserData.eraseWithCloudUser(stores, username: username, now: clock())
        decide(
            "admin user erase", username,
            "erased \(erased.registrations) key(s), \(erased.passkeys) passkey(s), \(erased.sessions) session(s), \(erased.targets) dispatch target(s)"
        )
        return erased
    }

    /// The newest audit events (of `username` when given, since `since` when given), at most
    /// ``maximumAuditEvents``.
    package func audit(username: String?, since: Date?, limit: Int, principal: Principal) async throws -> [AuditEvent] {
        try requireAdmin(principal)
        if let username { try ServiceEnvironment.validate(username: username) }
        guard (1...Self.maximumAuditEvents).contains(limit) else {
            throw ServiceFailure(.badRequest, "limit must be 1...\(Self.maximumAuditEvents)", username: username)
        }
        let events = try await stores.audit.events(username: username, since: since, limit: limit)
        decide("admin audit", username, "read \(events.count) audit event(s)")
        return events
    }
}
