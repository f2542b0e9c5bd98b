import Primitives
import Crypto
import Foundation
import SQLKit
import UAF

/// A session opened by a successful UAF authentication.
public struct SessionRecord: Sendable, Equatable {
    /// Public identifier (the `sid` claim of the issued JWT); not a credential.
    public var id: String
    public var username: String
    public var aaid: String
    public var keyID: String
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
}

/// How bearer secrets (session tokens, dispatch tokens) are stored: their SHA-256, base64url. A copy of the
/// database then holds nothing anyone can present.
enum SecretHash {
    static func of(_ token: String) -> String { Base64URL.encode(Array(SHA256.hash(data: Data(token.utf8)))) }
}

/// Sessions. The session token (the cookie value) is a 256-bit random secret that is stored only as its SHA-256
/// hash, so a copy of the database does not let anyone sign in. A session is usable while it is neither expired
/// nor revoked; every instance sees the same rows.
public struct SessionStore: Sendable {
    let database: StoreDatabase

    /// Opens a session and returns its secret token with the record.
    public func create(username: String, aaid: String, keyID: String, now: Date, lifetime: TimeInterval) async throws -> (token: String, record: SessionRecord) {
        let (token, record) = Self.make(username: username, aaid: aaid, keyID: keyID, now: now, lifetime: lifetime)
        try await insert(token: token, record)
        return (token, record)
    }

    /// Stores a session made by ``make(username:aaid:keyID:now:lifetime:)``.
    func insert(token: String, _ record: SessionRecord) async throws {
        try await database.run { sql in
            try await sql.raw("INSERT INTO sessions (\(unsafeRaw: Self.columns)) VALUES (\(Self.values(token: token, record)))").run()
        }
    }

    /// A new session's secret token and record, not yet stored (``create(username:aaid:keyID:now:lifetime:)`` stores
    /// one; ``CeremonyStore/completeAuthentication(_:)`` stores one with the login's other writes).
    static func make(username: String, aaid: String, keyID: String, now: Date, lifetime: TimeInterval) -> (token: String, record: SessionRecord) {
        (RandomToken.make(32), SessionRecord(id: RandomToken.make(16), username: username, aaid: AAID.normalized(aaid), keyID: keyID,
                                             createdAt: now, expiresAt: now.addingTimeInterval(lifetime), revokedAt: nil))
    }

    /// The columns a new session's row fills, in the order of ``values(token:_:)``.
    static let columns = "token_hash, id, username, aaid, key_id, created_at, expires_at"

    /// A new session's values, in the order of ``columns``: the token only as its hash.
    static func values(token: String, _ record: SessionRecord) -> SQLQueryString {
        """
        \(bind: SecretHash.of(token)), \(bind: record.id), \(bind: record.username), \(bind: record.aaid), \(bind: record.keyID), \
        \(bind: record.createdAt.epochMillis), \(bind: record.expiresAt.epochMillis)
        """
    }

    /// The live session whose token is `token`, or nil (unknown, expired or revoked).
    public func session(token: String, now: Date) async throws -> SessionRecord? {
        try await live(where: "token_hash = \(bind: SecretHash.of(token))", now: now)
    }

    /// The live session with public id `id`, or nil.
    public func session(id: String, now: Date) async throws -> SessionRecord? {
        try await live(where: "id = \(bind: id)", now: now)
    }

    private func live(where condition: SQLQueryString, now: Date) async throws -> SessionRecord? {
        try await database.run { sql in
            try await sql.raw("""
                SELECT * FROM sessions WHERE \(condition) AND revoked_at IS NULL AND expires_at > \(bind: now.epochMillis)
                """).first()
        }.map(Self.record)
    }

    /// Revokes one session; returns whether a live one was revoked.
    public func revoke(id: String, now: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.raw("""
                UPDATE sessions SET revoked_at = \(bind: now.epochMillis) WHERE id = \(bind: id) AND revoked_at IS NULL RETURNING id
                """).first() != nil
        }
    }

    /// Revokes every live session of `username` (after deregistration of all keys, or by an administrator).
    public func revokeAll(username: String, now: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.raw("""
                UPDATE sessions SET revoked_at = \(bind: now.epochMillis) WHERE username = \(bind: username) AND revoked_at IS NULL RETURNING id
                """).all().count
        }
    }

    /// When `username` last opened a session (a successful authentication), among the sessions still kept.
    public func lastCreated(username: String) async throws -> Date? {
        try await database.run { sql in
            try await sql.raw("SELECT MAX(created_at) AS last FROM sessions WHERE username = \(bind: username)").first()
        }.flatMap { row in try row.decode(column: "last", as: Int64?.self).map(Date.init(epochMillis:)) }
    }

    public func purge(expiredBefore date: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.raw("DELETE FROM sessions WHERE expires_at < \(bind: date.epochMillis) RETURNING id").all().count
        }
    }

    private static func record(_ row: any SQLRow) throws -> SessionRecord {
        SessionRecord(
            id: try row.decode(column: "id", as: String.self), username: try row.decode(column: "username", as: String.self),
            aaid: try row.decode(column: "aaid", as: String.self), keyID: try row.decode(column: "key_id", as: String.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            expiresAt: Date(epochMillis: try row.decode(column: "expires_at", as: Int64.self)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(Date.init(epochMillis:)))
    }
}

/// Random identifiers and secrets: base64url of `bytes` bytes from the system CSPRNG.
enum RandomToken {
    static func make(_ bytes: Int) -> String { Base64URL.encode(SecureRandom.bytes(bytes)) }
}
