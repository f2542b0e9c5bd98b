import AppAttestation
import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import Primitives
import SQLKit
import TestSupport
import UAF
import WebAuthn
import XCTest

@testable import FIDOServerCore

/// Export, import and migration (`DatabaseTransfer`) on real SQLite files and the test PostgreSQL server: a
/// database holding every kind of record round-trips byte for byte, through either engine; a file read twice
/// changes nothing the second time; a changed, cut or conflicting file writes nothing; each field rule refuses one
/// changed value of a valid record; a migration resumes and is verified. Python writes and checks the format
/// independently (`Tests/Interop/export_file.py`).
final class DatabaseTransferTests: XCTestCase {
    static let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/export_file.py").path
    var directory: URL!
    var opened: [StoreDatabase] = []

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        for database in opened { try? await database.close() }
        opened = []
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: - fixtures

    /// A fresh SQLite file, opened as the admin commands open it (commits not grouped, so a transfer may hold one
    /// transaction).
    func sqlite(_ name: String = UUID().uuidString) async throws -> StoreDatabase {
        let database = try await StoreDatabase.open(.sqlite(path: directory.appendingPathComponent("\(name).sqlite").path), groupCommit: false)
        opened.append(database)
        return database
    }

    /// The test PostgreSQL server's database, every durable table emptied; skipped locally without one.
    func postgres() async throws -> StoreDatabase {
        let stores = try await PostgresStoreTests.emptiedStores(url: try PostgresStoreTests.postgresURL())
        opened.append(stores.database)
        return stores.database
    }

    static let now = Date(epochMillis: 1_795_000_000_123)

    /// Every kind of record, with and without its optional fields, and text JSON must escape.
    static func fill(_ database: StoreDatabase) async throws {
        let stores = Stores(database: database)
        _ = try await stores.authCloudUsers.findOrCreate(username: "alice", now: now, createdBy: "demo-site")
        _ = try await stores.authCloudUsers.findOrCreate(username: "bob \"é\" / \\", now: now.addingTimeInterval(1))
        var linked = RegistrationRecord(
            username: "alice", aaid: "F1D0#1001", keyID: "key-alice", publicKey: Array(P256.Signing.PrivateKey().publicKey.derRepresentation),
            publicKeyEncoding: .eccX962DER, signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 41, registrationCounter: 1,
            authenticatorVersion: 1, attestationType: .basicSurrogate, createdAt: now, deviceId: "phone-1")
        linked.appAttestation = "require: apple key attested"
        linked.appAttestKeyID = Base64URL.encode([UInt8](repeating: 7, count: 32))
        var plain = linked
        plain.key.keyID = "key-bob"
        plain.key.username = "bob \"é\" / \\"
        plain.deviceId = nil
        plain.appAttestation = nil
        plain.appAttestKeyID = nil
        try await stores.registrations.insert([linked, plain])
        for (index, username) in ["alice", "alice", "carol"].enumerated() {
            _ = try await stores.passkeys.insert(
                PasskeyRecord(
                    credentialID: Base64URL.encode([UInt8](repeating: UInt8(index + 1), count: 16)), username: username,
                    userHandle: Base64URL.encode([UInt8](repeating: username == "alice" ? 0xA1 : 0xC1, count: 32)),
                    publicKey: COSEKey(P256.Signing.PrivateKey().publicKey).encoded, signCount: UInt32(index * 5),
                    userVerifiedAtRegistration: true, backupEligible: index == 0, backupState: index == 0,
                    transports: index == 2 ? [] : ["internal", "hybrid"], aaguid: "adce0002-35bc-c60a-648b-0b25f1f05503",
                    attestationFormat: "none", attestationType: "none", discoverable: index == 2 ? nil : true,
                    name: index == 0 ? "Alice's iPhone" : nil, createdAt: now, lastUsedAt: index == 0 ? now : nil,
                    trust: index == 1 ? "untrusted" : nil))
        }
        let jwk = #"{"kty":"EC","crv":"P-256","x":"AAAA","y":"BBBB"}"#
        _ = try await stores.dispatchTargets.insert(
            DispatchTargetRecord(
                id: "target-1", extId: "ext-1", username: "alice", name: "Alice's phone", deviceId: "phone-1",
                dispatcher: "firebase-cloud-messaging", target: "fcm-token", signatureKey: jwk, encryptionKey: jwk, createdAt: now,
                updatedAt: now.addingTimeInterval(60)))
        _ = try await stores.dispatchTargets.insert(
            DispatchTargetRecord(
                id: "target-2", extId: "ext-2", username: "bob \"é\" / \\", name: "tablet", deviceId: nil, dispatcher: "none", target: nil,
                signatureKey: jwk, encryptionKey: nil, createdAt: now, updatedAt: now))
        try await stores.appAttestKeys.attested(
            AttestedAppKey(
                keyID: [UInt8](repeating: 7, count: 32), publicKey: [0x04] + [UInt8](repeating: 9, count: 64),
                appID: "ABCDE12345.ch.nevis.example", environment: .production, counter: 3, receipt: [0x30, 0x80, 1, 2]), now: now)
        _ = try await stores.accessKeys.create(name: "back office", now: now)
        let revoked = try await stores.accessKeys.create(name: "old key", now: now)
        _ = try await stores.accessKeys.revoke(id: revoked.record.id, now: now.addingTimeInterval(5))
        try await stores.signingKeys.add(kid: "kid-1", pem: P256.Signing.PrivateKey().pemRepresentation, now: now)
        try await stores.signingKeys.activate(kid: "kid-1", now: now)
        _ = try await stores.serverSecrets.secret(named: "passkey-decoys", candidate: [UInt8](repeating: 3, count: 32), now: now)
    }

