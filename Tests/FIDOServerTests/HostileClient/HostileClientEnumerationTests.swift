import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// A caller without credentials for a user learns nothing of her from the open endpoints: a step-up request and an
/// authentication dispatch that name her answer alike whether she has keys or not, and offer none of her key IDs.
/// The relying party, who may act for her, still gets her keys (and 1404 when she has none).
final class HostileClientEnumerationTests: XCTestCase {
    static let strong = NamedPolicyTests.configuration(["strong": .init(authentication: NamedPolicyTests.fingerprint)])

    /// alice with a PIN key; her authenticator.
    static func registerAlice(_ loopback: InProcessServer) async throws -> SoftwareAuthenticator {
        let pin = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        let registered = try await loopback.send("/nevisfido/uaf/1.1/registration", try pin.register(request, serverAppID: loopback.appID))
        XCTAssertEqual(registered.statusCode, 1200)
        return pin
    }

    static func hasKeyIDs(_ policy: Policy?) -> Bool {
        policy?.accepted.contains { $0.contains { $0.keyIDs != nil } } ?? false
    }

    func testAnAnonymousStepUpAnswersARegisteredAndAnUnknownUserAlike() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registerAlice(loopback)
            let (alices, alice) = try await loopback.authenticationRequest(username: "alice")
            let (nobodys, nobody) = try await loopback.authenticationRequest(username: "nobody")
            XCTAssertEqual(alices.statusCode, 1200)
            XCTAssertEqual(nobodys.statusCode, 1200, "a user without keys is told apart")
            XCTAssertEqual(alice?.policy, nobody?.policy)
            XCTAssertFalse(Self.hasKeyIDs(alice?.policy), "an anonymous caller is shown the user's key IDs")
        }
    }

    func testAnAnonymousStepUpUnderANamedPolicyAnswersAUserWithoutAFittingKeyAlike() async throws {
        try await InProcessServer.with(Self.strong) { loopback in
            _ = try await Self.registerAlice(loopback)  // a PIN key: not one "strong" accepts
            let (alices, alice) = try await loopback.authenticationRequest(username: "alice", policy: "strong")
            let (nobodys, nobody) = try await loopback.authenticationRequest(username: "nobody", policy: "strong")
            XCTAssertEqual(alices.statusCode, 1200, "a user without a key the policy accepts is told apart")
            XCTAssertEqual(nobodys.statusCode, 1200)
            XCTAssertEqual(alice?.policy, nobody?.policy)
            XCTAssertEqual(alice?.policy.accepted, [[MatchCriteria(aaid: ["F1D0#1002"])]])
        }
    }

    func testAnAnonymousStepUpStillLogsInOnlyTheUserItNames() async throws {
        try await InProcessServer.with { loopback in
            var alice = try await Self.registerAlice(loopback)
            let (_, offered) = try await loopback.authenticationRequest(username: "alice")
            let loggedIn = try await loopback.send(
                "/nevisfido/uaf/1.1/authentication", try alice.authenticate(try XCTUnwrap(offered), serverAppID: loopback.appID))
            XCTAssertEqual(loggedIn.statusCode, 1200, loggedIn.description ?? "")
            // Her key answering a step-up for another user is refused: the policy no longer names keys, the user does.
            let (_, forBob) = try await loopback.authenticationRequest(username: "bob")
            let asBob = try await loopback.send(
                "/nevisfido/uaf/1.1/authentication", try alice.authenticate(try XCTUnwrap(forBob), serverAppID: loopback.appID))
            XCTAssertEqual(asBob.statusCode, 1401, asBob.description ?? "")
            XCTAssertFalse(asBob.additionalTokens?.isEmpty == false, "a session was opened for bob with alice's key")
        }
    }

    func testTheRelyingPartyStillGetsTheUsersKeysAnd1404ForAUserWithout() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registerAlice(loopback)
            let (_, alice) = try await loopback.authenticationRequest(username: "alice", headers: try await loopback.bearer("alice"))
            XCTAssertTrue(Self.hasKeyIDs(alice?.policy))
            let (nobody, _) = try await loopback.authenticationRequest(username: "nobody", headers: try await loopback.bearer("nobody"))
            XCTAssertEqual(nobody.statusCode, 1404)
        }
    }

    /// An anonymous dispatch of an authentication for `username` by link; the redeemed request.
    static func dispatchedRequest(_ loopback: InProcessServer, username: String) async throws -> (result: String, request: AuthenticationRequest?) {
        struct Body: Encodable {
            var dispatcher: String
            var getUafRequest: GetUAFRequest
        }
        struct Answer: Decodable {
            var dispatchResult: String
            var token: String?
        }
        let get = GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": username]))
        let answer = try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/authentication", body: try JSONEncoder().encode(Body(dispatcher: "link", getUafRequest: get)),
            contentType: "application/json")
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        let dispatched = try JSONDecoder().decode(Answer.self, from: answer.body)
        guard let token = dispatched.token else { return (dispatched.dispatchResult, nil) }
        let redeemed = try await loopback.post("/nevisfido/token/redeem/authentication", ["token": token], as: ReturnUAFRequest.self)
        XCTAssertEqual(redeemed.statusCode, 1200)
        return (dispatched.dispatchResult, try redeemed.uafRequest.map { try UAFMessageCodec.decode(AuthenticationRequest.self, from: $0)[0] })
    }

    func testAnAnonymousAuthenticationDispatchAnswersARegisteredAndAnUnknownUserAlike() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registerAlice(loopback)
            let alice = try await Self.dispatchedRequest(loopback, username: "alice")
            let nobody = try await Self.dispatchedRequest(loopback, username: "nobody")
            XCTAssertEqual(alice.result, "dispatched")
            XCTAssertEqual(nobody.result, "dispatched", "a user without keys is told apart")
            XCTAssertEqual(alice.request?.policy, nobody.request?.policy)
            XCTAssertFalse(Self.hasKeyIDs(alice.request?.policy), "redeeming an anonymous dispatch shows the user's key IDs")
        }
    }
}
