import Foundation
import SQLKit

/// A device's dispatch target (server-api §B.8): where and how to reach it, and its two public keys.
public struct DispatchTargetRecord: Sendable, Equatable {
    public var id: String
    public var extId: String
    public var username: String
    public var name: String
    public var deviceId: String?
    public var dispatcher: String
    /// The push address (FCM registration token); nil when push is off.
    public var target: String?
    /// JWK JSON of the key that verifies the device's JWS requests.
    public var signatureKey: String
    /// JWK JSON of the key payloads are encrypted to.
    public var encryptionKey: String?
    public var createdAt: Date
    public var updatedAt: Date
}

/// Dispatch targets. The name is unique per user (a second target with a taken name is refused, §B.8's 422).
public struct DispatchTargetStore: Sendable {
    let database: StoreDatabase

    /// Inserts `record`; false when the user already has a target of that name.
    public func insert(_ record: DispatchTargetRecord) async throws -> Bool {
        try await database.run { sql in
            try await sql.raw(
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
            try await sql.raw("SELECT * FROM dispatch_targets WHERE id = \(bind: id)").first()
        }.map(Self.record)
    }

    public func targets(username: String) async throws -> [DispatchTargetRecord] {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM dispatch_targets WHERE username = \(bind: username) ORDER BY created_at, id").all()
        }.map(Self.record)
    }

    public func targets(deviceId: String) async throws -> [DispatchTargetRecord] {
        try await database.run { sql in
            try await sql.raw("SELECT * FROM dispatch_targets WHERE device_id = \(bind: deviceId) ORDER BY created_at, id").all()
        }.map(Self.record)
    }

    public enum UpdateOutcome: Sendable, Equatable { case updated, notFound, nameTaken }

