import Foundation
import SQLKit

/// The Status Service's record of one operation (server-api §B.5).
public struct StatusRecord: Codable, Sendable, Equatable {
    public enum Status: String, Codable, Sendable {
        case tokenCreated, clientRegistering, clientAuthenticating, clientDeregistering, succeeded, failed, unknown
    }
    public struct AuthenticatorReference: Codable, Sendable, Equatable {
        public var aaid: String
        public var keyId: String
    }
    public var sessionId: String
    public var status: Status
    public var operation: String
    public var username: String?
    public var uafStatusCode: Int?
    public var asmStatusCode: Int?
    public var clientErrorCode: Int?
    public var authenticators: [AuthenticatorReference]
    public var updatedAt: Date
}

/// Status records, kept for a configured time after their last change and then purged.
public struct StatusStore: Sendable {
    let database: StoreDatabase

    public func create(_ record: StatusRecord, retention: TimeInterval) async throws {
        let authenticators = try JSONCoding.string(record.authenticators)
        try await database.run { sql in
            try await sql.raw("""
                INSERT INTO status_records (session_id, status, username, operation, uaf_status_code, asm_status_code,
                    client_error_code, authenticators, updated_at, expires_at)
                VALUES (\(bind: record.sessionId), \(bind: record.status.rawValue), \(bind: record.username), \(bind: record.operation),
                        \(bind: record.uafStatusCode.map(Int64.init)), \(bind: record.asmStatusCode.map(Int64.init)),
                        \(bind: record.clientErrorCode.map(Int64.init)), \(bind: authenticators), \(bind: record.updatedAt.epochMillis),
                        \(bind: record.updatedAt.addingTimeInterval(retention).epochMillis))
                """).run()
        }
    }

    /// Moves a record to its outcome. Only a record that has not finished yet changes: a `succeeded` or `failed`
    /// record is final, so a late or replayed response cannot rewrite what the relying party already read.
    @discardableResult
    public func finish(sessionId: String, status: StatusRecord.Status, username: String?, uafStatusCode: Int, asmStatusCode: Int?,
                       clientErrorCode: Int? = nil, authenticators: [StatusRecord.AuthenticatorReference], now: Date, retention: TimeInterval) async throws -> Bool {
        let list = try JSONCoding.string(authenticators)
        return try await database.run { sql in
            try await sql.raw("""
                UPDATE status_records SET status = \(bind: status.rawValue), username = COALESCE(\(bind: username), username),
                    uaf_status_code = \(bind: Int64(uafStatusCode)), asm_status_code = \(bind: asmStatusCode.map(Int64.init)),
                    client_error_code = \(bind: clientErrorCode.map(Int64.init)),
                    authenticators = \(bind: list), updated_at = \(bind: now.epochMillis),
                    expires_at = \(bind: now.addingTimeInterval(retention).epochMillis)
                WHERE session_id = \(bind: sessionId) AND status NOT IN ('succeeded', 'failed')
                RETURNING session_id
                """).first() != nil
        }
    }

    public func record(sessionId: String, now: Date) async throws -> StatusRecord? {
        try await database.run { sql in
            try await sql.raw("""
                SELECT * FROM status_records WHERE session_id = \(bind: sessionId) AND expires_at > \(bind: now.epochMillis)
                """).first()
        }.map { row in
            guard let status = StatusRecord.Status(rawValue: try row.decode(column: "status", as: String.self)) else {
                throw StoreError.malformedRow("status_records.status")
            }
            return StatusRecord(
                sessionId: try row.decode(column: "session_id", as: String.self), status: status,
                operation: try row.decode(column: "operation", as: String.self), username: try row.decode(column: "username", as: String?.self),
                uafStatusCode: try row.decode(column: "uaf_status_code", as: Int64?.self).map(Int.init),
                asmStatusCode: try row.decode(column: "asm_status_code", as: Int64?.self).map(Int.init),
                clientErrorCode: try row.decode(column: "client_error_code", as: Int64?.self).map(Int.init),
                authenticators: try JSONCoding.value([StatusRecord.AuthenticatorReference].self, try row.decode(column: "authenticators", as: String.self)),
                updatedAt: Date(epochMillis: try row.decode(column: "updated_at", as: Int64.self)))
        }
    }

    public func purge(expiredBefore date: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.raw("DELETE FROM status_records WHERE expires_at < \(bind: date.epochMillis) RETURNING session_id").all().count
        }
    }
}
