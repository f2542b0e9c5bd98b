import Foundation
import Logging
import SQLKit
import SQLiteKit
import SQLiteNIO
import TestSupport
import VaporCSQLite
import XCTest

@testable import EmbeddedSQLite

/// The engine on its own, without the server's schema: what it needs from the SQLite that sqlite-nio vendors, its
/// background checkpointer, and its conversions of values. The engine's commit rules, seen through the server's
/// stores, are tested in `FIDOServerTests.SQLiteEngineTests`.
final class EmbeddedSQLiteTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("engine.sqlite").path }

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-embedded-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The engine reaches past SQLiteNIO's API into the SQLite it vendors (target VaporCSQLite, not a product), and
    /// declares its variadic `sqlite3_db_config` by hand (CSQLiteSettings). This test is the alarm for an update of
    /// sqlite-nio that renames the prefix, removes the symbol or ships an SQLite without what the engine uses:
    /// persistent statements and extended result codes (3.20), and the query planner stability guarantee, which the
    /// engine turns on through that declared symbol and refuses to open without.
    func testTheVendoredSQLiteHasWhatTheEngineUses() throws {
        let version = sqlite_nio_sqlite3_libversion_number()
        XCTAssertGreaterThanOrEqual(version, 3_020_000, "sqlite-nio vendors SQLite \(version)")
        let engine = try SQLiteEngine(path: path, logger: Logger(label: "test"))
        defer { engine.close() }
        try engine.apply("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)")
        let rows = try engine.execute("SELECT COUNT(*) AS n FROM items", [])
        XCTAssertEqual(try rows.first?.decode(column: "n", as: Int.self), 0)
    }

    func testAStoppedCheckpointerRunsNoMorePasses() async throws {
        let engine = try SQLiteEngine(path: path, logger: Logger(label: "test"))
        defer { engine.close() }
        try engine.apply("PRAGMA journal_mode = WAL")
        try engine.apply("CREATE TABLE items (id TEXT PRIMARY KEY, n BIGINT NOT NULL)")
        let checkpointer = try SQLiteCheckpointer(path: path, interval: 0.01, logger: Logger(label: "test"))
        let ran = try await eventually { checkpointer.progress.passes > 0 }
        checkpointer.stop()
        XCTAssertTrue(ran, "the thread never ran")
        let passes = checkpointer.progress.passes
        // Ten intervals watched: a thread that went on would have passed again in them.
        let wentOn = try await eventually(within: .milliseconds(100)) { checkpointer.progress.passes != passes }
        XCTAssertFalse(wentOn, "the thread went on after stop()")
    }
}

/// Column values are read, and bound values made, as sqlite-kit's SQLiteDataDecoder and SQLiteDataEncoder do, with
/// their refusals: the engine's own casts for the common types must agree with them value for value.
final class SQLiteValueConversionTests: XCTestCase {
    private func row(_ value: SQLiteData) -> SQLiteResultRow {
        SQLiteResultRow(columns: SQLiteResultColumns(names: ["c"]), values: [value])
    }

    func testATextColumnReadAsANumberIsRefused() {
        XCTAssertThrowsError(try row(.text("abc")).decode(column: "c", as: Int64.self))
        XCTAssertThrowsError(try row(.null).decode(column: "c", as: String.self), "NULL is not a String")
    }

    private static let values: [SQLiteData] = [
        .text("abc"), .text(""), .text("42"), .text("Zürich 🔑"), .integer(0), .integer(42), .integer(-7), .integer(Int.max), .integer(Int.min),
        .float(1.5), .null,
    ]

    /// The engine's reading and sqlite-kit's decoder give the same value, or both refuse.
    private func agree<D: Decodable & Equatable>(
        _ type: D.Type, values: [SQLiteData] = values, file: StaticString = #filePath, line: UInt = #line
    ) {
        for value in values {
            let ours = Result { try row(value).decode(column: "c", as: D.self) }
            let theirs = Result { try SQLiteDataDecoder().decode(D.self, from: value) }
            switch (ours, theirs) {
            case (.success(let a), .success(let b)): XCTAssertEqual(a, b, "\(value) as \(D.self)", file: file, line: line)
            case (.failure, .failure): break
            default: XCTFail("\(value) as \(D.self): ours \(ours), sqlite-kit's \(theirs)", file: file, line: line)
            }
        }
    }

    func testEveryColumnReadAgreesWithSQLiteKitsDecoder() {
        agree(String.self)
        agree(String?.self)
        agree(Int64.self)
        agree(Int64?.self)
        agree(Int.self)
        agree(Int?.self)
        // sqlite-kit's decoder stops the process on an integer out of a narrower type's range (both paths reach it).
        let narrow = Self.values.filter { ![.integer(Int.max), .integer(Int.min), .integer(-7)].contains($0) }
        agree(Int32.self, values: narrow)
        agree(UInt32.self, values: narrow)
        agree(Double.self)
        agree(Bool.self)
    }

    func testEveryBoundValueAgreesWithSQLiteKitsEncoder() throws {
        let binds: [any Encodable & Sendable] = [
            "abc", "", "Zürich 🔑", Int64(0), Int64.min, Int64.max, 42, -1, Int32(5), UInt32.max, true, 1.5, Optional("x"),
            String?.none, Optional(Int64(3)), Int64?.none, Optional(7), Int?.none,
            // Absent optionals of other types, and a double optional: NULL by the cast, as the encoder writes them.
            Bool?.none, Double?.none, Date?.none, Data?.none, [Int]?.none, Int32?.none, String??.some(.none), String??.none,
            Optional(Optional("y")), Optional(true), Optional(Data([1, 2])),
        ]
        for bind in binds {
            XCTAssertEqual(try SQLiteEngineDatabase.data(bind), try SQLiteDataEncoder().encode(bind), "\(bind)")
        }
    }
}
