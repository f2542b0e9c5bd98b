import EmbeddedSQLite
import SQLKit

extension SQLDatabase {
    /// Runs `write`, an `INSERT`, `UPDATE` or `DELETE` with a condition (a capped insert, a compare-and-set, a
    /// consumption), and tells whether it changed a row: how a store learns that its conditional write happened.
    ///
    /// The embedded SQLite engine counts the changed rows itself (`SQLChangeCounting`): a `RETURNING` clause there
    /// makes SQLite collect the returned rows in a temporary table, opened and closed for each statement. PostgreSQL
    /// (and a traced database, whose wrapper does not count) returns a row per changed row instead.
    func changedAny(_ write: StoreStatement) async throws -> Bool {
        if let counting = self as? any SQLChangeCounting { return try await counting.changedRows(write) > 0 }
        return try await statement("\(write) RETURNING 1 AS changed").first() != nil
    }

    /// Consumes one row once: runs `write` (a `DELETE`, or an `UPDATE` that marks the row used) and returns the row's
    /// `columns`, or nil when no row was there to consume. On SQLite, without `RETURNING` (see ``changedAny(_:)``), it
    /// reads the row with `read` and then writes: two callers may both read it, but only the one whose write changed
    /// it gets it.
    func consumedRow(read: StoreStatement, write: StoreStatement, returning columns: String) async throws -> (any SQLRow)? {
        guard self is any SQLChangeCounting else { return try await statement("\(write) RETURNING \(unsafeRaw: columns)").first() }
        guard let row = try await statement(read).first() else { return nil }
        return try await changedAny(write) ? row : nil
    }
}
