import FIDOServerTesting
import FIDOSimulation
import Foundation
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The audit trail over real HTTPS: the client's address is the TCP peer's, which only a socket has.
final class AuditLiveTests: XCTestCase {
    func testADecisionIsRecordedWithThePrincipalTheClientAndTheRequestID() async throws {
        try await LoopbackServer.with { server in
            let context = try UAFMessageCodec.encodeObject(["username": "alice"])
            let answer = try await server.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try JSONEncoder().encode(GetUAFRequest(op: .registration, context: context)),
                headers: try await server.bearer("alice") + [("X-Request-Id", "audit-test-1")])
            XCTAssertEqual(answer.status, 200)
            let event = try await Self.waitForEvent(server.server.stores) { $0.requestID == "audit-test-1" }
            XCTAssertEqual(event.principal, "relying-party:alice")
            XCTAssertEqual(event.clientAddress, "127.0.0.1")
            XCTAssertEqual(event.operation, "registration request")
            XCTAssertEqual(event.username, "alice")
            XCTAssertEqual(event.statusCode, 1200)
        }
    }

    func testARefusedCredentialIsAudited() async throws {
        try await LoopbackServer.with { server in
            let context = try UAFMessageCodec.encodeObject(["username": "alice"])
            let answer = try await server.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try JSONEncoder().encode(GetUAFRequest(op: .registration, context: context)),
                headers: [("Authorization", "Bearer not.a.token"), ("X-Request-Id", "audit-test-2")])
            XCTAssertEqual(answer.status, 401)
            let event = try await Self.waitForEvent(server.server.stores) { $0.requestID == "audit-test-2" }
            XCTAssertEqual(event.operation, "authorization")
            XCTAssertEqual(event.statusCode, 401)
            XCTAssertNil(event.principal)
            XCTAssertEqual(event.clientAddress, "127.0.0.1")
        }
    }

    func testAVerifiedLoginIsKeptWhileAnAnonymousCallersOtherEventsAreBudgeted() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.observability.auditAnonymousEventsPerMinute = 0
        try await LoopbackServer.with(configuration) { server in
            var authenticator = SoftwareAuthenticator()
            let registration = try await server.registrationRequest(username: "alice")
            let registered = try await server.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(registration, serverAppID: server.appID))
            XCTAssertEqual(registered.statusCode, 1200)
            let (_, request) = try await server.authenticationRequest(username: "alice")
            let answer = try await server.send(
                "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(request), serverAppID: server.appID))
            XCTAssertEqual(answer.statusCode, 1200)
            let login = try await Self.waitForEvent(server.server.stores) { $0.operation == "authentication" }
            XCTAssertNil(login.principal)
            XCTAssertEqual(login.username, "alice")
            let stored = try await server.server.stores.audit.events(username: "alice", limit: 100).map(\.operation)
            XCTAssertTrue(stored.contains("registration request"), "the relying party's request has a credential: \(stored)")
            XCTAssertFalse(stored.contains("authentication request"), "the anonymous request is over the budget of 0: \(stored)")
        }
    }

    struct NoEvent: Error, CustomStringConvertible { var description: String { "no such audit event within 5 s" } }

    /// The running server writes its queue every second: waits up to 5 s for an event.
    static func waitForEvent(_ stores: Stores, where matches: (AuditEvent) -> Bool) async throws -> AuditEvent {
        var found: AuditEvent?
        _ = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
            found = try await stores.audit.events(limit: 100).first(where: matches)
            return found != nil
        }
        guard let found else { throw NoEvent() }
        return found
    }
}
