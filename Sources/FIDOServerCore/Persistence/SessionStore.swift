import Crypto
import Foundation
import Primitives
import SQLKit
import UAF

/// Sessions. The session token (the cookie value) carries a 256-bit random secret and is stored only as its SHA-256
/// hash (after its time part, `SessionToken`), so a copy of the database does not let anyone sign in. A session is
/// usable while it is neither expired nor revoked; every instance sees the same rows.
public struct SessionStore: Sendable {
    let database: StoreDatabase

    /// Opens a session and returns its secret token with the record.
    public func create(
        username: String, credential: SessionCredential, now: Date, lifetime: TimeInterval
    ) async throws -> (token: String, record: SessionRecord) {
        let (token, record) = Self.make(username: username, credential: credential, now: now, lifetime: lifetime)
        try await insert(token: token, record)
        return (token, record)
    }

    /// Stores a session made by ``make(username:credential:now:lifetime:)``.
    func insert(token: String, _ record: SessionRecord) async throws {
        try await database.run { sql in
            try await sql.statement("INSERT INTO sessions (\(unsafeRaw: Self.columns)) VALUES (\(Self.values(token: token, record)))").run()
        }
    }

    /// A new session's secret token and record, not yet stored (``create(username:credential:now:lifetime:)`` stores
    /// one; ``CeremonyStore/completeAuthentication(_:)`` stores one with the login's other writes).
    static func make(username: String, credential: SessionCredential, now: Date, lifetime: TimeInterval) -> (token: String, record: SessionRecord) {
        (
            SessionToken.make(now: now),
            SessionRecord(
                id: OrderedToken.make(16, now: now), username: username, credential: credential,
                createdAt: now, expiresAt: now.addingTimeInterval(lifetime), revokedAt: nil)
        )
    }

    /// The columns a new session's row fills, in the order of ``values(token:_:)``.
    static let columns = "token_hash, id, username, credential_kind, aaid, credential_id, created_at, expires_at"

    /// A new session's values, in the order of ``columns``: the token only as its hash; a passkey's AAID is NULL.
    static func values(token: String, _ record: SessionRecord) -> StoreStatement {
        """
        \(bind: SessionToken.storedKey(token)), \(bind: record.id), \(bind: record.username), \(bind: record.credential.kind.rawValue), \
        \(bind: record.credential.aaid), \(bind: record.credential.id), \(bind: record.createdAt.epochMillis), \(bind: record.expiresAt.epochMillis)
        """
    }

    /// The live session whose token is `token`, or nil (unknown, expired or revoked).
    public func session(token: String, now: Date) async throws -> SessionRecord? {
        try await live(where: "token_hash = \(bind: SessionToken.storedKey(token))", now: now)
    }

    /// The live session with public id `id`, or nil.
    public func session(id: String, now: Date) async throws -> SessionRecord? {
        try await live(where: "id = \(bind: id)", now: now)
    }

    /// The live sessions of `username`, oldest first (for an operator: `mauth admin user show`).
    public func live(username: String, now: Date) async throws -> [SessionRecord] {
        try await database.run { sql in
            try await sql.statement(
                """
                SELECT * FROM sessions WHERE username = \(bind: username) AND revoked_at IS NULL AND expires_at > \(bind: now.epochMillis)
                ORDER BY created_at, id
                """
            ).all()
        }.map(Self.record)
    }

    private func live(where condition: StoreStatement, now: Date) async throws -> SessionRecord? {
        try await database.run { sql in
            try await sql.statement(
                """
                SELECT * FROM sessions WHERE \(condition) AND revoked_at IS NULL AND expires_at > \(bind: now.epochMillis)
                """
            ).first()
        }.map(Self.record)
    }

    /// Revokes one session; returns whether a live one was revoked.
    public func revoke(id: String, now: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE sessions SET revoked_at = \(bind: now.epochMillis) WHERE id = \(bind: id) AND revoked_at IS NULL RETURNING id
                """
            ).first() != nil
        }
    }

    /// Revokes the live sessions of `username` that were opened with one of the credentials of `kind` whose ids are
    /// `ids` (the UAF keys or passkeys being removed): a session opened with a stolen key must end when the key is
    /// removed, not only when the user's last key goes. UAF keys are matched by KeyID within the user, so a KeyID that
    /// two of her authenticators share (which only a broken or hostile authenticator makes) revokes both: the safe
    /// side. Returns how many.
    public func revoke(username: String, _ kind: SessionCredential.Kind, ids: [String], now: Date) async throws -> Int {
        guard !ids.isEmpty else { return 0 }
        return try await database.run { sql in
            try await sql.statement(
                """
                UPDATE sessions SET revoked_at = \(bind: now.epochMillis)
                WHERE username = \(bind: username) AND credential_kind = \(bind: kind.rawValue) AND credential_id IN (\(binds: ids))
                AND revoked_at IS NULL RETURNING id
                """
            ).all().count
        }
    }

    /// Revokes every live session of `username` (after deregistration of all keys, or by an administrator).
    public func revokeAll(username: String, now: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE sessions SET revoked_at = \(bind: now.epochMillis) WHERE username = \(bind: username) AND revoked_at IS NULL RETURNING id
                """
            ).all().count
        }
    }

    /// When `username` last opened a session (a successful authentication), among the sessions still kept.
    public func lastCreated(username: String) async throws -> Date? {
        try await database.run { sql in
            try await sql.statement("SELECT MAX(created_at) AS last FROM sessions WHERE username = \(bind: username)").first()
        }.flatMap { row in try row.decode(column: "last", as: Int64?.self).map(Date.init(epochMillis:)) }
    }

    /// Removes sessions that expired before `date`, `batch` per statement; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "sessions", before: date.epochMillis, batch: batch)
    }

    private static func record(_ row: any SQLRow) throws -> SessionRecord {
        let kind = try row.decode(column: "credential_kind", as: String.self)
        guard
            let credential = SessionCredential(
                kind: kind, aaid: try row.decode(column: "aaid", as: String?.self),
                id: try row.decode(column: "credential_id", as: String.self))
        else {
            throw StoreError.malformedRow("a session whose credential (\(kind)) this version does not know")
        }
        return SessionRecord(
            id: try row.decode(column: "id", as: String.self), username: try row.decode(column: "username", as: String.self),
            credential: credential,
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            expiresAt: Date(epochMillis: try row.decode(column: "expires_at", as: Int64.self)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(Date.init(epochMillis:)))
    }
}
