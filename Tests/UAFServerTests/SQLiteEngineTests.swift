import Foundation
import SQLKit
import SQLiteKit
import SQLiteNIO
import XCTest
@testable import UAFServer

/// The embedded SQLite engine: statements kept prepared, run inline, and commits grouped. What a caller of
/// `StoreDatabase.run` must be able to rely on is checked from a second, independent connection (SQLiteNIO's), which
/// sees only what is committed to the file.
final class SQLiteEngineTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("engine.sqlite").path }

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-engine-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func openWithTable() async throws -> StoreDatabase {
        let database = try await StoreDatabase.open(.sqlite(path: path))
        try await database.run { sql in try await sql.raw("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)").run() }
        return database
    }

    /// Rows another connection sees in `items`.
    private func committedCount() async throws -> Int {
        let other = try await SQLiteConnection.open(storage: .file(path: path))
        defer { Task { try? await other.close() } }
        let rows = try await other.query("SELECT COUNT(*) AS n FROM items")
        return rows.first?.column("n")?.integer ?? -1
    }

    func testAWriteIsCommittedWhenRunReturns() async throws {
        let database = try await openWithTable()
        try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES (\(bind: "a"), \(bind: 1))").run() }
        let count = try await committedCount()
        XCTAssertEqual(count, 1, "run returned before its write was committed")
        try await database.close()
    }

    func testEveryConcurrentWriterIsCommittedWhenItsRunReturns() async throws {
        let database = try await openWithTable()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<300 {
                group.addTask {
                    try await database.run { sql in
                        try await sql.raw("INSERT INTO items (id, n) VALUES (\(bind: "item-\(index)"), \(bind: index))").run()
                    }
                }
            }
            try await group.waitForAll()
        }
        let count = try await committedCount()
        XCTAssertEqual(count, 300)
        try await database.close()
    }

    func testAFailingStatementFailsOnlyItsCaller() async throws {
        let database = try await openWithTable()
        try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES ('taken', 0)").run() }
        async let duplicate: Void = database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES ('taken', 1)").run() }
        async let fresh: Void = database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES ('fresh', 2)").run() }
        do {
            try await duplicate
            XCTFail("a duplicate primary key was accepted")
        } catch let error as SQLiteEngineError {
            XCTAssertTrue(error.description.contains("UNIQUE"), error.description)
        }
        try await fresh
        let count = try await committedCount()
        XCTAssertEqual(count, 2, "the other writer's row was lost with the failing statement")
        try await database.close()
    }

    func testAReadOnlyRunLeavesNoWriteLockBehind() async throws {
        let database = try await openWithTable()
        let rows = try await database.run { sql in try await sql.raw("SELECT COUNT(*) AS n FROM items").all() }
        XCTAssertEqual(rows.count, 1)
        // Another process (an administrative command) must be able to write while the server idles.
        let other = try await SQLiteConnection.open(storage: .file(path: path))
        _ = try await other.query("PRAGMA busy_timeout = 2000")
        _ = try await other.query("INSERT INTO items (id, n) VALUES ('admin', 9)")
        try await other.close()
        let seen = try await database.run { sql in try await sql.raw("SELECT n FROM items WHERE id = 'admin'").first() }
        XCTAssertEqual(try seen?.decode(column: "n", as: Int.self), 9)
        try await database.close()
    }

    func testAStatementTextIsPreparedOnceAndReusedWithNewValues() async throws {
        let database = try await openWithTable()
        for index in 0..<50 {
            try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES (\(bind: "k\(index)"), \(bind: index))").run() }
        }
        let sum = try await database.run { sql in try await sql.raw("SELECT SUM(n) AS s FROM items").first()?.decode(column: "s", as: Int.self) }
        XCTAssertEqual(sum, (0..<50).reduce(0, +))
        let values = try await database.run { sql in
            try await sql.raw("SELECT id, n FROM items WHERE n >= \(bind: 48) ORDER BY n").all().map {
                (try $0.decode(column: "id", as: String.self), try $0.decode(column: "n", as: Int.self))
            }
        }
        XCTAssertEqual(values.map(\.0), ["k48", "k49"])
        XCTAssertEqual(values.map(\.1), [48, 49])
        try await database.close()
    }

    func testAMissingColumnIsATypedError() async throws {
        let database = try await openWithTable()
        try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES ('a', 1)").run() }
        let row = try await database.run { sql in try await sql.raw("SELECT id FROM items").first() }
        XCTAssertThrowsError(try row?.decode(column: "n", as: Int.self)) { error in
            XCTAssertTrue(error is SQLiteEngineError, "\(error)")
        }
        try await database.close()
    }
    // MARK: One unit of work per request

    private static func insert(_ database: StoreDatabase, _ id: String) async throws {
        try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES (\(bind: id), \(bind: 1))").run() }
    }

    func testRunsInsideAUnitOfWorkDoNotEachWaitForACommit() async throws {
        let database = try await openWithTable()
        try await database.unitOfWork {
            try await Self.insert(database, "a")
            // Nothing else runs in this test, so nobody asked for a commit yet: the row is not in the file.
            let seenInside = try await committedCount()
            XCTAssertEqual(seenInside, 0, "a run inside the unit waited for its own commit")
            try await Self.insert(database, "b")
        }
        let seenAfter = try await committedCount()
        XCTAssertEqual(seenAfter, 2, "the unit returned before its writes were committed")
        try await database.close()
    }

    func testAFailingUnitOfWorkStillCommitsWhatItWroteAndRethrowsItsOwnError() async throws {
        struct Refused: Error {}
        let database = try await openWithTable()
        do {
            try await database.unitOfWork {
                try await Self.insert(database, "status-failed")
                throw Refused()
            }
            XCTFail("the body's error was swallowed")
        } catch is Refused {}
        let count = try await committedCount()
        XCTAssertEqual(count, 1, "what a failing request wrote (its failed status, say) was not committed when it answered")
        try await database.close()
    }

    func testARunThatOutlivesItsUnitWaitsForItsOwnCommit() async throws {
        let database = try await openWithTable()
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let late = try await database.unitOfWork {
            // A task the request starts inherits the unit (a task-local), but runs after the unit's one wait.
            Task {
                for await _ in gate { break }
                try await Self.insert(database, "late")
            }
        }
        open.yield()
        try await late.value
        let count = try await committedCount()
        XCTAssertEqual(count, 1, "a run in an ended unit returned before its write was committed")
        try await database.close()
    }

    func testUnitsOfTwoDatabasesDoNotMix() async throws {
        let database = try await openWithTable()
        let otherPath = directory.appendingPathComponent("other.sqlite").path
        let other = try await StoreDatabase.open(.sqlite(path: otherPath))
        try await other.run { sql in try await sql.raw("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)").run() }
        try await database.unitOfWork {
            // The other database's run is not part of this unit: it waits for its own commit.
            try await Self.insert(other, "x")
            let connection = try await SQLiteConnection.open(storage: .file(path: otherPath))
            let rows = try await connection.query("SELECT COUNT(*) AS n FROM items")
            try await connection.close()
            XCTAssertEqual(rows.first?.column("n")?.integer, 1, "a run on another database joined this database's unit")
        }
        try await other.close()
        try await database.close()
    }
    func testTheLogIsCheckpointedEveryTenThousandPagesNotEveryThousand() async throws {
        let database = try await openWithTable()
        let pages = try await database.run { sql in
            try await sql.raw("PRAGMA wal_autocheckpoint").first()?.decode(column: "wal_autocheckpoint", as: Int.self)
        }
        XCTAssertEqual(pages, StoreDatabase.checkpointPages)
        XCTAssertEqual(pages, 10_000)
        try await database.close()
    }
}

