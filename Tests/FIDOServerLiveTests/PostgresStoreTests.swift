import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NIOConcurrencyHelpers
import Primitives
import SQLKit
import SQLiteNIO
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

final class PostgresStoreTests: XCTestCase {
    var stores: Stores!

    /// The PostgreSQL URL of the test server, or nil locally without one; under `CI=true`, where `.ci/run` provides
    /// it, a missing URL is a failure.
    static func postgresURLIfAny() -> String? {
        if let url = TestPostgres.url { return url }
        if TestPostgres.required { XCTFail(TestPostgres.requiredReason) }
        return nil
    }

    /// The PostgreSQL URL of the test server; a test that needs it is skipped locally without one.
    static func postgresURL() throws -> String {
        guard let url = postgresURLIfAny() else {
            throw XCTSkip(TestPostgres.missingReason)
        }
        return url
    }

    /// Stores on the shared PostgreSQL database, every table emptied first.
    static func emptiedStores(url: String) async throws -> Stores {
        let stores = Stores(database: try await StoreDatabase.open(.postgres(url: url, poolSize: 8)))
        try await stores.database.run { sql in
            for table in [
                "uaf_requests", "registrations", "sessions", "signing_keys", "status_records", "dispatch_targets", "dispatch_tokens",
                "device_requests", "auth_cloud_users", "access_keys", "audit_events", "passkeys", "webauthn_ceremonies", "app_attest_keys",
                "server_secrets",
            ] {
                try await sql.raw("DELETE FROM \(unsafeRaw: table)").run()
            }
        }
        return stores
    }

    override func setUp() async throws {
        stores = try await Self.emptiedStores(url: try Self.postgresURL())
    }

    override func tearDown() async throws { try await stores?.database.close() }

    func testTheRowsEverySignInUpdatesKeepRoomForTheUpdateOnTheirPage() async throws {
        struct Options: Decodable {
            var relname: String
            var options: String?
        }
        let rows = try await stores.database.run { sql in
            try await sql.raw(
                """
                SELECT relname, array_to_string(reloptions, ',') AS options FROM pg_class
                WHERE relname IN ('registrations', 'passkeys', 'app_attest_keys', 'sessions') AND relkind = 'r'
                  AND relnamespace = current_schema()::regnamespace ORDER BY relname
                """
            ).all(decoding: Options.self)
        }
        XCTAssertEqual(
            rows.map { "\($0.relname): \($0.options ?? "")" },
            ["app_attest_keys: fillfactor=90", "passkeys: fillfactor=90", "registrations: fillfactor=90", "sessions: "])
    }

    func testACounterUpdateOnBulkWrittenKeysStaysOnItsPage() async throws {
        // 400 keys written in one statement fill their pages as a bulk import does; then one key in 15 signs in.
        let now = Date()
        let records = (0..<400).map { index in
            RegistrationRecord(
                username: "user-\(index)", aaid: "F1D0#1001", keyID: "key-\(index)", publicKey: Array(repeating: 4, count: 91),
                publicKeyEncoding: .eccX962DER, signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1,
                authenticatorVersion: 1, attestationType: .basicSurrogate, createdAt: now)
        }
        try await stores.registrations.insert(records)
        let signingIn = stride(from: 0, to: 400, by: 15).map { "key-\($0)" }
        struct Place: Decodable, Equatable {
            var key_id: String
            var page: Int
        }
        func pages() async throws -> [Place] {
            try await stores.database.run { sql in
                try await sql.raw(
                    """
                    SELECT key_id, (ctid::text::point)[0]::BIGINT AS page FROM registrations
                    WHERE key_id IN (\(SQLList(signingIn.map { SQLBind($0) }))) ORDER BY key_id
                    """
                ).all(decoding: Place.self)
            }
        }
        let before = try await pages()
        XCTAssertGreaterThan(Set(before.map(\.page)).count, 5, "the keys span several pages")
        for keyID in signingIn {
            let moved = try await stores.registrations.updateSignCounter(aaid: "F1D0#1001", keyID: keyID, from: 0, to: 1)
            XCTAssertTrue(moved)
        }
        // The new version of each row is on its page: an update there touches no index (HOT).
        let after = try await pages()
        XCTAssertEqual(after, before)
    }

    func testTheCapCountNeverReadsTheExpiryIndexEvenWhereThePlannerWouldPreferIt() async throws {
        // A table whose statistics make the expiry index look best for "this user's requests unexpired at now":
        // one user, expiries spread out, and now near the end of them. (In production, young statistics on a busy
        // table led PostgreSQL there on some connections, and each count then walked the expiry index's whole range.)
        let base = Date(epochMillis: Date().epochMillis)
        for i in 0..<300 {
            let inserted = try await stores.uafCeremonies.insert(
                record("r\(i)", expiresAt: base.addingTimeInterval(Double(i)), username: "ann"),
                username: "ann", cap: 1000, now: base)
            XCTAssertTrue(inserted)
        }
        let now = base.addingTimeInterval(290)
        let plan = { (condition: SQLQueryString) async throws -> String in
            try await self.stores.database.run { sql in
                try await sql.raw("ANALYZE uaf_requests").run()
                return try await sql.raw("EXPLAIN SELECT COUNT(*) FROM uaf_requests WHERE \(condition)").all()
                    .map { try $0.decode(column: "QUERY PLAN", as: String.self) }.joined(separator: "\n")
            }
        }
        let plain = try await plan("counted_username = \(bind: "ann") AND expires_at >= \(bind: now.epochMillis)")
        XCTAssertTrue(plain.contains("uaf_requests_by_expiry"), "the table does not mislead the planner, so this test proves nothing:\n\(plain)")
        let capped = try await plan("\(UAFCeremonyStore.unexpired(username: "ann", now: now))")
        XCTAssertFalse(capped.contains("uaf_requests_by_expiry"), capped)
        let count = try await stores.uafCeremonies.outstanding(username: "ann", now: now)
        XCTAssertEqual(count, 10)
    }

    func testTwoInstancesMigratingTogetherBothStart() async throws {
        let url = try Self.postgresURL()
        async let a = StoreDatabase.open(.postgres(url: url, poolSize: 2))
        async let b = StoreDatabase.open(.postgres(url: url, poolSize: 2))
        let (first, second) = try await (a, b)
        try await first.close()
        try await second.close()
    }

    func testOpeningLogsNoWarning() async throws {
        // PostgresNIO warned "run() hasn't been called yet" on every start, because the migrations asked for a
        // connection before the client's run task had begun; operators saw a false alarm each time.
        let url = try Self.postgresURL()
        let records = RecordedLogs()
        for _ in 0..<10 {
            let database = try await StoreDatabase.open(
                .postgres(url: url, poolSize: 2),
                logger: Logger(label: "test") { _ in RecordingLogHandler(records) })
            try await database.close()
        }
        XCTAssertEqual(records.messages(atLeast: .warning), [])
    }
}
