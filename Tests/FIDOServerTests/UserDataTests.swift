import FIDOServerTesting
import FIDOSimulation
import Foundation
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The rules an operator's `mauth admin user` applies (`UserData`), on a server's own stores after real UAF flows.
final class UserDataTests: XCTestCase {
    func register(_ server: InProcessServer, _ username: String, aaid: String = "F1D0#1001") async throws -> SoftwareAuthenticator {
        var authenticator = SoftwareAuthenticator()
        authenticator.aaid = aaid
        let request = try await server.registrationRequest(username: username)
        let result = try await server.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: server.appID))
        XCTAssertEqual(result.statusCode, 1200)
        return authenticator
    }

    func logIn(_ server: InProcessServer, _ username: String, _ authenticator: inout SoftwareAuthenticator) async throws {
        let (_, request) = try await server.authenticationRequest(username: username)
        let result = try await server.send(
            "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(request), serverAppID: server.appID))
        XCTAssertEqual(result.statusCode, 1200)
    }

    static func target(_ id: String, username: String) -> DispatchTargetRecord {
        DispatchTargetRecord(
            id: id, extId: "ext-\(id)", username: username, name: "phone \(id)", deviceId: "device-\(id)", dispatcher: "firebase-cloud-messaging",
            target: "push", signatureKey: "{}", encryptionKey: nil, createdAt: Date(), updatedAt: Date())
    }

    func testTheSummaryListsKeysLiveSessionsTargetsAndOutstandingRequestsOfThatUserOnly() async throws {
        try await InProcessServer.with { server in
            let stores = server.server.stores
            var first = try await register(server, "alice")
            let second = try await register(server, "alice", aaid: "F1D0#1005")
            try await logIn(server, "alice", &first)
            _ = try await register(server, "bob")
            _ = try await stores.dispatchTargets.insert(Self.target("t-alice", username: "alice"))
            _ = try await stores.dispatchTargets.insert(Self.target("t-bob", username: "bob"))
            _ = try await server.registrationRequest(username: "alice")  // left unanswered

            let summary = try await UserData.summary(stores, username: "alice", now: server.clock.now)
            XCTAssertEqual(summary.registrations.map(\.aaid).sorted(), ["F1D0#1001", "F1D0#1005"])
            // A registration opens a session as a login does: two registrations and a login, none of bob's.
            XCTAssertEqual(summary.sessions.map(\.credential.id), [first, second, first].map { Base64URL.encode($0.keyID) })
            XCTAssertEqual(summary.targets.map(\.id), ["t-alice"])
            XCTAssertEqual(summary.outstandingRequests, 1)
            // An expired session is not live.
            server.clock.advance(TimeInterval(ServerConfiguration.Tokens().sessionLifetimeSeconds + 1))
            let later = try await UserData.summary(stores, username: "alice", now: server.clock.now)
            XCTAssertEqual(later.sessions, [])
        }
    }

    func testErasingAUserLeavesNothingThatCouldActForHerAndNothingOfOthers() async throws {
        try await InProcessServer.with { server in
            let stores = server.server.stores
            var key = try await register(server, "alice")
            try await logIn(server, "alice", &key)
            _ = try await stores.dispatchTargets.insert(Self.target("t-alice", username: "alice"))
            let pending = try await server.registrationRequest(username: "alice")
            let bob = try await register(server, "bob")

            let erased = try await UserData.erase(stores, username: "alice", now: server.clock.now)
            // Two sessions: the registration's and the login's.
            XCTAssertEqual(erased, UserData.Erased(registrations: 1, passkeys: 0, sessions: 2, targets: 1, dispatchTokens: 0, requests: 1))
            let left = try await UserData.summary(stores, username: "alice", now: server.clock.now)
            XCTAssertTrue(left.isEmpty, "\(left)")
            // The registration request issued before the erasure enrols nothing now.
            let late = try await server.send(
                "/nevisfido/uaf/1.1/registration", try SoftwareAuthenticator().register(pending, serverAppID: server.appID))
            XCTAssertNotEqual(late.statusCode, 1200)
            let after = try await stores.registrations.registrations(username: "alice")
            XCTAssertEqual(after, [])
            let bobsKeys = try await stores.registrations.registrations(username: "bob")
            XCTAssertEqual(bobsKeys.map(\.keyID), [Base64URL.encode(bob.keyID)])
        }
    }

    func testRemovingTheLastKeyEndsEverySessionOfTheUser() async throws {
        try await InProcessServer.with { server in
            let stores = server.server.stores
            var key = try await register(server, "alice")
            try await logIn(server, "alice", &key)
            // A session opened otherwise than by this key (an Auth Cloud or demo login) ends with her last key too.
            _ = try await stores.sessions.create(
                username: "alice", credential: .uaf(aaid: "F1D0#1005", keyID: "other"), now: server.clock.now, lifetime: 600)
            let removed = try await UserData.removeRegistrations(
                from: stores.registrations, endingSessionsIn: stores.sessions, username: "alice", keyIDs: [Base64URL.encode(key.keyID)],
                now: server.clock.now)
            XCTAssertEqual(removed.count, 1)
            let sessions = try await stores.sessions.live(username: "alice", now: server.clock.now)
            XCTAssertEqual(sessions, [])
        }
    }
}