/// The engine's own conversions of bound values and column values must give what sqlite-kit's SQLiteDataEncoder and
/// SQLiteDataDecoder give (the independent reference); anything the fast path does not take still goes to them.
final class SQLiteValueConversionTests: XCTestCase {
    func testBoundValuesBecomeWhatTheEncoderMakes() throws {
        let encoder = SQLiteDataEncoder()
        let values: [any Encodable & Sendable] = ["text", "", Int64(-5), Int64.max, 42, String?.some("x"), String?.none, Int64?.none,
                                                 Int64?.some(7), 2.5, true]
        for value in values {
            XCTAssertEqual(try SQLiteEngineDatabase.data(value), try encoder.encode(value), "\(value)")
        }
    }

    private func row(_ value: SQLiteData) -> SQLiteResultRow {
        SQLiteResultRow(columns: SQLiteResultColumns(names: ["c"]), values: [value])
    }

    private func assertSame<D: Decodable & Equatable>(_ type: D.Type, _ value: SQLiteData, file: StaticString = #filePath, line: UInt = #line) {
        let reference = Result { try SQLiteDataDecoder().decode(D.self, from: value) }
        let ours = Result { try row(value).decode(column: "c", as: D.self) }
        switch (reference, ours) {
        case (.success(let expected), .success(let got)): XCTAssertEqual(got, expected, "\(D.self) from \(value)", file: file, line: line)
        case (.failure, .failure): break
        default: XCTFail("\(D.self) from \(value): reference \(reference), engine \(ours)", file: file, line: line)
        }
    }

    func testColumnValuesReadAsTheDecoderReadsThem() {
        let values: [SQLiteData] = [.text("abc"), .text(""), .text("12"), .integer(0), .integer(-3), .integer(Int.max), .null, .float(1.5)]
        for value in values {
            assertSame(String.self, value)
            assertSame(String?.self, value)
            assertSame(Int64.self, value)
            assertSame(Int64?.self, value)
            assertSame(Int.self, value)
            assertSame(Int?.self, value)
            assertSame(Double.self, value)
            assertSame(Bool.self, value)
        }
    }

    func testATextColumnReadAsANumberIsStillRefused() {
        XCTAssertThrowsError(try row(.text("abc")).decode(column: "c", as: Int64.self))
        XCTAssertThrowsError(try row(.null).decode(column: "c", as: String.self), "NULL is not a String")
    }
}
