import Foundation
import SQLKit

/// The audit trail's rows (`audit_events`, migration 11).
public struct AuditStore: Sendable {
    let database: StoreDatabase

    /// Rows one statement inserts at most (SQLite binds at most 32,766 values; nine per row).
    static let rowsPerStatement = 500

    /// Inserts `events`, each kept until its time plus `retention`.
    public func insert(_ events: [AuditEvent], retention: TimeInterval) async throws {
        for chunk in stride(from: 0, to: events.count, by: Self.rowsPerStatement).map({ events[$0..<min($0 + Self.rowsPerStatement, events.count)] })
        {
            let rows: [SQLQueryString] = chunk.map { e in
                """
                (\(bind: e.at.epochMillis), \(bind: e.at.addingTimeInterval(retention).epochMillis), \(bind: e.requestID), \(bind: e.clientAddress),
                 \(bind: e.principal), \(bind: e.operation), \(bind: e.username), \(bind: Int64(e.statusCode)), \(bind: e.detail))
                """
            }
            try await database.run { sql in
                try await sql.raw(
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
        let byUser: SQLQueryString = username.map { "username = \(bind: $0)" } ?? "TRUE"
        let after: SQLQueryString = since.map { "at >= \(bind: $0.epochMillis)" } ?? "TRUE"
        return try await database.run { sql in
            try await sql.raw(
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
