import Logging
import NIOCore
import SQLKit
import Tracing

/// A database handle whose every statement is a span of the current trace (`observability.tracing`), named as the
/// OpenTelemetry conventions for databases ask: `SELECT passkeys`, with the system, the operation, the table and
/// the statement's text. The text holds no value: every value is bound, so a username or a key never reaches a
/// span. Used only when tracing is on (``StoreDatabase``): off, statements are not wrapped at all.
struct TracingSQLDatabase: SQLDatabase {
    let base: any SQLDatabase
    /// `sqlite` or `postgresql` (`db.system.name`).
    let system: String

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        eventLoop.makeFutureWithTask { try await self.execute(sql: query, onRow) }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        // Statements of no request (the migrations at start, the purges, the audit writer) would each be a trace of
        // one span: only a request's statements are its spans.
        guard ServiceContext.current != nil else { return try await base.execute(sql: query, onRow) }
        let text = serialize(query).sql
        let (operation, table) = Self.summary(text)
        try await withSpan(table.map { "\(operation) \($0)" } ?? operation, ofKind: .client) { span in
            span.attributes["db.system.name"] = system
            span.attributes["db.operation.name"] = operation
            if let table { span.attributes["db.collection.name"] = table }
            span.attributes["db.query.text"] = String(text.prefix(1024))
            try await base.execute(sql: query, onRow)
        }
    }

    /// The statement's operation (its first word, upper-case) and the table it names first after `FROM`, `INTO`,
    /// `UPDATE` or `TABLE`, if any.
    static func summary(_ text: String) -> (operation: String, table: String?) {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" || $0 == "," }).prefix(64)
        let operation = words.first.map { $0.uppercased() } ?? "SQL"
        for (index, word) in words.enumerated() where ["FROM", "INTO", "UPDATE", "TABLE"].contains(word.uppercased()) {
            let following = words.dropFirst(index + 1).first { !["IF", "NOT", "EXISTS", "ONLY"].contains($0.uppercased()) }
            let name = following.map { $0.filter { $0.isLetter || $0.isNumber || $0 == "_" } } ?? ""
            if !name.isEmpty { return (operation, String(name)) }
        }
        return (operation, nil)
    }
}
