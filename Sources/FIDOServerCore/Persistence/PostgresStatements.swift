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
/// Which statements: only those with values (the stores' queries; migrations and transaction control have none and
/// run as before), and only when every value is a text, a 64-bit integer or a null: the types our portable schema
/// uses (`TEXT`, `BIGINT`). PostgreSQL infers a prepared statement's parameter types from the statement; in our
/// statements each parameter meets a `TEXT` or `BIGINT` column, so the inferred types are the ones bound. A statement
/// with any other value, or one the server refuses to prepare, runs unprepared, as before; that is only slower.
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
            if let optional = bind as? any OptionalValue, optional.isNone {
                values.append(.null)
                continue
            }
            switch bind {
            case let text as String: values.append(PostgresData(string: text))
            case let number as Int64: values.append(PostgresData(int64: number))
            case let number as Int: values.append(PostgresData(int64: Int64(number)))
            default: return nil
            }
        }
        return values
    }
}

/// Lets a bind value say it is an absent optional (a SQL NULL).
private protocol OptionalValue { var isNone: Bool { get } }
extension Optional: OptionalValue { var isNone: Bool { self == nil } }

/// One pooled connection seen through SQLKit, running statements with values as named prepared statements
/// (``PostgresStatementCache``) and everything else through PostgresKit's own path.
struct PostgresPreparingDatabase: SQLDatabase {
    let connection: PostgresConnection
    let cache: PostgresStatementCache

    var logger: Logger { connection.logger }
    var eventLoop: any EventLoop { connection.eventLoop }
    var dialect: any SQLDialect { PostgresDialect() }
    var version: (any SQLDatabaseReportedVersion)? { nil }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        eventLoop.makeFutureWithTask { try await self.execute(sql: query, onRow) }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        let (sql, binds) = serialize(query)
        guard !binds.isEmpty, let values = PostgresStatementCache.values(binds),
            let statement = await cache.prepared(sql, on: connection)
        else {
            return try await connection.sql(queryLogLevel: nil).execute(sql: query, onRow)
        }
        try await statement.execute(values) { row in onRow(PreparedRow(row)) }.get()
    }
}

/// A result row of a prepared statement. PostgresNIO's older prepared-statement API (the one that takes a statement
/// text at run time) asks the server for binary results but labels the columns with the text format the server's
/// statement description reports; its newer, statically typed API corrects the label, this one does not. So each
/// cell is relabelled binary, which is what the bytes are, before it is decoded.
struct PreparedRow: SQLRow {
    let cells: [PostgresCell]

    init(_ row: PostgresRow) {
        cells = row.map { cell in
            var cell = cell
            cell.format = .binary
            return cell
        }
    }

    var allColumns: [String] { cells.map(\.columnName) }
    func contains(column: String) -> Bool { cells.contains { $0.columnName == column } }
    func decodeNil(column: String) throws -> Bool { try cell(column).bytes == nil }

    func decode<D: Decodable>(column: String, as: D.Type) throws -> D {
        let cell = try cell(column)
        guard let type = D.self as? any PostgresDecodable.Type else { throw PreparedRowError.unsupportedType(column, "\(D.self)") }
        return try Self.decode(cell, as: type)
    }

    private static func decode<T: PostgresDecodable, D>(_ cell: PostgresCell, as: T.Type) throws -> D {
        guard let value = try cell.decode(T.self, context: .default) as? D else {
            throw PreparedRowError.unsupportedType(cell.columnName, "\(D.self)")
        }
        return value
    }

    private func cell(_ column: String) throws -> PostgresCell {
        guard let cell = cells.first(where: { $0.columnName == column }) else { throw PreparedRowError.missingColumn(column) }
        return cell
    }
}

/// Why a prepared statement's row could not be read.
enum PreparedRowError: Error, Equatable, CustomStringConvertible {
    case missingColumn(String)
    case unsupportedType(String, String)
    var description: String {
        switch self {
        case .missingColumn(let column): return "no column \(column) in the result"
        case .unsupportedType(let column, let type): return "column \(column) cannot be read as \(type)"
        }
    }
}
