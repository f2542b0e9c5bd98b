import Foundation
import UAF

/// The operator's endpoints over HTTP (`/nevisfido/admin/…`): one user's data (show, remove keys, end sessions, remove
/// a dispatch target, erase) and the audit trail. The same rules as `mauth admin user` (``UserData``); every call is a
/// decision the audit trail records with the admin who made it.
package struct AdminService: Sendable {
    let environment: ServiceEnvironment
    private var stores: Stores { environment.stores }

    /// Events one audit query returns at most.
    package static let maximumAuditEvents = 1_000

    /// Only an operator's credential reaches another user's data: a relying-party token with the configured operator
    /// scope (the admin scope when none is configured), or development mode. A user's own token is not enough: these
    /// endpoints are for operators, and a user already has her own ways to see and remove what is hers.
    func requireAdmin(_ principal: Principal) throws {
        guard principal.isOperator || principal.source == .development else {
            throw AuthorizationFailure.forbidden("\(principal.auditName) has no operator scope; the admin endpoints need a relying-party token with it")
        }
    }

    package func user(_ username: String, principal: Principal) async throws -> UserData.Report {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        let summary = try await UserData.summary(stores, username: username, now: environment.clock())
        environment.decide("admin user show", username, 200, "\(summary.registrations.count) key(s), \(summary.passkeys.count) passkey(s), \(summary.sessions.count) live session(s), \(summary.targets.count) dispatch target(s) shown")
        return UserData.Report(username: username, summary)
    }

    /// Removes the user's keys of `aaids` or `keyIDs`, or all with `all`; exactly one selection, so a forgotten
    /// parameter never widens into "every key".
    package func removeKeys(_ username: String, aaids: [String], keyIDs: [String], all: Bool, principal: Principal) async throws -> [RegistrationRecord] {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        guard [all, !aaids.isEmpty, !keyIDs.isEmpty].filter({ $0 }).count == 1 else {
            throw ServiceFailure(.badRequest, "say which keys: aaid, keyID or all=true (one of them)")
        }
        if let bad = aaids.first(where: { !AAID.isValid($0) }) { throw ServiceFailure(.badRequest, "aaid \(bad.prefix(40)) is not an AAID (VVVV#MMMM)") }
        let removed = try await stores.database.unitOfWork {
            try await UserData.removeRegistrations(stores, username: username, aaids: aaids.isEmpty ? nil : aaids,
                                                   keyIDs: keyIDs.isEmpty ? nil : keyIDs, now: environment.clock())
        }
        guard !removed.isEmpty else { throw ServiceFailure(.notFound, "\(username) has no key that matches") }
        environment.decide("admin user remove keys", username, 200,
                           "removed " + removed.map { "\($0.aaid) key \($0.keyID.prefix(10))…" }.joined(separator: ", ") + "; their sessions ended")
        return removed
    }

    /// Removes the user's passkeys of `ids`, or all with `all` (exactly one selection), and ends their sessions.
    package func removePasskeys(_ username: String, ids: [String], all: Bool, principal: Principal) async throws -> [PasskeyRecord] {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        guard all != !ids.isEmpty else { throw ServiceFailure(.badRequest, "say which passkeys: id or all=true (one of them)") }
        let removed = try await stores.database.unitOfWork {
            try await UserData.removePasskeys(stores, username: username, ids: all ? nil : ids, now: environment.clock())
        }
        guard !removed.isEmpty else { throw ServiceFailure(.notFound, "\(username) has no passkey that matches") }
        environment.decide("admin user remove passkeys", username, 200,
                           "removed passkey " + removed.map { "\($0.credentialID.prefix(10))…" }.joined(separator: ", ") + "; their sessions ended")
        return removed
    }

    package func endSessions(_ username: String, principal: Principal) async throws -> Int {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        let ended = try await stores.sessions.revokeAll(username: username, now: environment.clock())
        environment.decide("admin user end sessions", username, 200, "ended \(ended) session(s)")
        return ended
    }

    /// Removes one dispatch target of the user; not found when the user has none of that id (another user's is not hers).
    package func removeTarget(_ username: String, id: String, principal: Principal) async throws {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        guard id.utf8.count <= 128, let target = try await stores.dispatchTargets.target(id: id), target.username == username,
              try await stores.dispatchTargets.delete(id: id) else {
            throw ServiceFailure(.notFound, "\(username) has no dispatch target of that id")
        }
        environment.decide("admin user remove target", username, 200, "removed dispatch target \(id)")
    }

    package func erase(_ username: String, principal: Principal) async throws -> UserData.Erased {
        try requireAdmin(principal)
        try ServiceEnvironment.validate(username: username)
        let erased = try await UserData.eraseWithCloudUser(stores, username: username, now: environment.clock()).erased
        environment.decide("admin user erase", username, 200,
                           "erased \(erased.registrations) key(s), \(erased.passkeys) passkey(s), \(erased.sessions) session(s), \(erased.targets) dispatch target(s)")
        return erased
    }

    /// The newest audit events (of `username` when given, since `since` when given), at most
    /// ``maximumAuditEvents``.
    package func audit(username: String?, since: Date?, limit: Int, principal: Principal) async throws -> [AuditEvent] {
        try requireAdmin(principal)
        if let username { try ServiceEnvironment.validate(username: username) }
        guard (1...Self.maximumAuditEvents).contains(limit) else { throw ServiceFailure(.badRequest, "limit must be 1...\(Self.maximumAuditEvents)") }
        let events = try await stores.audit.events(username: username, since: since, limit: limit)
        environment.decide("admin audit", username, 200, "read \(events.count) audit event(s)")
        return events
    }
}
