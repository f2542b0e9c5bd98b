import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

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
