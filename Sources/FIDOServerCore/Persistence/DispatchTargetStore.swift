import Foundation
import SQLKit

/// Dispatch targets. The name is unique per user (a second target with a taken name is refused, §B.8's 422).
public struct DispatchTargetStore: Sendable {
    let database: StoreDatabase

    /// Inserts `record`; false when the user already has a target of that name.
    public func insert(_ record: DispatchTargetRecord) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                INSERT INTO dispatch_targets (id, ext_id, username, name, device_id, dispatcher, target, signature_key, encryption_key,
                    created_at, updated_at)
                VALUES (\(bind: record.id), \(bind: record.extId), \(bind: record.username), \(bind: record.name), \(bind: record.deviceId),
                        \(bind: record.dispatcher), \(bind: record.target), \(bind: record.signatureKey), \(bind: record.encryptionKey),
                        \(bind: record.createdAt.epochMillis), \(bind: record.updatedAt.epochMillis))
                ON CONFLICT DO NOTHING RETURNING id
                """
            ).first() != nil
        }
    }

    public func target(id: String) async throws -> DispatchTargetRecord? {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM dispatch_targets WHERE id = \(bind: id)").first()
        }.map(Self.record)
    }

    public func targets(username: String) async throws -> [DispatchTargetRecord] {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM dispatch_targets WHERE username = \(bind: username) ORDER BY created_at, id").all()
        }.map(Self.record)
    }

    public func targets(deviceId: String) async throws -> [DispatchTargetRecord] {
        try await database.run { sql in
            try await sql.statement("SELECT * FROM dispatch_targets WHERE device_id = \(bind: deviceId) ORDER BY created_at, id").all()
        }.map(Self.record)
    }

    public enum UpdateOutcome: Sendable, Equatable { case updated, notFound, nameTaken }

    /// Changes the name and the push address. A name another target of the user has is refused.
    public func update(id: String, name: String, target: String?, now: Date) async throws -> UpdateOutcome {
        // The name check answers "taken" (422); the table's UNIQUE (username, name) is the final guard against two
        // concurrent renames to one name.
        let updated = try await database.run { sql in
            try await sql.statement(
                """
                UPDATE dispatch_targets SET name = \(bind: name), target = \(bind: target), updated_at = \(bind: now.epochMillis)
                WHERE id = \(bind: id) AND NOT EXISTS (
                    SELECT 1 FROM dispatch_targets other WHERE other.username = dispatch_targets.username
                    AND other.name = \(bind: name) AND other.id <> \(bind: id))
                RETURNING id
                """
            ).first() != nil
        }
        if updated { return .updated }
        return try await self.target(id: id) == nil ? .notFound : .nameTaken
    }

    /// Deletes the target and its unredeemed tokens; false when it did not exist.
    public func delete(id: String) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement("DELETE FROM dispatch_tokens WHERE dispatch_target_id = \(bind: id) AND redeemed_at IS NULL").run()
            return try await sql.statement("DELETE FROM dispatch_targets WHERE id = \(bind: id) RETURNING id").first() != nil
        }
    }

    static func record(_ row: any SQLRow) throws -> DispatchTargetRecord {
        DispatchTargetRecord(
            id: try row.decode(column: "id", as: String.self), extId: try row.decode(column: "ext_id", as: String.self),
            username: try row.decode(column: "username", as: String.self), name: try row.decode(column: "name", as: String.self),
            deviceId: try row.decode(column: "device_id", as: String?.self), dispatcher: try row.decode(column: "dispatcher", as: String.self),
            target: try row.decode(column: "target", as: String?.self), signatureKey: try row.decode(column: "signature_key", as: String.self),
            encryptionKey: try row.decode(column: "encryption_key", as: String?.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            updatedAt: Date(epochMillis: try row.decode(column: "updated_at", as: Int64.self)))
    }
}
