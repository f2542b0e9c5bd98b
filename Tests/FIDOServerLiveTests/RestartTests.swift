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

/// A registration answered 1200 is still there after the server restarts on the same SQLite file.
final class RestartTests: XCTestCase {
    func testRegistrationsSurviveARestartOnTheSQLiteFile() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-db-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("server.sqlite").path
        let first = try await LoopbackServer(configuration: LoopbackServer.configuration(database: .sqlite(path: path)))
        let authenticator = SoftwareAuthenticator()
        let request = try await first.registrationRequest(username: "carol")
        let status = try await first.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: first.server.appID))
            .statusCode
        XCTAssertEqual(status, 1200)
        try await first.shutdown()

        let stores = Stores(database: try await StoreDatabase.open(.sqlite(path: path)))
        let stored = try await stores.registrations.registrations(username: "carol")
        try await stores.database.close()
        XCTAssertEqual(stored.map(\.keyID), [Base64URL.encode(authenticator.keyID)])
        XCTAssertEqual(stored.first?.publicKeyEncoding, .eccX962DER)
    }
}
