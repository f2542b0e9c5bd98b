import Foundation
import SQLKit

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
                try await sql.statement(
                    """
                    INSERT INTO auth_cloud_users (user_id, username, created_at, updated_at, created_by)
                    VALUES (\(bind: candidate), \(bind: username), \(bind: now.epochMillis), \(bind: now.epochMillis), \(bind: createdBy))
                    ON CONFLICT DO NOTHING RETURNING user_id
                    """
                ).first() != nil
            guard let row = try await sql.statement("SELECT * FROM auth_cloud_users WHERE username = \(bind: username)").first() else {
                throw StoreError.malformedRow("auth_cloud_users has no row for a username just inserted")
            }
            return (try Self.record(row), inserted)
        }
    }

    public func user(id: String) async throws -> AuthCloudUserRecord? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM auth_cloud_users WHERE user_id = \(bind: id)").first()
        }.map(Self.record)
    }

    public func user(username: String) async throws -> AuthCloudUserRecord? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM auth_cloud_users WHERE username = \(bind: username)").first()
        }.map(Self.record)
    }

    @discardableResult
    public func delete(id: String) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement("DELETE FROM auth_cloud_users WHERE user_id = \(bind: id) RETURNING user_id").first() != nil
        }
    }

    static func record(_ row: any SQLRow) throws -> AuthCloudUserRecord {
        AuthCloudUserRecord(
            userId: try row.decode(column: "user_id", as: String.self), username: try row.decode(column: "username", as: String.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            updatedAt: Date(epochMillis: try row.decode(column: "updated_at", as: Int64.self)),
            createdBy: try row.decode(column: "created_by", as: String?.self))
    }
}
