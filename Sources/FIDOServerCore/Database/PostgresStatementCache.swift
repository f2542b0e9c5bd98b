import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// Named prepared statements for PostgreSQL, one set per pooled connection.
///
/// Why: through SQLKit, PostgresNIO sends every statement as a new unnamed statement, so the server parses,
/// analyzes and plans it on every call. Under load that was about a third of PostgreSQL's own CPU (a profile of two
/// instances under `mauth load`: parse 2.4 %, analysis 4.8 %, planning 7.2 % of the whole machine). A statement our
/// stores run with values is now prepared once per connection and then only bound and executed.
///
/// Which statements: only those with values (the stores' queries; migrations, transaction control and the expiry
/// purges have none and run as before, the purges so that PostgreSQL plans each at its run:
/// `StoreDatabase.expired(before:engine:)`), and only when every value is a text, a 64-bit integer or a null: the
/// types our portable schema uses (`TEXT`, `BIGINT`). PostgreSQL infers a prepared statement's parameter types from
/// the statement; in our statements each parameter meets a `TEXT` or `BIGINT` column, so the inferred types are the
/// ones bound. A statement with any other value, or one the server refuses to prepare, runs unprepared, as before;
/// that is only slower.
/// An error while executing a prepared statement is the statement's error, never retried: a write is not run twice.
final class PostgresStatementCache: Sendable {
    private let statements = NIOLockedValueBox([PostgresConnection.ID: [String: PreparedQuery]]())
    private let unpreparable = NIOLockedValueBox(Set<String>())
    /// More distinct texts than this on one connection (no store has that many) and that connection's set starts over.
    static let limit = 256

    /// The statement `sql` prepared on `connection`, preparing it the first time; nil when it runs unprepared.
    func prepared(_ sql: String, on connection: PostgresConnection) async -> PreparedQuery? {
        if let statement = statements.withLockedValue({ $0[connection.id]?[sql] }) { return statement }
        if unpreparable.withLockedValue({ $0.contains(sql) }) { return nil }
        let statement: PreparedQuery
        do { statement = try await connection.prepare(query: sql).get() } catch {
            connection.logger.debug("statement runs unprepared", metadata: ["sql": .string(sql), "error": .string(String(describing: error))])
            // Only the server's refusal is the statement's for good; a broken connection says nothing about it.
            if case PostgresError.server = error { unpreparable.withLockedValue { _ = $0.insert(sql) } }
            return nil
        }
        let first = statements.withLockedValue { all -> Bool in
            let first = all[connection.id] == nil
            if (all[connection.id]?.count ?? 0) >= Self.limit { all[connection.id] = [:] }
            all[connection.id, default: [:]][sql] = statement
            return first
        }
        if first {
            // A closed connection's statements die with its server session; forget them with it.
            connection.closeFuture.whenComplete { [weak self] _ in self?.statements.withLockedValue { $0[connection.id] = nil } }
        }
        return statement
    }

    /// The values as PostgresNIO's bind values, or nil if one is of a type other than text, integer or null.
    static func values(_ binds: [any Encodable & Sendable]) -> [PostgresData]? {
        var values: [PostgresData] = []
        values.reserveCapacity(binds.count)
        for bind in binds {
            switch bind {
            case let text as String: values.append(PostgresData(string: text))
            case let number as Int64: values.append(PostgresData(int64: number))
            case let number as Int: values.append(PostgresData(int64: Int64(number)))
            // An absent optional of any type (a nil casts to every optional type), found as the SQLite engine finds it.
            case let optional as String? where optional == nil: values.append(.null)
            default: return nil
            }
        }
        return values
    }
}
