import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The app chooses `context.policy`; the relying party must see which policy a login was held to, or an app (or
/// anyone who drives the open endpoints) could log in under a weaker one than the relying party requires.
final class HostileClientPolicyClaimTests: XCTestCase {
    /// The payload members of the JWT a login answered with.
    static func claims(_ answer: ServerResponse) throws -> [String: Any] {
        let jwt = try XCTUnwrap(answer.additionalTokens?.first { $0.type == .jwt }?.value)
        let payload = try XCTUnwrap(Base64URL.decode(String(jwt.split(separator: ".")[1])))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
    }

    static func login(_ loopback: InProcessServer, policy: String?) async throws -> ServerResponse {
        var pin = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        let registered = try await loopback.send("/nevisfido/uaf/1.1/registration", try pin.register(request, serverAppID: loopback.appID))
        XCTAssertEqual(registered.statusCode, 1200)
        let (_, offered) = try await loopback.authenticationRequest(username: "alice", policy: policy)
        return try await loopback.send("/nevisfido/uaf/1.1/authentication", try pin.authenticate(try XCTUnwrap(offered), serverAppID: loopback.appID))
    }

    func testALoginUnderANamedPolicyNamesItInItsToken() async throws {
        let configuration = NamedPolicyTests.configuration(["pin": .init(authentication: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]]))])
        try await InProcessServer.with(configuration) { loopback in
            let answer = try await Self.login(loopback, policy: "pin")
            XCTAssertEqual(answer.statusCode, 1200, answer.description ?? "")
            XCTAssertEqual(try Self.claims(answer)["policy"] as? String, "pin", "the token does not say which policy the login satisfied")
        }
    }

    func testALoginUnderTheDefaultSetNamesDefault() async throws {
        let configuration = NamedPolicyTests.configuration([
            "default": .init(authentication: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]]))
        ])
        try await InProcessServer.with(configuration) { loopback in
            let answer = try await Self.login(loopback, policy: nil)
            XCTAssertEqual(try Self.claims(answer)["policy"] as? String, "default")
        }
    }

    func testALoginUnderTheBuiltInPolicyHasNoPolicyClaim() async throws {
        try await InProcessServer.with { loopback in
            let answer = try await Self.login(loopback, policy: nil)
            XCTAssertEqual(answer.statusCode, 1200)
            XCTAssertNil(try Self.claims(answer)["policy"])
        }
    }
}
