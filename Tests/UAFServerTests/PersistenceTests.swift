import Foundation
import UAF
import XCTest
@testable import UAFServer

final class PersistenceTests: XCTestCase {
    func testRegistrationsSurviveARestartOnTheSQLiteFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("server.sqlite").path
        let configuration = ServerConfiguration(database: .sqlite(path: path))

        let first = try await LoopbackServer(configuration: configuration)
        let authenticator = SoftwareAuthenticator()
        let request = try await first.registrationRequest(username: "carol")
        do { let status = try await first.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: first.server.appID)).statusCode; XCTAssertEqual(status, 1200) }
        try await first.shutdown()

        let repository = try await SQLiteRepository.open(.sqlite(path: path))
        let stored = try await repository.registrations(username: "carol")
        try await repository.close()
        XCTAssertEqual(stored.map(\.keyID), [Base64URL.encode(authenticator.keyID)])
        XCTAssertEqual(stored.first?.publicKeyEncoding, .eccX962DER)
    }

    func testAChallengeIsConsumedOnlyOnceEvenUnderConcurrency() async throws {
        let repository = try await SQLiteRepository.open(.sqliteInMemory)
        let record = ChallengeRecord(id: "id-1", operation: .authentication, challenge: "c", username: nil,
                                     policy: Policy(accepted: []), transactions: [], expiresAt: Date().addingTimeInterval(60))
        try await repository.insertChallenge(record)
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<20 { group.addTask { try await repository.consumeChallenge(id: "id-1") != nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        XCTAssertEqual(winners, 1)
        try await repository.close()
    }

    func testExpiredChallengesArePurgedAndLiveOnesKept() async throws {
        let repository = try await SQLiteRepository.open(.sqliteInMemory)
        let now = Date()
        for (id, offset) in [("old-1", -10.0), ("old-2", -1.0), ("live", 60.0)] {
            try await repository.insertChallenge(ChallengeRecord(id: id, operation: .registration, challenge: "c", username: "u",
                                                                 policy: Policy(accepted: []), transactions: [], expiresAt: now.addingTimeInterval(offset)))
        }
        let purged = try await repository.purgeChallenges(expiredBefore: now)
        let live = try await repository.consumeChallenge(id: "live")
        let old = try await repository.consumeChallenge(id: "old-1")
        XCTAssertEqual(purged, 2)
        XCTAssertNotNil(live)
        XCTAssertNil(old)
        try await repository.close()
    }

    func testCounterUpdateIsCompareAndSet() async throws {
        let repository = try await SQLiteRepository.open(.sqliteInMemory)
        try await repository.insertRegistrations([RegistrationRecord(
            username: "u", aaid: "F1D0#1001", keyID: "k", publicKey: [1], publicKeyEncoding: .eccX962DER,
            signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
            attestationType: .basicSurrogate, createdAt: Date())])
        let first = try await repository.updateSignCounter(aaid: "f1d0#1001", keyID: "k", from: 0, to: 1)
        let stale = try await repository.updateSignCounter(aaid: "F1D0#1001", keyID: "k", from: 0, to: 2)
        XCTAssertTrue(first)
        XCTAssertFalse(stale)
        do {
            try await repository.insertRegistrations([RegistrationRecord(
                username: "other", aaid: "F1D0#1001", keyID: "k", publicKey: [2], publicKeyEncoding: .eccX962DER,
                signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
                attestationType: .basicSurrogate, createdAt: Date())])
            XCTFail("duplicate must be rejected")
        } catch let error as RepositoryError {
            XCTAssertEqual(error, .duplicateRegistration)
        }
        try await repository.close()
    }

    func testDefaultMetadataHasEveryNevisAAID() throws {
        let metadata = try ServerConfiguration().loadMetadata()
        XCTAssertEqual(metadata.all.map(\.aaid), ["F1D0#0001", "F1D0#0002", "F1D0#0003", "F1D0#0004", "F1D0#0005",
                                                  "F1D0#1001", "F1D0#1002", "F1D0#1003", "F1D0#1004", "F1D0#1005"])
        let pin = try XCTUnwrap(metadata.statement(for: "F1D0#1001"))
        XCTAssertEqual(pin.supportedAlgorithms, [.secp256r1ECDSASHA256DER])
        XCTAssertEqual(pin.supportedKeyEncodings, [.eccX962DER])
        let android = try XCTUnwrap(metadata.statement(for: "F1D0#0001"))
        XCTAssertEqual(android.supportedAlgorithms, [.secp256r1ECDSASHA256DER, .rsaEMSAPKCS1SHA256DER])
    }

    func testConfigurationFileAndEnvironmentOverrides() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"port": 8443, "facets": ["ios:bundle-id:a"], "database": ":memory:", "unknownKey": 1}"#.utf8).write(to: file)
        let configuration = try ServerConfiguration.load(path: file.path, environment: ["MAUTH_PORT": "9443"])
        XCTAssertEqual(configuration.port, 9443)
        XCTAssertEqual(configuration.facets, ["ios:bundle-id:a"])
        XCTAssertEqual(configuration.database, .sqliteInMemory)
        XCTAssertThrowsError(try ServerConfiguration.load(path: nil, environment: ["MAUTH_PORT": "http"]))
        try Data(#"{"port": "eighty"}"#.utf8).write(to: file)
        XCTAssertThrowsError(try ServerConfiguration.load(path: file.path, environment: [:]))
    }
}
