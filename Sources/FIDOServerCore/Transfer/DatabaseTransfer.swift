import Crypto
import Foundation
import NIOConcurrencyHelpers
import Primitives
import SQLKit

/// Moves the durable records (``PortableKind``) between a database and an export file (``ExportFormat``), or from
/// one database to another (`mauth admin export`, `import`, `migrate`).
///
/// Every write merges: a record whose key is not in the database is inserted; one that is there with the same
/// values is counted as present and left alone (so running it again changes nothing); one that is there with other
/// values, or that would take a unique value (a username, a dispatch target's `extId`) from another record, or
/// that gives a user a second passkey user handle, is a conflict. Conflicts are reported all together, never
/// resolved: the database keeps what it has. A counter is never lowered and a key never replaced by an import.
package struct DatabaseTransfer: Sendable {
    package let database: StoreDatabase

    /// Records merged per statement (and, by `migrate`, per transaction): at most 17 values each, so a batch
    /// stays far below PostgreSQL's 65,535 and SQLite's 32,766 bound values.
    package static let batch = 500
    /// Conflicts a report lists; the rest are counted.
    package static let listedConflicts = 50

    package init(database: StoreDatabase) { self.database = database }

    /// What a merge did, by kind.
    package struct Counts: Sendable, Equatable {
        package var inserted = 0
        package var present = 0
    }

    /// Why a merge was refused: every conflict found (the first ``listedConflicts`` of them in words) and how many
    /// there were. Nothing of the refused file (or batch) is in the database.
    package struct Conflicts: Error, CustomStringConvertible {
        package let listed: [String]
        package let total: Int

        package var description: String {
            var lines = ["\(total) conflict(s) with what the database holds; nothing was written:"] + listed.map { "  " + $0 }
            if total > listed.count { lines.append("  … and \(total - listed.count) more") }
            return lines.joined(separator: "\n")
        }
    }

    // MARK: - export

    /// Writes every record (server keys only when the writer's header says so) to `writer`, by kind and by key in
    /// byte order, all read in one snapshot of the database (`StoreDatabase.readSnapshot`); returns the counts by kind.
    package func export(serverKeys: Bool, to writer: ExportWriter) async throws -> [String: Int] {
        let locked = NIOLockedValueBox(writer)
        return try await database.readSnapshot { sql in
            var counts: [String: Int] = [:]
            for kind in PortableKind.all where serverKeys || !kind.isServerKey {
                counts[kind.name] = try await forEach(kind, on: sql) { values in try locked.withLockedValue { try $0.write(kind, values) } }
            }
            return counts
        }
    }

    /// The count and SHA-256 of a kind's records as an export writes them, each row also read by the server's
    /// reader (``PortableKind``'s check): what `migrate` compares between the two databases.
    package func digest(_ kind: PortableKind) async throws -> (count: Int, sha256: String) {
        let hasher = NIOLockedValueBox(SHA256())
        let count = try await database.readSnapshot { sql in
            try await forEach(kind, on: sql) { values in
                do { try kind.check(PortableRow(values: values)) } catch {
                    throw StoreError.malformedRow("\(kind.name) \(Self.describeKey(kind, values)) cannot be read by the server: \(error)")
                }
                let line = try ExportWriter.line(kind, values)
                hasher.withLockedValue { $0.update(data: line + [0x0A]) }
            }
        }
        return (count, hasher.withLockedValue { ExportFormat.hex($0.finalize()) })
    }

    /// Hands every record of `kind` to `body`, by key in byte order; returns how many. SQLite reads it a page at a
    /// time by key (its BINARY order is byte order); PostgreSQL in one statement whose rows stream (`COLLATE "C"`
    /// sorts by bytes whatever the database's collation), so neither holds a table in memory.
    func forEach(
        _ kind: PortableKind, on sql: any SQLDatabase, _ body: @escaping @Sendable ([String: ColumnValue]) throws -> Void
    ) async throws -> Int {
        switch database.engine {
        case .sqlite:
            var count = 0
            try await Self.eachPage(kind, read: { after in try await Self.page(kind, after: after, on: sql) }) { rows in
                for values in rows { try body(values) }
                count += rows.count
            }
            return count
        case .postgres:
            let columns = kind.fields.map(\.column).joined(separator: ", ")
            let order = kind.key.map { "\($0) COLLATE \"C\"" }.joined(separator: ", ")
            let failure = NIOLockedValueBox<(any Error)?>(nil)
            let count = NIOLockedValueBox(0)
            try await sql.raw("SELECT \(unsafeRaw: columns) FROM \(unsafeRaw: kind.table) ORDER BY \(unsafeRaw: order)").run { row in
                guard failure.withLockedValue({ $0 == nil }) else { return }
                do {
                    try body(try Self.values(row, kind))
                    count.withLockedValue { $0 += 1 }
                } catch { failure.withLockedValue { $0 = error } }
            }
            if let error = failure.withLockedValue({ $0 }) { throw error }
            return count.withLockedValue { $0 }
        }
    }

    /// The ``batch`` records of `kind` after the key `after` (from the first without it), by key in the database's
    /// own order: a page of the key's index.
    static func page(_ kind: PortableKind, after: [ColumnValue]?, on sql: any SQLDatabase) async throws -> [[String: ColumnValue]] {
        let columns = kind.fields.map(\.column).joined(separator: ", ")
        let order = kind.key.joined(separator: ", ")
        var query: SQLQueryString = "SELECT \(unsafeRaw: columns) FROM \(unsafeRaw: kind.table)"
        if let after { query = query + " WHERE (\(unsafeRaw: order)) > (\(binds: after.map(bindable)))" }
        query = query + " ORDER BY \(unsafeRaw: order) LIMIT \(unsafeRaw: String(batch))"
        return try await sql.raw(query).all().map { try values($0, kind) }
    }

    /// Hands the records of `kind` to `body` ``batch`` at a time, each page read on its own (the pages a migration
    /// copies, from a source no server writes to).
    package func pages(_ kind: PortableKind, _ body: ([[String: ColumnValue]]) async throws -> Void) async throws {
        try await Self.eachPage(kind, read: { after in try await database.run { sql in try await Self.page(kind, after: after, on: sql) } }, body)
    }

    /// The keyset walk both readers share: `read` the page after the last key seen, hand it to `body`, until a page
    /// comes back short.
    private static func eachPage(
        _ kind: PortableKind, read: ([ColumnValue]?) async throws -> [[String: ColumnValue]],
        _ body: ([[String: ColumnValue]]) async throws -> Void
    ) async throws {
        var last: [ColumnValue]?
        while true {
            let rows = try await read(last)
            if rows.isEmpty { return }
            try await body(rows)
            guard rows.count == batch, let final = rows.last else { return }
            last = PortableKind.values(of: kind.key, in: final)
        }
    }

    // MARK: - import

    /// Imports the export file at `path` in one transaction: all of it, or (on any refusal) nothing.
    ///
    /// The file is read twice. First all of it is checked: the format, every value, the checksum and counts, a key
    /// or unique value given twice, one user's passkeys naming two user handles. Only then is it read again inside
    /// the transaction and merged; the second reading checks the checksum again, so a file changed in between is
    /// rolled back too. On SQLite the transaction holds the database's write lock: a server on the same file waits
    /// for it (up to its busy timeout), so import into a running server's file only small files.
    package func importFile(path: String) async throws -> [String: Counts] {
        var seen: [String: Set<[ColumnValue]>] = [:]
        var sharedValues: [String: [ColumnValue: ColumnValue]] = [:]
        let summary = try await ExportReader.read(path: path) { record in
            let kind = record.kind
            for columns in [kind.key] + kind.unique {
                let set = "\(kind.name) \(columns.joined(separator: ","))"
                guard seen[set, default: []].insert(PortableKind.values(of: columns, in: record.values)).inserted else {
                    throw ExportFileError(
                        line: record.line, "a second \(kind.name) with \(Self.describe(kind, columns, record.values)) (one file holds each once)")
                }
            }
            if let shared = kind.shared {
                let group = record.values[shared.group] ?? .null
                let value = record.values[shared.column] ?? .null
                if let known = sharedValues[kind.name, default: [:]][group], known != value {
                    throw ExportFileError(
                        line: record.line, "\(kind.name) of \(Self.quoted(group)) with a \(shared.words) other than her other \(kind.name)s'")
                }
                sharedValues[kind.name, default: [:]][group] = value
            }
        }
        let expected = summary.sha256
        return try await database.transaction { sql in
            var counts: [String: Counts] = [:]
            var pending: [String: [ExportRecord]] = [:]
            var conflicts: [String] = []
            var conflictCount = 0
            func flush(_ kind: PortableKind) async throws {
                guard let records = pending.removeValue(forKey: kind.name), !records.isEmpty else { return }
                let outcome = try await Self.merge(kind, records.map { ($0.values, $0.line) }, on: sql, insert: conflictCount == 0)
                counts[kind.name, default: Counts()].inserted += outcome.inserted
                counts[kind.name, default: Counts()].present += outcome.present
                conflictCount += outcome.conflicts.count
                conflicts.append(contentsOf: outcome.conflicts.prefix(Self.listedConflicts - min(conflicts.count, Self.listedConflicts)))
            }
            let again = try await ExportReader.read(path: path) { record in
                pending[record.kind.name, default: []].append(record)
                if pending[record.kind.name]?.count == Self.batch { try await flush(record.kind) }
            }
            for kind in PortableKind.all { try await flush(kind) }
            guard again.sha256 == expected else {
                throw ExportFileError(line: nil, "the file changed while it was imported; nothing was written")
            }
            if conflictCount > 0 { throw Conflicts(listed: conflicts, total: conflictCount) }
            return counts
        }
    }

    // MARK: - migrate

    /// Copies every record of `source` into `target` (server keys included: tokens signed before keep verifying,
    /// and what the shared secrets keyed stays the same), a page per transaction, so an interrupted run keeps its
    /// pages and a run again skips them as present. Stops at the first page with a conflict, which it reports.
    /// `progress` is told each kind's counts as it finishes.
    package static func migrate(
        from source: StoreDatabase, to target: StoreDatabase, progress: @escaping (String, Counts) -> Void = { _, _ in }
    ) async throws -> [String: Counts] {
        var counts: [String: Counts] = [:]
        for kind in PortableKind.all {
            var kindCounts = Counts()
            try await DatabaseTransfer(database: source).pages(kind) { page in
                let outcome = try await target.transaction { sql in
                    let outcome = try await merge(kind, page.map { ($0, nil) }, on: sql, insert: true)
                    if !outcome.conflicts.isEmpty {
                        throw Conflicts(listed: Array(outcome.conflicts.prefix(listedConflicts)), total: outcome.conflicts.count)
                    }
                    return outcome
                }
                kindCounts.inserted += outcome.inserted
                kindCounts.present += outcome.present
            }
            counts[kind.name] = kindCounts
            progress(kind.name, kindCounts)
        }
        return counts
    }

    /// A kind whose records differ between two databases after a migration.
    package struct Mismatch: Error, CustomStringConvertible {
        package let kind: String
        package let source: (count: Int, sha256: String)
        package let target: (count: Int, sha256: String)
        package var description: String {
            "\(kind): the source has \(source.count) record(s), the target \(target.count)"
                + (source.count == target.count ? ", with other values" : "") + "; the target is not a copy of the source"
        }
    }

    /// Checks that `target` holds exactly the records of `source`: each kind's records, written as an export writes
    /// them, have the same count and SHA-256 on both, and every target row is read by the server's reader. Returns
    /// the counts by kind.
    package static func verify(source: StoreDatabase, target: StoreDatabase) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for kind in PortableKind.all {
            let expected = try await DatabaseTransfer(database: source).digest(kind)
            let found = try await DatabaseTransfer(database: target).digest(kind)
            guard expected == found else { throw Mismatch(kind: kind.name, source: expected, target: found) }
            counts[kind.name] = found.count
        }
        return counts
    }

    // MARK: - the merge

    struct Outcome: Sendable {
        var inserted = 0
        var present = 0
        var conflicts: [String] = []
    }

    /// Merges `records` of `kind` (with the file line each came from, if any) on `sql`; inserts the new ones only
    /// when `insert` and no conflict was found among them.
    static func merge(
        _ kind: PortableKind, _ records: [([String: ColumnValue], Int?)], on sql: any SQLDatabase, insert: Bool
    ) async throws -> Outcome {
        var outcome = Outcome()
        func place(_ line: Int?) -> String { line.map { "line \($0): " } ?? "" }
        let existing = Dictionary(
            try await select(kind, matching: kind.key, records.map { $0.0 }, on: sql).map { (PortableKind.values(of: kind.key, in: $0), $0) },
            uniquingKeysWith: { first, _ in first })
        var fresh: [([String: ColumnValue], Int?)] = []
        for (values, line) in records {
            guard let stored = existing[PortableKind.values(of: kind.key, in: values)] else {
                fresh.append((values, line))
                continue
            }
            let differing = kind.fields.filter { (stored[$0.column] ?? .null) != (values[$0.column] ?? .null) }.map(\.name)
            if differing.isEmpty {
                outcome.present += 1
            } else {
                // Names only: a value may be a secret (a key, a hash) and the report goes to a terminal or a log.
                outcome.conflicts.append(
                    "\(place(line))\(kind.name) \(describeKey(kind, values)) is in the database with another \(differing.joined(separator: ", "))")
            }
        }
        for columns in kind.unique where !fresh.isEmpty {
            let holders = try await select(kind, matching: columns, fresh.map { $0.0 }, on: sql)
            for holder in holders {
                let taken = PortableKind.values(of: columns, in: holder)
                for (values, line) in fresh where PortableKind.values(of: columns, in: values) == taken {
                    outcome.conflicts.append(
                        "\(place(line))\(kind.name) \(describeKey(kind, values)): \(describe(kind, columns, values)) already belongs to "
                            + "\(kind.name) \(describeKey(kind, holder))")
                }
            }
        }
        if let shared = kind.shared, !fresh.isEmpty {
            let groups = Array(Set(fresh.map { $0.0[shared.group] ?? .null }))
            let rows = try await sql.raw(
                """
                SELECT DISTINCT \(unsafeRaw: shared.group), \(unsafeRaw: shared.column) FROM \(unsafeRaw: kind.table)
                WHERE \(unsafeRaw: shared.group) IN (\(binds: groups.map(bindable)))
                """
            ).all()
            // The rule names two of the kind's own fields (the table above); failing closed if it ever does not.
            guard let group = kind.field(column: shared.group), let column = kind.field(column: shared.column) else {
                throw StoreError.malformedRow("\(kind.name): the shared-value rule names no field")
            }
            var known: [ColumnValue: ColumnValue] = [:]
            for row in rows { known[try value(row, group)] = try value(row, column) }
            for (values, line) in fresh {
                let group = values[shared.group] ?? .null
                guard let stored = known[group], stored != (values[shared.column] ?? .null) else { continue }
                outcome.conflicts.append(
                    "\(place(line))\(kind.name) \(describeKey(kind, values)): \(quoted(group)) has \(kind.name)s with another \(shared.words) in the database"
                )
            }
        }
        guard insert, outcome.conflicts.isEmpty, !fresh.isEmpty else { return outcome }
        let columns = kind.fields.map(\.column)
        let rows: [SQLQueryString] = fresh.map { values, _ in "(\(binds: columns.map { bindable(values[$0] ?? .null) }))" }
        try await sql.raw(
            "INSERT INTO \(unsafeRaw: kind.table) (\(unsafeRaw: columns.joined(separator: ", "))) VALUES \(rows.joined(separator: ", "))"
        ).run()
        outcome.inserted = fresh.count
        return outcome
    }

    /// The stored rows of `kind` whose `columns` hold the values one of `records` holds in them.
    private static func select(
        _ kind: PortableKind, matching columns: [String], _ records: [[String: ColumnValue]], on sql: any SQLDatabase
    ) async throws -> [[String: ColumnValue]] {
        guard !records.isEmpty else { return [] }
        let all = kind.fields.map(\.column).joined(separator: ", ")
        let condition: SQLQueryString
        if columns.count == 1 {
            condition = "\(unsafeRaw: columns[0]) IN (\(binds: records.map { bindable($0[columns[0]] ?? .null) }))"
        } else {
            let tuples: [SQLQueryString] = records.map { values in "(\(binds: columns.map { bindable(values[$0] ?? .null) }))" }
            condition = "(\(unsafeRaw: columns.joined(separator: ", "))) IN (VALUES \(tuples.joined(separator: ", ")))"
        }
        return try await sql.raw("SELECT \(unsafeRaw: all) FROM \(unsafeRaw: kind.table) WHERE \(condition)").all().map { try values($0, kind) }
    }

    static func values(_ row: any SQLRow, _ kind: PortableKind) throws -> [String: ColumnValue] {
        var values: [String: ColumnValue] = [:]
        for field in kind.fields { values[field.column] = try value(row, field) }
        return values
    }

    /// The row's value of `field`, as its column holds it.
    static func value(_ row: any SQLRow, _ field: PortableField) throws -> ColumnValue {
        field.isInteger
            ? try row.decode(column: field.column, as: Int64?.self).map(ColumnValue.integer) ?? .null
            : try row.decode(column: field.column, as: String?.self).map(ColumnValue.text) ?? .null
    }

    static func bindable(_ value: ColumnValue) -> any Encodable & Sendable {
        switch value {
        case .text(let text): return text
        case .integer(let number): return number
        case .null: return String?.none
        }
    }

    /// A record's key in words: `aaid "F1D0#1001" keyId "…"`.
    static func describeKey(_ kind: PortableKind, _ values: [String: ColumnValue]) -> String {
        describe(kind, kind.key, values)
    }

    static func describe(_ kind: PortableKind, _ columns: [String], _ values: [String: ColumnValue]) -> String {
        columns.map { column in "\(kind.field(column: column)?.name ?? column) \(quoted(values[column] ?? .null))" }.joined(separator: " ")
    }

    /// A value in a report: text quoted and escaped, a number as it is.
    static func quoted(_ value: ColumnValue) -> String {
        switch value {
        case .text(let text): return UntrustedText.quoted(text)
        case .integer(let number): return String(number)
        case .null: return "(none)"
        }
    }
}
