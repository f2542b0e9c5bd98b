import FIDOServerTesting
import FIDOSimulation
import Foundation
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// No anonymous lever on a user's budget of outstanding requests: only requests asked for by a caller who may act
/// for the user count against `limits.outstandingRequestsPerUsername`.
final class HostileClientLockOutTests: XCTestCase {
    static let stepUp = "/nevisfido/uaf/1.1/request/authentication"

    static func stepUpRequest(_ username: String) throws -> GetUAFRequest {
        GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": username]))
    }

    static func stepUpBody(_ username: String) throws -> Data { try JSONEncoder().encode(try stepUpRequest(username)) }

    /// alice with one registered key, on a server whose cap is 2.
    static func withAlice(_ body: (InProcessServer, SoftwareAuthenticator) async throws -> Void) async throws {
        var configuration = InProcessServer.configuration()
        configuration.limits.outstandingRequestsPerUsername = 2
        try await InProcessServer.with(configuration) { loopback in
            var authenticator = SoftwareAuthenticator()
            let request = try await loopback.registrationRequest(username: "alice")
            let registered = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(registered.statusCode, 1200)
            try await body(loopback, authenticator)
        }
    }

    func testAnonymousStepUpRequestsDoNotUseUpTheUsersBudget() async throws {
        try await Self.withAlice { loopback, authenticator in
            var authenticator = authenticator
            for _ in 0..<6 {
                let answer = try await loopback.post(Self.stepUp, Self.stepUpRequest("alice"), as: ReturnUAFRequest.self)
                XCTAssertEqual(answer.statusCode, 1200)
            }
            // alice can still register another key and log in.
            _ = try await loopback.registrationRequest(username: "alice")
            let (_, request) = try await loopback.authenticationRequest(username: "alice")
            let login = try await loopback.send(
                "/nevisfido/uaf/1.1/authentication",
                try authenticator.authenticate(try XCTUnwrap(request), serverAppID: loopback.server.appID))
            XCTAssertEqual(login.statusCode, 1200)
        }
    }

    func testAStepUpRequestFromACallerForTheUserCountsAgainstTheCap() async throws {
        try await Self.withAlice { loopback, _ in
            let headers = try await loopback.bearer("alice")
            var statuses: [Int] = []
            for _ in 0..<3 {
                statuses.append(try await loopback.exchange(.POST, Self.stepUp, body: try Self.stepUpBody("alice"), headers: headers).status)
            }
            XCTAssertEqual(statuses, [200, 200, 429])
        }
    }

    func testAStepUpRequestFromACallerForAnotherUserCountsAgainstNobody() async throws {
        try await Self.withAlice { loopback, _ in
            let headers = try await loopback.bearer("mallory")
            for _ in 0..<3 {
                let answer = try await loopback.exchange(.POST, Self.stepUp, body: try Self.stepUpBody("alice"), headers: headers)
                XCTAssertEqual(answer.status, 200)
            }
            _ = try await loopback.registrationRequest(username: "alice")
        }
    }
}
