import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import NIOConcurrencyHelpers
import XCTest

/// The app's HTTP trace hook over a real login: secrets are redacted unless the app opts in.
final class HTTPTraceTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    /// Every body the hook saw during a registration and a login, as text.
    func tracedLogin(secrets: HTTPTraceSecrets?) async throws -> (bodies: String, token: String) {
        let seen = NIOLockedValueBox([String]())
        let record: @Sendable (HTTPTraceEvent) -> Void = { event in
            seen.withLockedValue {
                $0.append(String(decoding: event.requestBody ?? Data(), as: UTF8.self) + String(decoding: event.responseBody, as: UTF8.self))
            }
        }
        let client = try await env.client { initializer in
            if let secrets { initializer.httpTrace(secrets: secrets, record) } else { initializer.httpTrace(record) }
        }
        try await client.register("alice")
        let provider = try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        let jwt = try XCTUnwrap(provider as? JwtAuthorizationProvider).jwt
        return (seen.withLockedValue { $0.joined(separator: "\n") }, jwt)
    }

    func testTheTraceHidesTheSessionJWTByDefault() async throws {
        let (bodies, jwt) = try await tracedLogin(secrets: nil)
        XCTAssertFalse(bodies.contains(jwt), "the session JWT reached the trace hook")
        XCTAssertTrue(bodies.contains("[redacted]"))
        XCTAssertTrue(bodies.contains("uafResponse"), "the protocol messages stay visible")
    }

    func testTheTraceShowsSecretsOnlyWhenTheAppOptsIn() async throws {
        let (bodies, jwt) = try await tracedLogin(secrets: .included)
        XCTAssertTrue(bodies.contains(jwt))
    }
}
