import Logging
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import XCTest

@testable import FIDOServerCore

/// The stores' statements (``StoreStatement``) against SQLKit's `SQLQueryString`, the independent implementation: the
/// same literal written both ways serializes to the same text and the same values in order, with SQLite's `?` and
/// with numbered placeholders (PostgreSQL's `$n`).
final class StoreStatementTests: XCTestCase {
    /// A database that only serializes: SQLite's dialect, or one that numbers its placeholders as PostgreSQL does.
    private struct Serializing: SQLDatabase {
        var dialect: any SQLDialect
        var logger: Logger { Logger(label: "test") }
        var eventLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }
        func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
            eventLoop.makeSucceededVoidFuture()
        }
    }

    private struct Numbered: SQLDialect {
        var name: String { "numbered" }
        var identifierQuote: any SQLExpression { SQLRaw("\"") }
        var supportsAutoIncrement: Bool { false }
        var autoIncrementClause: any SQLExpression { SQLRaw("") }
        func bindPlaceholder(at position: Int) -> any SQLExpression { SQLRaw("$\(position)") }
        func literalBoolean(_ value: Bool) -> any SQLExpression { SQLRaw(value ? "TRUE" : "FALSE") }
    }

    private func serialized(_ expression: any SQLExpression, _ dialect: any SQLDialect) -> (String, [String]) {
        var serializer = SQLSerializer(database: Serializing(dialect: dialect))
        expression.serialize(to: &serializer)
        return (serializer.sql, serializer.binds.map { String(describing: $0) })
    }

    private func assertSame(_ kit: SQLQueryString, _ ours: StoreStatement, file: StaticString = #filePath, line: UInt = #line) {
        for dialect in [SQLiteDialect() as any SQLDialect, Numbered()] {
            let (kitText, kitValues) = serialized(kit, dialect)
            let (text, values) = serialized(ours, dialect)
            XCTAssertEqual(text, kitText, "\(dialect.name)", file: file, line: line)
            XCTAssertEqual(values, kitValues, "\(dialect.name)", file: file, line: line)
        }
    }

    func testValuesTextAndNestedStatementsSerializeAsSQLKitSerializesThem() {
        let username = "zoë"
        let limit = Int64(4)
        let kitCap: SQLQueryString = "(SELECT COUNT(*) FROM t WHERE u = \(bind: username) AND +e >= \(bind: limit)) < \(bind: 3)"
        let cap: StoreStatement = "(SELECT COUNT(*) FROM t WHERE u = \(bind: username) AND +e >= \(bind: limit)) < \(bind: 3)"
        assertSame(kitCap, cap)
        assertSame(
            "INSERT INTO t (\(unsafeRaw: "a, b, c")) SELECT \(bind: "x"), \(bind: String?.none), \(bind: Int64?.some(9)) WHERE \(kitCap)",
            "INSERT INTO t (\(unsafeRaw: "a, b, c")) SELECT \(bind: "x"), \(bind: String?.none), \(bind: Int64?.some(9)) WHERE \(cap)")
        // A value first and last, values side by side, a list of values, text that is not ASCII between them.
        assertSame(
            "\(bind: 1)\(bind: 2) IN (\(binds: ["é", "🔑", Int64(3)])) -- ünïcode \(bind: "end")",
            "\(bind: 1)\(bind: 2) IN (\(binds: ["é", "🔑", Int64(3)])) -- ünïcode \(bind: "end")")
        assertSame("(\(binds: []))", "(\(binds: []))")
        assertSame("", "")
        assertSame("SELECT 1", "SELECT 1")
        // Nested twice, the inner statement starting and ending with a value.
        let kitInner: SQLQueryString = "\(bind: "i1") = \(bind: "i2")"
        let inner: StoreStatement = "\(bind: "i1") = \(bind: "i2")"
        assertSame(
            "A \(bind: "o1") (\("B \(kitInner) \(bind: "m")" as SQLQueryString)) \(bind: "o2")",
            "A \(bind: "o1") (\("B \(inner) \(bind: "m")" as StoreStatement)) \(bind: "o2")")
    }

    func testJoinedAndAddedStatementsKeepTheirValuesInOrder() {
        let kitRows: [SQLQueryString] = (0..<3).map { "(\(bind: "r\($0)"), \(bind: Int64($0)))" }
        let rows: [StoreStatement] = (0..<3).map { "(\(bind: "r\($0)"), \(bind: Int64($0)))" }
        assertSame("VALUES \(kitRows.joined(separator: ", "))", "VALUES \(rows.joined(separator: ", "))")
        assertSame(
            ("DELETE FROM t WHERE u = \(bind: "a")" as SQLQueryString) + " RETURNING *",
            ("DELETE FROM t WHERE u = \(bind: "a")" as StoreStatement) + " RETURNING *")
        var grown: StoreStatement = "SELECT \(bind: 1)"
        grown += " WHERE x = \(bind: 2)"
        assertSame("SELECT \(bind: 1) WHERE x = \(bind: 2)", grown)
    }
}
