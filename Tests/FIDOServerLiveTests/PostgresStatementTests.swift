import Foundation
import PostgresNIO
import SQLKit
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Statements with values run as named prepared statements on PostgreSQL (PostgresStatementCache).
final class PostgresStatementTests: XCTestCase {
    func testTextIntegersAndNullsAreBoundAsPreparedValues() {
        let values = PostgresStatementCache.values(["text", Int64(7), 8, String?.none, Int64?.none, String?.some("x"), Bool?.none])
        XCTAssertEqual(values?.map(\.type), [.text, .int8, .int8, .null, .null, .text, .null])
        XCTAssertEqual([values?[0].string, values?[5].string], ["text", "x"])
        XCTAssertEqual(values?.map(\.int64), [nil, 7, 8, nil, nil, nil, nil])
    }

    func testAValueOfAnotherTypeLeavesTheStatementUnprepared() {
        XCTAssertNil(PostgresStatementCache.values(["text", 1.5]))
        XCTAssertNil(PostgresStatementCache.values([true]))
    }

    // MARK: Against PostgreSQL

    private var database: StoreDatabase!

    private func open() async throws -> StoreDatabase {
        // One connection, so that the session PostgreSQL reports on is the one that ran the statements.
        let database = try await StoreDatabase.open(.postgres(url: try PostgresStoreTests.postgresURL(), poolSize: 1))
        self.database = database
        try await database.run { sql in
            try await sql.raw("DROP TABLE IF EXISTS statement_test").run()
            try await sql.raw("CREATE TABLE statement_test (id TEXT PRIMARY KEY, n BIGINT NOT NULL, note TEXT)").run()
        }
        return database
    }

    override func tearDown() async throws {
        try? await database?.run { sql in try await sql.raw("DROP TABLE IF EXISTS statement_test").run() }
        try await database?.close()
    }

    func testAStatementWithValuesIsPreparedOnceAndReusedWithNewValues() async throws {
        let database = try await open()
        for index in 0..<5 {
            try await database.run { sql in
                try await sql.raw(
                    "INSERT INTO statement_test (id, n, note) VALUES (\(bind: "k\(index)"), \(bind: Int64(index)), \(bind: String?.none))"
                ).run()
            }
        }
        let read = try await database.run { sql in
            try await sql.raw("SELECT id, n, note FROM statement_test WHERE n >= \(bind: Int64(3)) ORDER BY n").all().map {
                (
                    try $0.decode(column: "id", as: String.self), try $0.decode(column: "n", as: Int64.self),
                    try $0.decode(column: "note", as: String?.self)
                )
            }
        }
        XCTAssertEqual(read.map(\.0), ["k3", "k4"])
        XCTAssertEqual(read.map(\.1), [3, 4])
        XCTAssertEqual(read.map(\.2), [nil, nil])
        // PostgreSQL's own view of this session's prepared statements: the insert is there once, not five times.
        let inserts = try await database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS n FROM pg_prepared_statements WHERE statement LIKE \(bind: "INSERT INTO statement_test%")")
                .first()?.decode(column: "n", as: Int64.self)
        }
        XCTAssertEqual(inserts, 1)
    }

    func testAFailingPreparedInsertFailsOnceAndIsNotRunAgain() async throws {
        let database = try await open()
        let insert: @Sendable (Int64) async throws -> Void = { n in
            try await database.run { sql in
                try await sql.raw("INSERT INTO statement_test (id, n, note) VALUES (\(bind: "taken"), \(bind: n), \(bind: "first"))").run()
            }
        }
        try await insert(1)
        do {
            try await insert(2)
            XCTFail("a duplicate primary key was accepted")
        } catch {
            XCTAssertTrue(String(describing: error).contains("duplicate key"), String(reflecting: error))
        }
        let rows = try await database.run { sql in try await sql.raw("SELECT n FROM statement_test WHERE id = \(bind: "taken")").all() }
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(try rows.first?.decode(column: "n", as: Int64.self), 1)
    }

    func testAStatementWithAnotherValueTypeStillRunsUnprepared() async throws {
        let database = try await open()
        try await database.run { sql in
            try await sql.raw("INSERT INTO statement_test (id, n, note) VALUES (\(bind: "a"), \(bind: Int64(1)), \(bind: "x"))").run()
        }
        // A Double is not one of the prepared value types: the statement takes PostgresKit's own path.
        let count = try await database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS c FROM statement_test WHERE n < \(bind: 1.5)").first()?.decode(column: "c", as: Int64.self)
        }
        XCTAssertEqual(count, 1)
        let prepared = try await database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS c FROM pg_prepared_statements WHERE statement LIKE \(bind: "%n < $1%")")
                .first()?.decode(column: "c", as: Int64.self)
        }
        XCTAssertEqual(prepared, 0)
    }
    func testAStatementTheServerRefusesToPrepareRunsUnpreparedEveryTime() async throws {
        let database = try await open()
        // PostgreSQL cannot infer the type of `$1` in `$1 IS NULL` when preparing ("could not determine data type");
        // unprepared, PostgresNIO names the value's type itself, so the statement still runs.
        for _ in 0..<2 {
            let value = try await database.run { sql in
                try await sql.raw("SELECT \(bind: "echo") IS NULL AS v").first()?.decode(column: "v", as: Bool.self)
            }
            XCTAssertEqual(value, false)
        }
        let prepared = try await database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS c FROM pg_prepared_statements WHERE statement LIKE \(bind: "%IS NULL AS v")")
                .first()?.decode(column: "c", as: Int64.self)
        }
        XCTAssertEqual(prepared, 0)
    }
}
