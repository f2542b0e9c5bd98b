import Foundation
import SQLKit

/// The audit trail's rows (`audit_events`, migration 11).
public struct AuditStore: Sendable {
    let database: StoreDatabase

    /// Rows one statement inserts at most (SQLite binds at most 32,766 values, PostgreSQL 65,535; nine per row).
    static let rowsPerStatement = 256

    /// How `count` rows are split into statements: as many of ``rowsPerStatement`` as fit, then the rest in powers of
    /// two, largest first (300 rows: 256, 32, 8, 4). Why not one statement of whatever is left: each row count is a
    /// statement text of its own, and both engines keep every text prepared (SQLite's cache holds 256 and then starts
    /// over, preparing every store's statements again). Powers of two bound the texts at nine, for at most eight
    /// statements more per flush.
    static func chunkSizes(_ count: Int) -> [Int] {
        var sizes: [Int] = []
        var (left, size) = (count, rowsPerStatement)
        while left > 0 {
            if left >= size {
                sizes.append(size)
                left -= size
            } else {
                size /= 2
            }
        }
        return sizes
    }

    /// Inserts `events`, each kept until its time plus `retention`.
    public func insert(_ events: [AuditEvent], retention: TimeInterval) async throws {
        var start = events.startIndex
        for size in Self.chunkSizes(events.count) {
            let chunk = events[start..<(start + size)]
            start += size
            let rows: [StoreStatement] = chunk.map { e in
                """
                (\(bind: e.at.epochMillis), \(bind: e.at.addingTimeInterval(retention).epochMillis), \(bind: e.requestID), \(bind: e.clientAddress),
                 \(bind: e.principal), \(bind: e.operation), \(bind: e.username), \(bind: Int64(e.statusCode)), \(bind: e.detail))
                """
            }
            try await database.run { sql in
                try await sql.statement(
                    """
                    INSERT INTO audit_events (at, expires_at, request_id, client_address, principal, operation, username, status_code, detail)
                    VALUES \(rows.joined(separator: ", "))
                    """
                ).run()
            }
        }
    }

    /// The newest `limit` events, of `username` only when given, at or after `since` when given; newest first.
    public func events(username: String? = nil, since: Date? = nil, limit: Int) async throws -> [AuditEvent] {
        let byUser: StoreStatement = username.map { "username = \(bind: $0)" } ?? "TRUE"
        let after: StoreStatement = since.map { "at >= \(bind: $0.epochMillis)" } ?? "TRUE"
        return try await database.run { sql in
            try await sql.statement(
                """
                SELECT at, request_id, client_address, principal, operation, username, status_code, detail FROM audit_events
                WHERE \(byUser) AND \(after) ORDER BY at DESC LIMIT \(bind: Int64(max(0, limit)))
                """
            ).all()
        }.map { row in
            AuditEvent(
                at: Date(epochMillis: try row.decode(column: "at", as: Int64.self)),
                requestID: try row.decode(column: "request_id", as: String?.self),
                clientAddress: try row.decode(column: "client_address", as: String?.self),
                principal: try row.decode(column: "principal", as: String?.self),
                operation: try row.decode(column: "operation", as: String.self),
                username: try row.decode(column: "username", as: String?.self),
                statusCode: Int(try row.decode(column: "status_code", as: Int64.self)),
                detail: try row.decode(column: "detail", as: String.self))
        }
    }

    /// Removes events past their retention, `batch` per statement; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "audit_events", before: date.epochMillis, batch: batch)
    }
}
