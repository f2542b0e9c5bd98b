import Foundation
import Logging
import SQLKit
import SQLiteKit
import SQLiteNIO
import TestSupport
import XCTest

@testable import EmbeddedSQLite
@testable import FIDOServer
@testable import FIDOServerCore

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
        try await integerFromAnotherConnection("SELECT COUNT(*) AS n FROM items", column: "n") ?? -1
    }

    /// An integer column of the first row `sql` returns on a second, independent connection to the file.
    private func integerFromAnotherConnection(_ sql: String, column: String) async throws -> Int? {
        let other = try await SQLiteConnection.open(storage: .file(path: path))
        defer { Task { try? await other.close() } }
        let rows = try await other.query(sql)
        return rows.first?.column(column)?.integer
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

    func testBoundTextsReachTheFileByteForByteAndAnEmptyTextIsNotNull() async throws {
        let database = try await openWithTable()
        let bridged = NSString(string: "bridged from Foundation, longer than a small string") as String
        let texts = [
            "", "a", "fifteen bytes!!", "sixteen bytes!!!", "Zürich 🔑 \u{0}inside", String(repeating: "long ", count: 400),
            bridged, String("a substring's copy".dropFirst(2)),
        ]
        for (index, text) in texts.enumerated() {
            try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES (\(bind: text), \(bind: index))").run() }
        }
        let other = try await SQLiteConnection.open(storage: .file(path: path))
        let rows = try await other.query("SELECT n, id, typeof(id) AS kind, hex(id) AS bytes FROM items ORDER BY n")
        try await other.close()
        XCTAssertEqual(rows.map { $0.column("kind")?.string }, Array(repeating: "text", count: texts.count), "a text was bound as NULL")
        for (row, text) in zip(rows, texts) {
            let expected = text.utf8.map { String(format: "%02X", $0) }.joined()
            XCTAssertEqual(row.column("bytes")?.string, expected, "text \(row.column("n")?.integer ?? -1) changed on its way")
        }
        let empty = try await database.run { sql in try await sql.raw("SELECT n FROM items WHERE id = \(bind: "")").first() }
        XCTAssertEqual(try empty?.decode(column: "n", as: Int.self), 0, "an empty text did not match the empty text stored")
        try await database.close()
    }

    func testAuditBatchesOfEverySizePrepareAtMostNineStatementTexts() async throws {
        // The audit trail flushes whatever queued in a second: a batch of any size. One statement text per size grew
        // the cache to its limit, which then started over and prepared every store's statements again.
        let database = try await StoreDatabase.open(.sqlite(path: path))
        let event = AuditEvent(
            at: Date(), requestID: "r", clientAddress: "192.0.2.1", principal: nil, operation: "authentication", username: "alice",
            statusCode: 1200, detail: "ok")
        try await Stores(database: database).audit.insert([event], retention: 60)
        // The single row's text is prepared now; sizes 2 to 256 are the eight left.
        let before = try XCTUnwrap(database.sqliteStatementsPrepared)
        for size in 1...300 {
            try await Stores(database: database).audit.insert(Array(repeating: event, count: size), retention: 60)
        }
        let prepared = try XCTUnwrap(database.sqliteStatementsPrepared) - before
        XCTAssertLessThanOrEqual(prepared, 8, "every batch size prepared a statement of its own")
        let rows = try await database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS n FROM audit_events").first()?.decode(column: "n", as: Int.self)
        }
        XCTAssertEqual(rows, 1 + 300 * 301 / 2)
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

    /// The value of an integer pragma, as the engine's connection reads it.
    private static func pragma(_ name: String, of database: StoreDatabase) async throws -> Int? {
        try await database.run { sql in try await sql.raw("PRAGMA \(unsafeRaw: name)").first()?.decode(column: name, as: Int.self) }
    }

    func testTheLogIsCheckpointedEveryFortyThousandPagesNotEveryThousand() async throws {
        let database = try await openWithTable()
        let pages = try await Self.pragma("wal_autocheckpoint", of: database)
        XCTAssertEqual(pages, StoreDatabase.checkpointPages)
        XCTAssertEqual(pages, 40_000)
        try await database.close()
    }

    func testANewDatabaseFileHasTwoKiBPages() async throws {
        let database = try await openWithTable()
        let size = try await Self.pragma("page_size", of: database)
        XCTAssertEqual(size, StoreDatabase.pageSize)
        XCTAssertEqual(size, 2048)
        try await database.close()
        // Read from the file by another connection, not only what the engine's connection says.
        let fromFile = try await integerFromAnotherConnection("PRAGMA page_size", column: "page_size")
        XCTAssertEqual(fromFile, 2048)
    }

    func testAnExistingDatabaseKeepsItsPageSizeAndItsRows() async throws {
        // A database created before the page size was set: 4 KiB pages, WAL, one row.
        let old = try SQLiteEngine(path: path, logger: Logger(label: "test"))
        for statement in [
            "PRAGMA page_size = 4096", "PRAGMA journal_mode = WAL",
            "CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)", "INSERT INTO items (id, n) VALUES ('old', 1)",
        ] {
            _ = try old.execute(statement, [])
        }
        old.close()
        let database = try await StoreDatabase.open(.sqlite(path: path))
        try await Self.insert(database, "new")
        let size = try await Self.pragma("page_size", of: database)
        XCTAssertEqual(size, 4096, "opening an existing database changed its page size")
        try await database.close()
        let count = try await committedCount()
        XCTAssertEqual(count, 2, "the old row or the new one is missing")
    }

    /// Size of a file in the test directory, 0 when it does not exist.
    private func size(_ name: String) -> Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)
        return (attributes?[.size] as? NSNumber)?.intValue ?? 0
    }

    private static func insertRows(_ database: StoreDatabase, _ range: Range<Int>, text: String) async throws {
        for index in range {
            try await database.run { sql in
                try await sql.raw("INSERT INTO texts (id, body) VALUES (\(bind: "row-\(index)"), \(bind: text))").run()
            }
        }
    }

    func testTheLogIsCopiedIntoTheFileByTheBackgroundThreadLongBeforeTheThreshold() async throws {
        let database = try await StoreDatabase.open(.sqlite(path: path))
        try await database.run { sql in try await sql.raw("CREATE TABLE texts (id TEXT PRIMARY KEY, body TEXT NOT NULL)").run() }
        let fileBefore = size("engine.sqlite")
        // 200 rows of 2 KiB: about 100 pages, a hundredth of the threshold at which the engine would checkpoint itself.
        try await Self.insertRows(database, 0..<200, text: String(repeating: "x", count: 2048))
        _ = try await eventually(within: .seconds(5), every: .milliseconds(50)) {
            database.checkpointProgress.map { $0.logPages > 0 && $0.checkpointedPages == $0.logPages } ?? false
        }
        let caughtUp = try XCTUnwrap(database.checkpointProgress, "a database file has a background checkpointer")
        XCTAssertGreaterThan(caughtUp.logPages, 50, "the rows were not in the log")
        XCTAssertEqual(caughtUp.checkpointedPages, caughtUp.logPages, "the background thread did not copy the whole log")
        XCTAssertNil(caughtUp.lastFailure)
        // The rows' pages are in the database file itself now, not only in the log.
        XCTAssertGreaterThan(size("engine.sqlite"), fileBefore + 200 * 2048, "the database file did not receive the log's pages")
        try await database.close()
        let reopened = try await StoreDatabase.open(.sqlite(path: path))
        let count = try await reopened.run { sql in try await sql.raw("SELECT COUNT(*) AS n FROM texts").first()?.decode(column: "n", as: Int.self) }
        XCTAssertEqual(count, 200)
        try await reopened.close()
    }

    func testUnderContinuousWritesTheLogStillStartsOver() async throws {
        // A checkpoint beside the writer never catches up with it alone; the log can start over only because the
        // engine's own checkpoint at the threshold still runs. A low threshold makes that quick to see: the log file
        // must stay near it, where without a restart it would hold every page written.
        let database = try await StoreDatabase.open(.sqlite(path: path))
        try await database.run { sql in
            try await sql.raw("PRAGMA wal_autocheckpoint = 100").run()
            try await sql.raw("CREATE TABLE texts (id TEXT PRIMARY KEY, body TEXT NOT NULL)").run()
        }
        let text = String(repeating: "y", count: 2048)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<4 { group.addTask { try await Self.insertRows(database, (writer * 1000)..<(writer * 1000 + 1000), text: text) } }
            try await group.waitForAll()
        }
        let written = 4000 * 2048
        let log = size("engine.sqlite-wal")
        XCTAssertGreaterThan(log, 0)
        // The proof is the log's own header: its checkpoint sequence number (bytes 12-15, big-endian) counts the
        // times the log started over. The file keeps its high-water mark, which a loaded machine (CI builds beside the
        // tests) pushes past any tight bound when a restart waits for a reader; it must still hold less than the writes.
        let header = try XCTUnwrap(FileHandle(forReadingAtPath: directory.appendingPathComponent("engine.sqlite-wal").path)).readData(ofLength: 16)
        let restarts = header.count == 16 ? header[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } : 0
        XCTAssertGreaterThan(restarts, 0, "the log never started over (\(log) bytes for \(written) written)")
        XCTAssertLessThan(log, written / 2, "the log grew with the writes (\(log) bytes for \(written) written)")
        let count = try await database.run { sql in try await sql.raw("SELECT COUNT(*) AS n FROM texts").first()?.decode(column: "n", as: Int.self) }
        XCTAssertEqual(count, 4000)
        try await database.close()
    }

    func testAStatementIsNotPreparedAgainWhenItsBoundValuesChange() async throws {
        // The store's lookup of a user's registrations, on the real schema: without the query planner stability
        // guarantee SQLite prepared it again on every run with another username.
        let database = try await StoreDatabase.open(.sqlite(path: path))
        try await database.close()
        let engine = try SQLiteEngine(path: path, logger: Logger(label: "test"))
        let lookup = "SELECT * FROM registrations WHERE username = ?1 ORDER BY created_at, aaid, key_id"
        for index in 0..<20 { _ = try engine.execute(lookup, [.text("user-\(index)")]) }
        XCTAssertEqual(engine.reprepares(of: lookup), 0)
        engine.close()
    }

    func testAWriteTellsWhetherItChangedARowWithoutReturning() async throws {
        let database = try await openWithTable()
        try await database.run { sql in try await sql.raw("INSERT INTO items (id, n) VALUES (\(bind: "a"), \(bind: 1))").run() }
        // A compare-and-set: the first one changes the row, the second finds the old value gone.
        let first = try await database.run { sql in
            try await sql.changedAny("UPDATE items SET n = \(bind: 2) WHERE id = \(bind: "a") AND n = \(bind: 1)")
        }
        let second = try await database.run { sql in
            try await sql.changedAny("UPDATE items SET n = \(bind: 2) WHERE id = \(bind: "a") AND n = \(bind: 1)")
        }
        XCTAssertTrue(first)
        XCTAssertFalse(second, "a write that matched no row reported a change")
        let value = try await integerFromAnotherConnection("SELECT n FROM items WHERE id = 'a'", column: "n")
        XCTAssertEqual(value, 2, "the change was not committed when run returned")
        try await database.close()
    }

    func testTheEngineCountsChangesWithoutATemporaryTable() async throws {
        // The count is the engine's own (sqlite3_changes under its lock), not rows of a RETURNING clause.
        let engine = try SQLiteEngine(path: path, logger: Logger(label: "test"))
        _ = try engine.execute("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)", [])
        XCTAssertEqual(try engine.changes("INSERT INTO items (id, n) VALUES (?1, 1), (?2, 1)", [.text("a"), .text("b")]), 2)
        XCTAssertEqual(try engine.changes("DELETE FROM items WHERE n = ?1", [.integer(7)]), 0)
        XCTAssertEqual(try engine.changes("DELETE FROM items WHERE n = ?1", [.integer(1)]), 2)
        engine.close()
    }

    func testGroupCommitsReuseTheirPreparedTransactionStatements() async throws {
        let engine = try SQLiteEngine(path: path, logger: Logger(label: "test"))
        _ = try engine.execute("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)", [])
        engine.startGroupCommit()
        for index in 0..<5 {
            _ = try engine.execute("INSERT INTO items (id, n) VALUES (?1, 1)", [.text("k\(index)")])
            engine.commit()
        }
        // Five transactions: each BEGIN IMMEDIATE and COMMIT is the statement prepared the first time (nil: never
        // cached, parsed anew by sqlite3_exec each time).
        XCTAssertEqual(engine.reprepares(of: "BEGIN IMMEDIATE"), 0)
        XCTAssertEqual(engine.reprepares(of: "COMMIT"), 0)
        let count = try await committedCount()
        XCTAssertEqual(count, 5)
        engine.close()
    }

    func testAnInMemoryDatabaseHasNoCheckpointer() async throws {
        let database = try await StoreDatabase.open(.sqliteInMemory)
        XCTAssertNil(database.checkpointProgress)
        try await database.close()
    }
}
