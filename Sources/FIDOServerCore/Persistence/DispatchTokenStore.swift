import Foundation
import SQLKit

public struct DispatchTokenStore: Sendable {
    let database: StoreDatabase

    public func insert(_ record: DispatchTokenRecord, retention: TimeInterval) async throws {
        try await database.run { sql in
            try await sql.statement(
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
            try await sql.statement(
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
            try await sql.statement(
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
            try await sql.statement(
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
    /// expired since the last one (the first purge of an instance reads the retained hour once). The bounds are
    /// values on SQLite and written into the text on PostgreSQL, as for every purge (`StoreDatabase.expired(before:engine:)`).
    public func clearPayloads(expiredFrom from: Date, before: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        precondition(batch > 0, "a purge clears at least one row per statement")
        let picked: StoreStatement = """
            FROM dispatch_tokens WHERE expires_at >= \(StoreDatabase.expiry(from.epochMillis, engine: database.engine)) \
            AND expires_at < \(StoreDatabase.expiry(before.epochMillis, engine: database.engine)) \
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
    private func expireUnredeemed(where condition: StoreStatement, now: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.statement(
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
