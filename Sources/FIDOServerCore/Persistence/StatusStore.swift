import Foundation
import SQLKit

/// Status records, kept for a configured time after their last change and then purged.
public struct StatusStore: Sendable {
    let database: StoreDatabase

    public func create(_ record: StatusRecord, retention: TimeInterval) async throws {
        let values = try Self.values(record, retention: retention)
        try await database.run { sql in
            try await sql.statement("INSERT INTO status_records (\(unsafeRaw: Self.columns)) VALUES (\(values))").run()
        }
    }

    /// The columns a new record's row fills, in the order of ``values(_:retention:)``.
    static let columns = """
        session_id, status, username, operation, uaf_status_code, asm_status_code, client_error_code, authenticators, updated_at, \
        expires_at, token_information
        """

    /// A new record's values, in the order of ``columns``; it is kept for `retention` after `updatedAt`.
    static func values(_ record: StatusRecord, retention: TimeInterval) throws -> StoreStatement {
        let authenticators = try JSONCoding.string(record.authenticators)
        let tokenInformation = try record.tokenInformation.map(JSONCoding.string)
        return """
            \(bind: record.sessionId), \(bind: record.status.rawValue), \(bind: record.username), \(bind: record.operation), \
            \(bind: record.uafStatusCode.map(Int64.init)), \(bind: record.asmStatusCode.map(Int64.init)), \
            \(bind: record.clientErrorCode.map(Int64.init)), \(bind: authenticators), \(bind: record.updatedAt.epochMillis), \
            \(bind: record.updatedAt.addingTimeInterval(retention).epochMillis), \(bind: tokenInformation)
            """
    }

    /// A dispatched operation's token was redeemed (or found expired): the record moves from `tokenCreated` to
    /// `status` and notes the token's result. Only a `tokenCreated` record changes, so it happens once.
    @discardableResult
    public func tokenRedeemed(
        sessionId: String, status: StatusRecord.Status, result: StatusRecord.TokenInformation.TokenResult,
        now: Date, retention: TimeInterval
    ) async throws -> Bool {
        guard var record = try await record(sessionId: sessionId, now: now), record.status == .tokenCreated else { return false }
        record.tokenInformation = record.tokenInformation ?? .init()
        record.tokenInformation?.tokenResult = result
        let tokenInformation = try record.tokenInformation.map(JSONCoding.string)
        return try await database.run { sql in
            try await sql.statement(
                """
                UPDATE status_records SET status = \(bind: status.rawValue), token_information = \(bind: tokenInformation),
                    updated_at = \(bind: now.epochMillis), expires_at = \(bind: now.addingTimeInterval(retention).epochMillis)
                WHERE session_id = \(bind: sessionId) AND status = 'tokenCreated'
                RETURNING session_id
                """
            ).first() != nil
        }
    }

    /// Marks an operation that has not ended `cancelled` (final, like `succeeded` and `failed`); false when it had
    /// ended or is unknown.
    public func cancel(sessionId: String, now: Date, retention: TimeInterval) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE status_records SET status = 'cancelled', updated_at = \(bind: now.epochMillis),
                    expires_at = \(bind: now.addingTimeInterval(retention).epochMillis)
                WHERE session_id = \(bind: sessionId) AND status IN ('tokenCreated', 'clientRegistering', 'clientAuthenticating')
                RETURNING session_id
                """
            ).first() != nil
        }
    }

    /// Moves a record to its outcome. Only a record that has not finished yet changes: a `succeeded` or `failed`
    /// record is final, so a late or replayed response cannot rewrite what the relying party already read.
    @discardableResult
    public func finish(
        sessionId: String, status: StatusRecord.Status, username: String?, uafStatusCode: Int, asmStatusCode: Int?,
        clientErrorCode: Int? = nil, authenticators: [StatusRecord.AuthenticatorReference], now: Date, retention: TimeInterval
    ) async throws -> Bool {
        try await finish(
            Outcome(
                sessionId: sessionId, status: status, username: username, uafStatusCode: uafStatusCode, asmStatusCode: asmStatusCode,
                clientErrorCode: clientErrorCode, authenticators: authenticators, now: now, retention: retention))
    }

    /// Moves a record to `outcome` (see ``finish(sessionId:status:username:uafStatusCode:asmStatusCode:clientErrorCode:authenticators:now:retention:)``).
    @discardableResult
    func finish(_ outcome: Outcome) async throws -> Bool {
        let update = try outcome.update()
        return try await database.run { sql in try await sql.changedAny(update) }
    }

    /// What an operation ended with, as the record will show it.
    package struct Outcome: Sendable {
        var sessionId: String
        var status: StatusRecord.Status
        /// Replaces the record's username when given.
        var username: String?
        var uafStatusCode: Int
        var asmStatusCode: Int?
        var clientErrorCode: Int?
        var authenticators: [StatusRecord.AuthenticatorReference]
        var now: Date
        var retention: TimeInterval

        /// The update that records this outcome, without its `RETURNING`. Only a record that has not finished yet
        /// changes: a `succeeded` or `failed` record is final, so a late or replayed response cannot rewrite what
        /// the relying party already read.
        func update() throws -> StoreStatement {
            let list = try JSONCoding.string(authenticators)
            return """
                UPDATE status_records SET status = \(bind: status.rawValue), username = COALESCE(\(bind: username), username), \
                uaf_status_code = \(bind: Int64(uafStatusCode)), asm_status_code = \(bind: asmStatusCode.map(Int64.init)), \
                client_error_code = \(bind: clientErrorCode.map(Int64.init)), authenticators = \(bind: list), \
                updated_at = \(bind: now.epochMillis), expires_at = \(bind: now.addingTimeInterval(retention).epochMillis) \
                WHERE session_id = \(bind: sessionId) AND status NOT IN ('succeeded', 'failed', 'cancelled')
                """
        }
    }

    public func record(sessionId: String, now: Date) async throws -> StatusRecord? {
        try await database.run { sql in
            try await sql.statement(
                """
                SELECT * FROM status_records WHERE session_id = \(bind: sessionId) AND expires_at > \(bind: now.epochMillis)
                """
            ).first()
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
                authenticators: try JSONCoding.value(
                    [StatusRecord.AuthenticatorReference].self, try row.decode(column: "authenticators", as: String.self)),
                updatedAt: Date(epochMillis: try row.decode(column: "updated_at", as: Int64.self)),
                tokenInformation: try row.decode(column: "token_information", as: String?.self).map {
                    try JSONCoding.value(StatusRecord.TokenInformation.self, $0)
                })
        }
    }

    /// Removes status records whose retention ended before `date`, `batch` per statement; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "status_records", before: date.epochMillis, batch: batch)
    }
}
