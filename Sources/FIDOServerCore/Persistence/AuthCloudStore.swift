import Foundation
import SQLKit

/// A user of the Auth Cloud API: a stable `userId` (a UUID) for a relying party's username. The user's
/// authenticators are the ordinary registrations of that username; the row only adds the id and its dates.
public struct AuthCloudUserRecord: Sendable, Equatable {
    public var userId: String
    public var username: String
    public var createdAt: Date
    public var updatedAt: Date
    /// Who created the user: ``demoSite`` for the web demo, nil for a user of the API.
    public var createdBy: String? = nil

    /// ``createdBy`` of the users the web demo created.
    public static let demoSite = "demo-site"
}

/// An Auth Cloud access key: only its SHA-256 is stored; the key itself is shown once, when it is created.
public struct AccessKeyRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var createdAt: Date
    public var revokedAt: Date?
}

/// Auth Cloud users (username ↔ userId).
public struct AuthCloudUserStore: Sendable {
    let database: StoreDatabase

    /// The user of `username`, created (with a new userId) when there is none. Two instances creating the same user
    /// together both read back the one row that won.
    /// `createdBy` is recorded only when the user is created.
    public func findOrCreate(username: String, now: Date, createdBy: String? = nil) async throws -> (record: AuthCloudUserRecord, created: Bool) {
        let candidate = UUID().uuidString.lowercased()
        return try await database.run { sql in
            let inserted =
                try await sql.raw(
                    """
                    INSERT INTO auth_cloud_users (user_id, username, created_at, updated_at, created_by)
                    VALUES (\(bind: candidate), \(bind: username), \(bind: now.epochMillis), \(bind: now.epochMillis), \(bind: createdBy))
                    ON CONFLICT DO NOTHING RETURNING user_id
                    """
                ).first() != nil
            guard let row = try await sql.raw("SELECT * FROM auth_cloud_users WHERE username = \(bind: username)").first() else {
                throw StoreError.malformedRow("auth_cloud_users has no row for a username just inserted")
            }
            return (try Self.record(row), inserted)
        }
    }

    public func user(id: String) async throws -> AuthCloudUserRecord? {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM auth_cloud_users WHERE user_id = \(bind: id)").first()
        }.map(Self.record)
    }

    public func user(username: String) async throws -> AuthCloudUserRecord? {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM auth_cloud_users WHERE username = \(bind: username)").first()
        }.map(Self.record)
    }

    @discardableResult
    public func delete(id: String) async throws -> Bool {
        try await database.run { sql in
            try await sql.raw("DELETE FROM auth_cloud_users WHERE user_id = \(bind: id) RETURNING user_id").first() != nil
        }
    }

    private static func record(_ row: any SQLRow) throws -> AuthCloudUserRecord {
        AuthCloudUserRecord(
            userId: try row.decode(column: "user_id", as: String.self), username: try row.decode(column: "username", as: String.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            updatedAt: Date(epochMillis: try row.decode(column: "updated_at", as: Int64.self)),
            createdBy: try row.decode(column: "created_by", as: String?.self))
    }
}

/// Auth Cloud access keys (server-to-server `Authorization: Bearer`), created and revoked with `mauth admin`.
public struct AccessKeyStore: Sendable {
    let database: StoreDatabase

    /// The prefix every key starts with, so a leaked key is recognisable in logs and by secret scanners.
    public static let prefix = "mak_"

    /// Creates a key named `name` and returns it with its record. The key is 32 random bytes: far beyond guessing,
    /// which is why a fast hash (SHA-256) is enough to store it; a slow password hash would only cost every call.
    public func create(name: String, now: Date) async throws -> (key: String, record: AccessKeyRecord) {
        let key = Self.prefix + RandomToken.make(32)
        let record = AccessKeyRecord(id: RandomToken.make(9), name: name, createdAt: now, revokedAt: nil)
        try await database.run { sql in
            try await sql.raw(
                """
                INSERT INTO access_keys (id, name, key_hash, created_at)
                VALUES (\(bind: record.id), \(bind: name), \(bind: SecretHash.of(key)), \(bind: now.epochMillis))
                """
            ).run()
        }
        return (key, record)
    }

    /// The live key `key` is, or nil (unknown or revoked).
    public func validate(_ key: String) async throws -> AccessKeyRecord? {
        guard key.hasPrefix(Self.prefix), key.utf8.count <= 128 else { return nil }
        return try await database.run { sql in
            try await sql.raw("SELECT * FROM access_keys WHERE key_hash = \(bind: SecretHash.of(key)) AND revoked_at IS NULL").first()
        }.map(Self.record)
    }

    public func list() async throws -> [AccessKeyRecord] {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM access_keys ORDER BY created_at, id").all()
        }.map(Self.record)
    }

    /// Revokes a key by id; false when no live key has that id.
    public func revoke(id: String, now: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.raw(
                """
                UPDATE access_keys SET revoked_at = \(bind: now.epochMillis) WHERE id = \(bind: id) AND revoked_at IS NULL RETURNING id
                """
            ).first() != nil
        }
    }

    private static func record(_ row: any SQLRow) throws -> AccessKeyRecord {
        AccessKeyRecord(
            id: try row.decode(column: "id", as: String.self), name: try row.decode(column: "name", as: String.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(Date.init(epochMillis:)))
    }
}
