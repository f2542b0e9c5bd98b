import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NIOConcurrencyHelpers
import Primitives
import SQLKit
import SQLiteNIO
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

final class SQLiteStoreTests: XCTestCase {
    var stores: Stores!
    var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-store-\(UUID().uuidString)")
        stores = Stores(database: try await StoreDatabase.open(.sqlite(path: directory.appendingPathComponent("s.sqlite").path)))
    }

    override func tearDown() async throws {
        try await stores?.database.close()
        try? FileManager.default.removeItem(at: directory)
    }

    func testMigrationsRunOnceAndReopenCleanly() async throws {
        let path = directory.appendingPathComponent("s.sqlite").path
        try await stores.registrations.insert([registration("kim", keyID: "kk")])
        try await stores.database.close()
        stores = Stores(database: try await StoreDatabase.open(.sqlite(path: path)))
        let versions = try await stores.database.run { sql in try await sql.raw("SELECT version FROM mauth_migrations ORDER BY version").all() }
        XCTAssertEqual(try versions.map { try $0.decode(column: "version", as: Int.self) }, Migrations.all.map(\.version))
        let kim = try await stores.registrations.registrations(username: "kim")
        XCTAssertEqual(kim.count, 1)
    }
}

extension SQLiteStoreTests {
    func testADatabaseFromBeforeMigrationsIsRefusedUntouched() async throws {
        let path = directory.appendingPathComponent("old.sqlite").path
        let old = try await SQLiteConnection.open(storage: .file(path: path))
        _ = try await old.query("CREATE TABLE registrations (aaid TEXT, key_id TEXT, public_key BLOB)")
        _ = try await old.query("INSERT INTO registrations VALUES ('F1D0#1001', 'k', x'01')")
        try await old.close()
        do {
            let database = try await StoreDatabase.open(.sqlite(path: path))
            try await database.close()
            XCTFail("an unversioned database was migrated")
        } catch let error as ServerConfiguration.ConfigurationError {
            XCTAssertTrue(error.description.contains("no migration record"), error.description)
        }
        let check = try await SQLiteConnection.open(storage: .file(path: path))
        let rows = try await check.query("SELECT COUNT(*) AS n FROM registrations")
        let tables = try await check.query("SELECT name FROM sqlite_master WHERE name = 'mauth_migrations'")
        try await check.close()
        XCTAssertEqual(rows.first?.column("n")?.integer, 1)
        XCTAssertTrue(tables.isEmpty, "the refused database was changed")
    }
}