    /// Exports `database` to a file in the test's folder; returns its path and bytes.
    func export(_ database: StoreDatabase, serverKeys: Bool = true, name: String = UUID().uuidString) async throws -> (path: String, bytes: [UInt8]) {
        var bytes: [UInt8] = []
        let collected = Collected()
        let writer = try ExportWriter(serverKeys: serverKeys, sink: { collected.append($0) })
        _ = try await DatabaseTransfer(database: database).export(serverKeys: serverKeys, to: writer)
        try writer.finish()
        bytes = collected.bytes
        let path = directory.appendingPathComponent("\(name).jsonl").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    final class Collected: @unchecked Sendable {
        var bytes: [UInt8] = []
        func append(_ more: [UInt8]) { bytes += more }
    }

    func count(_ database: StoreDatabase, _ table: String) async throws -> Int {
        try await database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS n FROM \(unsafeRaw: table)").first()!.decode(column: "n", as: Int.self)
        }
    }

    /// The number of rows in every durable table: what "nothing was written" is checked against.
    func rows(_ database: StoreDatabase) async throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for kind in PortableKind.all { counts[kind.table] = try await count(database, kind.table) }
        return counts
    }

    /// Writes an export file of `lines` (records as JSON text) with a correct header and trailer, so that a test
    /// of a field rule is refused by the rule, not by the checksum.
    func file(_ lines: [String], serverKeys: Bool = false, header: String? = nil) throws -> String {
        var text = (header ?? #"{"format":"mauth-export","serverKeys":\#(serverKeys),"version":1}"#) + "\n"
        var counts: [String: Int] = [:]
        for line in lines {
            text += line + "\n"
            if let kind = line.firstMatch(of: /"kind":"([A-Za-z]+)"/)?.1 { counts[String(kind), default: 0] += 1 }
        }
        let digest = SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
        let countsJSON = counts.keys.sorted().map { #""\#($0)":\#(counts[$0]!)"# }.joined(separator: ",")
        text += #"{"counts":{\#(countsJSON)},"end":"mauth-export","records":\#(lines.count),"sha256":"\#(digest)"}"# + "\n"
        let path = directory.appendingPathComponent("\(UUID().uuidString).jsonl").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static let validRegistration =
        #"{"aaid":"F1D0#1001","attestationType":15880,"authenticatorVersion":1,"createdAt":"2026-11-28T16:31:54.252Z","keyId":"k1","kind":"registration","publicKey":"\#(Base64URL.encode(Array(P256.Signing.PrivateKey().publicKey.derRepresentation)))","publicKeyEncoding":257,"registrationCounter":1,"signCounter":1,"signatureAlgorithm":2,"username":"dora"}"#

    func importRefusal(_ path: String, into database: StoreDatabase) async throws -> String {
        do {
            _ = try await DatabaseTransfer(database: database).importFile(path: path)
        } catch {
            return String(describing: error)
        }
        XCTFail("the file was imported")
        return ""
    }

    // MARK: - round trips

    func testAnExportImportedIntoAnotherSQLiteFileExportsTheSameBytes() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let first = try await export(source)
        let target = try await sqlite("target")
        let counts = try await DatabaseTransfer(database: target).importFile(path: first.path)
        XCTAssertEqual(counts["passkey"], .init(inserted: 3, present: 0))
        let again = try await export(target)
        XCTAssertEqual(again.bytes, first.bytes)
        let value1 = try await rows(target)
        let value2 = try await rows(source)
        XCTAssertEqual(value1, value2)
    }

    func testAnSQLiteExportImportedIntoPostgreSQLExportsTheSameBytes() async throws {
        let target = try await postgres()
        let source = try await sqlite("source")
        try await Self.fill(source)
        let first = try await export(source)
        _ = try await DatabaseTransfer(database: target).importFile(path: first.path)
        let again = try await export(target)
        XCTAssertEqual(String(decoding: again.bytes, as: UTF8.self), String(decoding: first.bytes, as: UTF8.self))
    }

    func testRecordsOverSeveralPagesRoundTripAndMigrate() async throws {
        let source = try await sqlite("source")
        let key = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
        let count = DatabaseTransfer.batch * 2 + 101
        try await Stores(database: source).registrations.insert(
            (0..<count).map { index in
                RegistrationRecord(
                    username: "user-\(index)", aaid: index % 2 == 0 ? "F1D0#1001" : "F1D0#0001", keyID: "key-\(index)", publicKey: key,
                    publicKeyEncoding: .eccX962DER, signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: UInt32(index),
                    registrationCounter: 1, authenticatorVersion: 1, attestationType: .basicSurrogate, createdAt: Self.now)
            })
        let first = try await export(source)
        let copy = try await sqlite("copy")
        let imported = try await DatabaseTransfer(database: copy).importFile(path: first.path)
        XCTAssertEqual(imported["registration"], .init(inserted: count, present: 0))
        let again = try await export(copy)
        XCTAssertEqual(again.bytes, first.bytes)
        let migrated = try await sqlite("migrated")
        let copied = try await DatabaseTransfer.migrate(from: source, to: migrated)
        XCTAssertEqual(copied["registration"], .init(inserted: count, present: 0))
        let verified = try await DatabaseTransfer.verify(source: source, target: migrated)
        XCTAssertEqual(verified["registration"], count)
    }

    func testImportedRecordsAreTheServersOwn() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let target = try await sqlite("target")
        _ = try await DatabaseTransfer(database: target).importFile(path: try await export(source).path)
        let (from, to) = (Stores(database: source), Stores(database: target))
        let expectedRegistrations = try await from.registrations.registrations(username: "alice")
        let foundRegistrations = try await to.registrations.registrations(username: "alice")
        XCTAssertEqual(foundRegistrations, expectedRegistrations)
        let expectedPasskeys = try await from.passkeys.passkeys(username: "alice")
        let foundPasskeys = try await to.passkeys.passkeys(username: "alice")
        XCTAssertEqual(foundPasskeys, expectedPasskeys)
        let expectedTargets = try await from.dispatchTargets.targets(deviceId: "phone-1")
        let foundTargets = try await to.dispatchTargets.targets(deviceId: "phone-1")
        XCTAssertEqual(foundTargets, expectedTargets)
        let expectedKeys = try await from.signingKeys.list()
        let foundKeys = try await to.signingKeys.list()
        XCTAssertEqual(foundKeys, expectedKeys)
    }

    func testImportingAFileAgainChangesNothing() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let file = try await export(source)
        let target = try await sqlite("target")
        _ = try await DatabaseTransfer(database: target).importFile(path: file.path)
        let second = try await DatabaseTransfer(database: target).importFile(path: file.path)
        XCTAssertEqual(second.values.map(\.inserted).reduce(0, +), 0)
        XCTAssertEqual(second["registration"], .init(inserted: 0, present: 2))
        let value3 = try await export(target).bytes
        XCTAssertEqual(value3, file.bytes)
    }

    func testAnExportWithoutServerKeysLeavesThemOut() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let text = String(decoding: try await export(source, serverKeys: false).bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix(#"{"format":"mauth-export","serverKeys":false,"version":1}"#))
        XCTAssertFalse(text.contains("PRIVATE KEY"))
        XCTAssertFalse(text.contains(#""kind":"serverSecret""#))
        XCTAssertTrue(text.contains(#""kind":"passkey""#))
    }

    // MARK: - refused files write nothing

    func testAChangedByteRefusesTheFileAndWritesNothing() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let file = try await export(source)
        var text = String(decoding: file.bytes, as: UTF8.self)
        text = text.replacingOccurrences(of: #""signCounter":41"#, with: #""signCounter":40"#)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file.path))
        let target = try await sqlite("target")
        let refusal = try await importRefusal(file.path, into: target)
        XCTAssertTrue(refusal.contains("the checksum does not match the file"), refusal)
        let value4 = try await rows(target).values.reduce(0, +)
        XCTAssertEqual(value4, 0)
    }

    func testAFileCutShortIsRefusedAndWritesNothing() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let file = try await export(source)
        let lines = String(decoding: file.bytes, as: UTF8.self).split(separator: "\n")
        try Data((lines.dropLast().joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: file.path))
        let target = try await sqlite("target")
        let refusal = try await importRefusal(file.path, into: target)
        XCTAssertTrue(refusal.contains("ends before its trailer"), refusal)
        try Data(file.bytes.dropLast()).write(to: URL(fileURLWithPath: file.path))
        let unterminated = try await importRefusal(file.path, into: target)
        XCTAssertTrue(unterminated.contains("has no line feed"), unterminated)
        let value5 = try await rows(target).values.reduce(0, +)
        XCTAssertEqual(value5, 0)
    }

    func testARecordThatDiffersFromTheDatabaseRefusesTheWholeFile() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let file = try await export(source)
        let target = try await sqlite("target")
        // The target already holds Alice's key, used since: its counter is 42, the file's 41.
        var used = try await Stores(database: source).registrations.registration(aaid: "F1D0#1001", keyID: "key-alice")!
        used.signCounter = 42
        try await Stores(database: target).registrations.insert([used])
        let before = try await rows(target)
        let refusal = try await importRefusal(file.path, into: target)
        XCTAssertTrue(refusal.contains(#"registration aaid "F1D0#1001" keyId "key-alice" is in the database with another signCounter"#), refusal)
        XCTAssertTrue(refusal.contains("nothing was written"), refusal)
        let value6 = try await rows(target)
        XCTAssertEqual(value6, before)
    }

    func testAUsernameHeldByAnotherUserIsAConflict() async throws {
        let target = try await sqlite("target")
        _ = try await Stores(database: target).authCloudUsers.findOrCreate(username: "dora", now: Self.now)
        let path = try file([
            #"{"createdAt":"2026-01-01T00:00:00.000Z","kind":"user","updatedAt":"2026-01-01T00:00:00.000Z","userId":"u-other","username":"dora"}"#
        ])
        let refusal = try await importRefusal(path, into: target)
        XCTAssertTrue(refusal.contains(#"username "dora" already belongs to user userId"#), refusal)
        let value7 = try await count(target, "auth_cloud_users")
        XCTAssertEqual(value7, 1)
    }

    func testAPasskeyWithAnotherUserHandleThanTheUsersIsAConflict() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let target = try await sqlite("target")
        let text = String(decoding: try await export(source).bytes, as: UTF8.self)
        let carol = text.split(separator: "\n").first { $0.contains(#""username":"carol""#) && $0.contains(#""kind":"passkey""#) }!
        // Alice's passkeys are in the target; the file brings another of hers under Carol's handle.
        _ = try await Stores(database: target).passkeys.insert(
            try await Stores(database: source).passkeys.passkeys(username: "alice")[0])
        let forged = carol.replacingOccurrences(of: #""username":"carol""#, with: #""username":"alice""#)
        let refusal = try await importRefusal(try file([forged]), into: target)
        XCTAssertTrue(refusal.contains(#""alice" has passkeys with another user handle"#), refusal)
        let value8 = try await count(target, "passkeys")
        XCTAssertEqual(value8, 1)
    }

    func testAFileGivingAUserTwoPasskeyUserHandlesIsRefused() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let text = String(decoding: try await export(source).bytes, as: UTF8.self)
        let passkeys = text.split(separator: "\n").filter { $0.contains(#""kind":"passkey""#) }.map(String.init)
        // Carol's passkey renamed to Alice's, whose two passkeys (earlier in the file) hold another user handle.
        let lines = passkeys.map { $0.replacingOccurrences(of: #""username":"carol""#, with: #""username":"alice""#) }
        let target = try await sqlite("target")
        let refusal = try await importRefusal(try file(lines), into: target)
        XCTAssertTrue(refusal.contains(#"line 4: passkey of "alice" with a user handle other than her other passkeys'"#), refusal)
        let stored = try await count(target, "passkeys")
        XCTAssertEqual(stored, 0)
    }

    // MARK: - one rule each: a valid record with one value changed

    func testEachFieldRuleRefusesOneChangedValue() async throws {
        let target = try await sqlite("target")
        let valid = Self.validRegistration
        let value9 = try await DatabaseTransfer(database: target).importFile(path: try file([valid]))["registration"]?.inserted
        XCTAssertEqual(value9, 1)
        let cases: [(String, String, String)] = [
            ("unknown kind", valid.replacingOccurrences(of: #""kind":"registration""#, with: #""kind":"credential""#), "unknown kind"),
            ("unknown field", valid.replacingOccurrences(of: #""keyId""#, with: #""keyID""#), #"registration has no field "keyID""#),
            ("missing field", valid.replacingOccurrences(of: #","username":"dora""#, with: ""), "registration.username is missing"),
            (
                "counter out of range", valid.replacingOccurrences(of: #""signCounter":1"#, with: #""signCounter":4294967296"#),
                "signCounter must be a whole number"
            ),
            ("fraction", valid.replacingOccurrences(of: #""signCounter":1"#, with: #""signCounter":1.5"#), "signCounter must be a whole number"),
            (
                "counter as text", valid.replacingOccurrences(of: #""signCounter":1"#, with: #""signCounter":"1""#),
                "signCounter must be a whole number"
            ),
            ("time without zone", valid.replacingOccurrences(of: "54.252Z", with: "54.252"), "createdAt must be a UTC time"),
            ("day 30 of February", valid.replacingOccurrences(of: "2026-11-28", with: "2026-02-30"), "createdAt must be a UTC time"),
            (
                "padded base64url", valid.replacingOccurrences(of: #"","publicKeyEncoding""#, with: #"=","publicKeyEncoding""#),
                "publicKey must be base64url"
            ),
            (
                "control character", valid.replacingOccurrences(of: #""username":"dora""#, with: #""username":"do\u001bra""#),
                "control or bidirectional"
            ),
            (
                "bidi override", valid.replacingOccurrences(of: #""username":"dora""#, with: "\"username\":\"do\u{202E}ra\""),
                "control or bidirectional"
            ),
            ("lower-case AAID", valid.replacingOccurrences(of: "F1D0#1001", with: "f1d0#1001"), "four upper-case hex digits"),
            ("no key", valid.replacingOccurrences(of: #""publicKeyEncoding":257"#, with: #""publicKeyEncoding":256"#), "publicKey is no key"),
            (
                "duplicate member", valid.replacingOccurrences(of: #""username":"dora""#, with: #""username":"dora","username":"eve""#),
                "not a JSON value"
            ),
        ]
        for (what, line, expected) in cases {
            let refusal = try await importRefusal(try file([line.replacingOccurrences(of: #""keyId":"k1""#, with: #""keyId":"k2""#)]), into: target)
            XCTAssertTrue(refusal.contains("line 2: ") && refusal.contains(expected), "\(what): \(refusal)")
        }
        let value10 = try await count(target, "registrations")
        XCTAssertEqual(value10, 1)
    }

    func testARecordGivenTwiceInOneFileIsRefused() async throws {
        let target = try await sqlite("target")
        let refusal = try await importRefusal(try file([Self.validRegistration, Self.validRegistration]), into: target)
        XCTAssertTrue(refusal.contains("line 3: a second registration with aaid"), refusal)
        let value11 = try await count(target, "registrations")
        XCTAssertEqual(value11, 0)
    }

    func testAServerKeyInAFileWithoutServerKeysIsRefused() async throws {
        let target = try await sqlite("target")
        let key = #"{"createdAt":"2026-01-01T00:00:00.000Z","kind":"serverSecret","name":"passkey-decoys","secret":"AAAA"}"#
        let refusal = try await importRefusal(try file([key]), into: target)
        XCTAssertTrue(refusal.contains("a serverSecret record in a file whose header says it holds no server keys"), refusal)
    }

    func testAnotherFormatVersionIsRefused() async throws {
        let target = try await sqlite("target")
        let refusal = try await importRefusal(
            try file([Self.validRegistration], header: #"{"format":"mauth-export","serverKeys":false,"version":2}"#), into: target)
        XCTAssertTrue(refusal.contains("line 1: format version 2 is not one this mauth reads (1)"), refusal)
    }

    func testTimesRoundTripAtTheEdgesOfTheirRange() {
        for millis: Int64 in [0, 1, 951_782_400_000, 1_795_000_000_123, 4_107_542_399_999, 253_402_300_799_999] {
            XCTAssertEqual(RFC3339Millis.millis(RFC3339Millis.string(millis)), millis)
        }
        XCTAssertEqual(RFC3339Millis.string(951_782_400_000), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(RFC3339Millis.millis("2000-02-29T00:00:00Z"), 951_782_400_000)
        XCTAssertEqual(RFC3339Millis.millis("2000-02-29T00:00:00.5Z"), 951_782_400_500)
        XCTAssertNil(RFC3339Millis.millis("1900-02-29T00:00:00Z"))
        XCTAssertNil(RFC3339Millis.millis("2026-11-28T24:00:00Z"))
        XCTAssertNil(RFC3339Millis.millis("2026-11-28T16:23:15.1234Z"))
    }

    // MARK: - migration

    func testAMigrationToPostgreSQLIsVerifiedAndResumes() async throws {
        let target = try await postgres()
        let source = try await sqlite("source")
        try await Self.fill(source)
        let first = try await DatabaseTransfer.migrate(from: source, to: target)
        XCTAssertEqual(first["registration"], .init(inserted: 2, present: 0))
        let value12 = try await DatabaseTransfer.verify(source: source, target: target)["passkey"]
        XCTAssertEqual(value12, 3)
        // An interrupted run: the target lost the last pages. Run again, it copies only those.
        try await target.run { sql in try await sql.raw("DELETE FROM passkeys WHERE username = 'carol'").run() }
        let second = try await DatabaseTransfer.migrate(from: source, to: target)
        XCTAssertEqual(second["passkey"], .init(inserted: 1, present: 2))
        XCTAssertEqual(second["registration"], .init(inserted: 0, present: 2))
        let value13 = try await export(target).bytes
        let value14 = try await export(source).bytes
        XCTAssertEqual(value13, value14)
    }

    func testVerificationFindsARecordChangedOnTheTarget() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let target = try await sqlite("target")
        _ = try await DatabaseTransfer.migrate(from: source, to: target)
        try await target.run { sql in try await sql.raw("UPDATE passkeys SET sign_count = 99 WHERE username = 'carol'").run() }
        do {
            _ = try await DatabaseTransfer.verify(source: source, target: target)
            XCTFail("a changed counter was verified")
        } catch let mismatch as DatabaseTransfer.Mismatch {
            XCTAssertEqual(
                mismatch.description, "passkey: the source has 3 record(s), the target 3, with other values; the target is not a copy of the source")
        }
    }

    func testAMigrationStopsAtARecordTheTargetHoldsOtherwise() async throws {
        let source = try await sqlite("source")
        try await Self.fill(source)
        let target = try await sqlite("target")
        _ = try await Stores(database: target).authCloudUsers.findOrCreate(username: "alice", now: Self.now)
        do {
            _ = try await DatabaseTransfer.migrate(from: source, to: target)
            XCTFail("the migration went on")
        } catch let conflicts as DatabaseTransfer.Conflicts {
            XCTAssertEqual(conflicts.total, 1)
            XCTAssertTrue(conflicts.listed[0].contains(#"username "alice" already belongs to user"#), conflicts.description)
        }
        let value15 = try await count(target, "registrations")
        XCTAssertEqual(value15, 0)
    }

    // MARK: - an independent implementation of the format

    func testPythonReadsAnExportAndWritesAFileThisServerImports() async throws {
        if case .skipped(let why) = try ExternalTool.require("python3", probe: ["python3", Self.script, "--help"]) { throw XCTSkip(why) }
        let source = try await sqlite("source")
        try await Self.fill(source)
        let file = try await export(source)
        let checked = try ExternalProgram.run(["python3", Self.script, "check", file.path]).stdout
        XCTAssertTrue(checked.contains("ok: 14 records"), checked)
        // A bank's converter: Python writes a file from its own records; this server imports it.
        let converted = directory.appendingPathComponent("converted.jsonl").path
        let publicKey = Base64URL.encode(Array(P256.Signing.PrivateKey().publicKey.derRepresentation))
        _ = try ExternalProgram.run(["python3", Self.script, "write-example", converted, publicKey])
        let target = try await sqlite("target")
        let counts = try await DatabaseTransfer(database: target).importFile(path: converted)
        XCTAssertEqual(counts["registration"]?.inserted, 1)
        XCTAssertEqual(counts["dispatchTarget"]?.inserted, 1)
        let stored = try await Stores(database: target).registrations.registration(aaid: "F1D0#1001", keyID: "bank-key-1")
        XCTAssertEqual(stored?.username, "customer-4711")
        XCTAssertEqual(stored?.deviceId, "device-4711")
        XCTAssertEqual(stored?.signCounter, 17)
    }
}
