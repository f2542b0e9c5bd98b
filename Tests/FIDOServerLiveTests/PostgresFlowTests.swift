import FIDOServerTesting
import FIDOSimulation
import Foundation
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Logins over HTTPS against a server on a real PostgreSQL, where consuming a step-up request also reads its user's
/// registrations (one statement): the key the verifier needs comes from there, and any other key is looked up as
/// before. Usernames are fresh per test, since the database is shared with the store suite.
final class PostgresFlowTests: XCTestCase {
    var loopback: LoopbackServer!
    var appID: String { loopback.server.appID }
    let suffix = String(UUID().uuidString.prefix(8))

    override func setUp() async throws {
        let url = try PostgresStoreTests.postgresURL()
        loopback = try await LoopbackServer(configuration: LoopbackServer.configuration(database: .postgres(url: url, poolSize: 4)))
    }

    override func tearDown() async throws { try await loopback?.shutdown() }

    func register(_ authenticator: SoftwareAuthenticator, username: String) async throws {
        let request = try await loopback.registrationRequest(username: username)
        let answer = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: appID))
        XCTAssertEqual(answer.statusCode, 1200, answer.description ?? "")
    }

    func testAStepUpLoginIsVerifiedWithTheKeyReadAlongWithTheRequestAndCannotBeReplayed() async throws {
        var authenticator = SoftwareAuthenticator()
        try await register(authenticator, username: "ann-\(suffix)")
        try await register(SoftwareAuthenticator(), username: "ann-\(suffix)")
        let (_, request) = try await loopback.authenticationRequest(username: "ann-\(suffix)")
        let response = try authenticator.authenticate(try XCTUnwrap(request), serverAppID: appID)
        let result = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
        XCTAssertEqual(result.statusCode, 1200, result.description ?? "")
        let stored = try await loopback.server.stores.registrations.registration(
            aaid: authenticator.aaid, keyID: Base64URL.encode(authenticator.keyID))
        XCTAssertEqual(stored?.signCounter, 1)
        let replay = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
        XCTAssertEqual(replay.statusCode, 1491)
    }

    func testAnotherUsersKeyAnsweringAStepUpRequestIs1401NotAnUnknownKey() async throws {
        try await register(SoftwareAuthenticator(), username: "ann-\(suffix)")
        var bobs = SoftwareAuthenticator()
        try await register(bobs, username: "bob-\(suffix)")
        let (_, request) = try await loopback.authenticationRequest(username: "ann-\(suffix)")
        let result = try await loopback.send("/nevisfido/uaf/1.1/authentication", try bobs.authenticate(try XCTUnwrap(request), serverAppID: appID))
        XCTAssertEqual(result.statusCode, 1401, result.description ?? "")
    }

    func testALoginWithoutAUsernameLooksItsKeyUp() async throws {
        var authenticator = SoftwareAuthenticator()
        try await register(authenticator, username: "cy-\(suffix)")
        let (_, request) = try await loopback.authenticationRequest(username: nil)
        let result = try await loopback.send(
            "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(request), serverAppID: appID))
        XCTAssertEqual(result.statusCode, 1200, result.description ?? "")
    }
}
