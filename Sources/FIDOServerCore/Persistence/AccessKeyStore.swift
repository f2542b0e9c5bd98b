import Foundation
import SQLKit

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
            try await sql.statement(
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
            try await sql.statement("SELECT * FROM access_keys WHERE key_hash = \(bind: SecretHash.of(key)) AND revoked_at IS NULL").first()
        }.map(Self.record)
    }

    public func list() async throws -> [AccessKeyRecord] {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM access_keys ORDER BY created_at, id").all()
        }.map(Self.record)
    }

    /// Revokes a key by id; false when no live key has that id.
    public func revoke(id: String, now: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE access_keys SET revoked_at = \(bind: now.epochMillis) WHERE id = \(bind: id) AND revoked_at IS NULL RETURNING id
                """
            ).first() != nil
        }
    }

    static func record(_ row: any SQLRow) throws -> AccessKeyRecord {
        AccessKeyRecord(
            id: try row.decode(column: "id", as: String.self), name: try row.decode(column: "name", as: String.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            revokedAt: try row.decode(column: "revoked_at", as: Int64?.self).map(Date.init(epochMillis:)))
    }
}
