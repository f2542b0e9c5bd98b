import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import UAF
import XCTest

/// The SDK's deregistration against a real server: authorized by the session a prior authentication returned,
/// local data removed only after the server answered.
final class DeregistrationFlowTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    func testAuthenticationHandsOutAProviderThatDeregistersTheUser() async throws {
        let client = try await env.client()
        try await client.register("alice")
        let provider = try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        let authorization = try XCTUnwrap(provider)
        XCTAssertTrue(authorization is JwtAuthorizationProvider)

        try await client.operations.deregistration.username("alice").authorizationProvider(authorization).executeAsync()
        XCTAssertEqual(client.localData.accounts.map(\.username), [])
        XCTAssertFalse(client.localData.authenticators.contains { $0.registration.isRegistered("alice") })
        let stored = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(stored, [])
        // Nothing left to authenticate with on the device.
        let error = await captureError { try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"])) }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .noSuitableAuthenticator, "\(String(describing: error))")
    }

    func testDeregistrationByAAIDRemovesThatAuthenticator() async throws {
        let client = try await env.client()
        try await client.register("bob")
        let provider = try await client.authenticate("bob", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        try await client.operations.deregistration.username("bob").aaid(AuthenticatorAaid.Pin.rawValue)
            .authorizationProvider(try XCTUnwrap(provider)).executeAsync()
        XCTAssertEqual(client.localData.accounts.map(\.username), [])
        let stored = try await env.server.stores.registrations.registrations(username: "bob")
        XCTAssertEqual(stored, [])
    }

    func testARefusedDeregistrationChangesNothingOnTheDevice() async throws {
        let client = try await env.client()
        try await client.register("carol")
        let error = await captureError { try await client.operations.deregistration.username("carol").executeAsync() }
        guard case .NetworkError(let cause)? = error as? OperationError else {
            return XCTFail("expected a 401 NetworkError, got \(String(describing: error))")
        }
        XCTAssertEqual((cause as? ServerStatusError)?.httpStatus, 401)
        XCTAssertEqual(client.localData.accounts.map(\.username), ["carol"])
        let stored = try await env.server.stores.registrations.registrations(username: "carol")
        XCTAssertEqual(stored.count, 1)
        // The device still authenticates: its key and PIN were kept.
        try await client.authenticate("carol", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
    }

    func testARegistrationWithoutAuthorizationIsRefusedWithAClearCause() async throws {
        let client = try await env.client()
        let error = await captureError {
            try await client.operations.registration.username("dave").deviceInformation(DeviceInformation(name: "e2e device"))
                .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
                .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        }
        guard case .NetworkError(let cause)? = error as? OperationError else {
            return XCTFail("expected NetworkError, got \(String(describing: error))")
        }
        XCTAssertEqual((cause as? ServerStatusError)?.httpStatus, 401)
        XCTAssertTrue("\(cause!)".contains("authorizationProvider"))
        XCTAssertEqual(client.localData.accounts.map(\.username), [])
    }
}