    /// Changes the name and the push address. A name another target of the user has is refused.
    public func update(id: String, name: String, target: String?, now: Date) async throws -> UpdateOutcome {
        // The name check answers "taken" (422); the table's UNIQUE (username, name) is the final guard against two
        // concurrent renames to one name.
        let updated = try await database.run { sql in
            try await sql.raw(
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
            try await sql.raw("DELETE FROM dispatch_tokens WHERE dispatch_target_id = \(bind: id) AND redeemed_at IS NULL").run()
            return try await sql.raw("DELETE FROM dispatch_targets WHERE id = \(bind: id) RETURNING id").first() != nil
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

/// A dispatched token (server-api §B.6): what it redeems and how it was sent. The token itself is never stored,
/// only its SHA-256: a database reader cannot redeem what it reads.
public struct DispatchTokenRecord: Sendable, Equatable {
    public var tokenHash: String
    public var sessionId: String
    public var operation: String
    /// The JSON of the dispatch request's `getUafRequest`, answered when the token is redeemed.
    public var getUAFRequest: String
    public var username: String?
    public var dispatchTargetId: String?
    public var dispatcher: String
    public var dispatchInformation: String?
    /// The payload as dispatched (JSON), kept only when encrypted: the device's pending operations return it.
    public var payload: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var redeemedAt: Date?
    /// The device the dispatching credential was confined to (a device signature): the operation stays within it.
    public var deviceId: String? = nil
}

public struct DispatchTokenStore: Sendable {
    let database: StoreDatabase

    public func insert(_ record: DispatchTokenRecord, retention: TimeInterval) async throws {
        try await database.run { sql in
            try await sql.raw(
                """
                INSERT INTO dispatch_tokens (token_hash, session_id, operation, get_uaf_request, username, dispatch_target_id, dispatcher,
                    dispatch_information, payload, created_at, expires_at, device_id)
                VALUES (\(bind: record.tokenHash), \(bind: record.sessionId), \(bind: record.operation), \(bind: record.getUAFRequest),
                        \(bind: record.username), \(bind: record.dispatchTargetId), \(bind: record.dispatcher), \(bind: record.dispatchInformation),
                        \(bind: record.payload), \(bind: record.createdAt.epochMillis), \(bind: record.expiresAt.epochMillis), \(bind: record.deviceId))
                """
            ).run()
        }
    }

    public enum Redemption: Sendable, Equatable {
        case redeemed(DispatchTokenRecord)
        /// Known, unredeemed until now, but past its expiry (it is consumed all the same).
        case expired(DispatchTokenRecord)
        /// Unknown, already redeemed, or for another operation: one answer, so the endpoint is no token oracle.
        case refused
    }

    /// Redeems a token once across every instance: one conditional `UPDATE … RETURNING`.
    public func redeem(tokenHash: String, operation: String, now: Date) async throws -> Redemption {
        let row = try await database.run { sql in
            try await sql.raw(
                """
                UPDATE dispatch_tokens SET redeemed_at = \(bind: now.epochMillis)
                WHERE token_hash = \(bind: tokenHash) AND operation = \(bind: operation) AND redeemed_at IS NULL
                RETURNING *
                """
            ).first()
        }
        guard let row else { return .refused }
        let record = try Self.record(row)
        return record.expiresAt < now ? .expired(record) : .redeemed(record)
    }

    /// The target's tokens that are neither redeemed nor expired, oldest first.
    public func pending(dispatchTargetId: String, now: Date) async throws -> [DispatchTokenRecord] {
        try await database.run { sql in
            try await sql.raw(
                """
                SELECT * FROM dispatch_tokens WHERE dispatch_target_id = \(bind: dispatchTargetId) AND redeemed_at IS NULL
                AND expires_at > \(bind: now.epochMillis) ORDER BY created_at, session_id
                """
            ).all()
        }.map(Self.record)
    }

    /// How many tokens were dispatched to the target since `since` (through the target index; a target's rows are
    /// few, bounded by the per-target limit times their retention).
    public func count(dispatchTargetId: String, since: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.raw(
                """
                SELECT COUNT(*) AS n FROM dispatch_tokens
                WHERE dispatch_target_id = \(bind: dispatchTargetId) AND created_at > \(bind: since.epochMillis)
                """
            ).first()?.decode(column: "n", as: Int64.self)
        }.map(Int.init) ?? 0
    }

    /// Empties what tokens that expired in `from ..< before` carried (the dispatched request, the dispatch
    /// information, the encrypted payload), `batch` rows per statement; returns how many. The row itself stays for
    /// its retention, so a late redeem still answers "expired", but no caller's payload is kept past the token's
    /// expiry: on the open `dispatch/authentication` that is what an anonymous caller could make the server store.
    /// The rows are picked through the `expires_at` index, within the range, so a purge reads only the rows that
    /// expired since the last one (the first purge of an instance reads the retained hour once).
    public func clearPayloads(expiredFrom from: Date, before: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        precondition(batch > 0, "a purge clears at least one row per statement")
        let picked: SQLQueryString = """
            FROM dispatch_tokens WHERE expires_at >= \(bind: from.epochMillis) AND expires_at < \(bind: before.epochMillis) \
            AND get_uaf_request <> '' ORDER BY expires_at LIMIT \(unsafeRaw: String(batch))
            """
        return try await database.inBatches(
            """
            UPDATE dispatch_tokens SET get_uaf_request = '', dispatch_information = NULL, payload = NULL \
            WHERE \(StoreDatabase.pickedRows(engine: database.engine, picked)) RETURNING 1 AS cleared
            """, batch: batch)
    }

    /// Ends every unredeemed, unexpired token of `username` now (the user is being deleted): a redeem then answers
    /// "expired" and the next purge empties what the tokens carried. Returns how many.
    public func expireUnredeemed(username: String, now: Date) async throws -> Int {
        try await expireUnredeemed(where: "username = \(bind: username)", now: now)
    }

    /// Ends the unredeemed token of the operation `sessionId` (the relying party cancelled it), as
    /// ``expireUnredeemed(username:now:)`` does. False when there is no such token, or it was redeemed or had expired.
    public func cancel(sessionId: String, now: Date) async throws -> Bool {
        try await expireUnredeemed(where: "session_id = \(bind: sessionId)", now: now) > 0
    }

    /// Moves the expiry of the unredeemed, unexpired tokens `condition` selects to just before `now`, so that a
    /// redeem within the same millisecond already answers "expired" (a redeem compares `expiresAt < now`). Returns
    /// how many.
    private func expireUnredeemed(where condition: SQLQueryString, now: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.raw(
                """
                UPDATE dispatch_tokens SET expires_at = \(bind: now.epochMillis - 1)
                WHERE \(condition) AND redeemed_at IS NULL AND expires_at > \(bind: now.epochMillis)
                RETURNING 1 AS expired
                """
            ).all().count
        }
    }

    /// Removes tokens whose retention ended (`retention` after their expiry, so a late redeem still says "expired").
    public func purge(expiredBefore date: Date, retention: TimeInterval, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        let cutoff = date.addingTimeInterval(-retention).epochMillis
        return try await database.deleteExpired(from: "dispatch_tokens", before: cutoff, batch: batch)
    }

    static func record(_ row: any SQLRow) throws -> DispatchTokenRecord {
        DispatchTokenRecord(
            tokenHash: try row.decode(column: "token_hash", as: String.self), sessionId: try row.decode(column: "session_id", as: String.self),
            operation: try row.decode(column: "operation", as: String.self),
            getUAFRequest: try row.decode(column: "get_uaf_request", as: String.self),
            username: try row.decode(column: "username", as: String?.self),
            dispatchTargetId: try row.decode(column: "dispatch_target_id", as: String?.self),
            dispatcher: try row.decode(column: "dispatcher", as: String.self),
            dispatchInformation: try row.decode(column: "dispatch_information", as: String?.self),
            payload: try row.decode(column: "payload", as: String?.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            expiresAt: Date(epochMillis: try row.decode(column: "expires_at", as: Int64.self)),
            redeemedAt: try row.decode(column: "redeemed_at", as: Int64?.self).map(Date.init(epochMillis:)),
            deviceId: try row.decode(column: "device_id", as: String?.self))
    }
}

/// Request ids of device-signed requests, remembered per dispatch target to refuse replays (server-api §C.3).
public struct DeviceRequestStore: Sendable {
    let database: StoreDatabase

    /// Records the request id; false when it was already used (a replay).
    public func remember(dispatchTargetId: String, requestId: String, until: Date) async throws -> Bool {
        try await database.run { sql in
            try await sql.raw(
                """
                INSERT INTO device_requests (dispatch_target_id, request_id, expires_at)
                VALUES (\(bind: dispatchTargetId), \(bind: requestId), \(bind: until.epochMillis))
                ON CONFLICT DO NOTHING RETURNING request_id
                """
            ).first() != nil
        }
    }

    /// Removes request ids that expired before `date`, `batch` per statement; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "device_requests", before: date.epochMillis, batch: batch)
    }
}
