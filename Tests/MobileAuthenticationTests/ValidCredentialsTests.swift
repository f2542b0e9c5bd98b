import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// `onValidCredentialsProvided()`: told once, after the SDK accepted the credential, and never for a refusal.
final class ValidCredentialsTests: XCTestCase {
    var directory: URL!
    override func setUp() { directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-valid-\(UUID().uuidString)") }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    private func makeClient() async throws -> (any MobileAuthenticationClient, SimulatedPlatform) {
        let made = try await makeInMemoryClient(in: directory)
        return (made.client, made.platform)
    }

    private func registration(_ client: any MobileAuthenticationClient, _ aaid: AuthenticatorAaid) -> Registration {
        client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: aaid.rawValue))
    }

    func testAPinEnrollerIsToldOnceAfterThePolicyAcceptedAPin() async throws {
        let (client, _) = try await makeClient()
        let told = CallWitness()
        try await registration(client, .Pin).pinEnroller(WitnessedPinEnroller(told, pins: ["12", "123456"])).executeAsync()
        XCTAssertEqual(told.names, ["enrollPin", "enrollPin", "valid"])
    }

    func testAPinEnrollmentCancelledAfterAnInvalidPinIsNeverTold() async throws {
        let (client, _) = try await makeClient()
        let told = CallWitness()
        let error = await captureSDKError {
            try await self.registration(client, .Pin).pinEnroller(WitnessedPinEnroller(told, pins: ["12", nil])).executeAsync()
        }
        XCTAssertEqual((error as? OperationError)?.fidoErrorCode, .userCanceled)
        XCTAssertEqual(told.names, ["enrollPin", "enrollPin"])
    }

    func testAPinVerifierIsToldAfterTheRightPinOnly() async throws {
        let (client, _) = try await makeClient()
        try await registration(client, .Pin).pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        let told = CallWitness()
        _ = try await client.operations.authentication.username("alice").pinUserVerifier(WitnessedPinVerifier(told, pins: ["000000", "123456"]))
            .executeAsync()
        XCTAssertEqual(told.names, ["verifyPin", "verifyPin", "valid"])
    }

    func testAWrongPinThenCancelIsNeverTold() async throws {
        let (client, _) = try await makeClient()
        try await registration(client, .Pin).pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        let told = CallWitness()
        let error = await captureSDKError {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(WitnessedPinVerifier(told, pins: ["000000", nil]))
                .executeAsync()
        }
        XCTAssertEqual((error as? AuthenticationError)?.fidoErrorCode, .userCanceled)
        XCTAssertEqual(told.names, ["verifyPin", "verifyPin"])
    }

    func testPasswordEnrollerAndVerifierAreToldOnAcceptance() async throws {
        let (client, _) = try await makeClient()
        let enrolled = CallWitness()
        try await registration(client, .Password).passwordEnroller(WitnessedPasswordEnroller(enrolled, passwords: ["short", "correct horse 1"]))
            .executeAsync()
        XCTAssertEqual(enrolled.names, ["enrollPassword", "enrollPassword", "valid"], "the policy refused the first one")
        let verified = CallWitness()
        _ = try await client.operations.authentication.username("alice")
            .passwordUserVerifier(WitnessedPasswordVerifier(verified, passwords: ["correct horse 1"])).executeAsync()
        XCTAssertEqual(verified.names, ["verifyPassword", "valid"])
    }

    func testTheBiometricVerifierIsToldWhenTheOSVerified() async throws {
        let (client, platform) = try await makeClient()
        let told = CallWitness()
        try await registration(client, .FaceRecognition).biometricUserVerifier(WitnessedOSVerifier(told)).executeAsync()
        XCTAssertEqual(told.names, ["verifyBiometric", "valid"])
        platform.scriptOSPrompts([.failed])
        let refused = CallWitness()
        let error = await captureSDKError {
            _ = try await client.operations.authentication.username("alice").biometricUserVerifier(WitnessedOSVerifier(refused)).executeAsync()
        }
        XCTAssertEqual((error as? AuthenticationError)?.fidoErrorCode, .authenticatorAccessDenied)
        XCTAssertEqual(refused.names, ["verifyBiometric"], "the OS did not verify the user")
    }

    func testTheDevicePasscodeVerifierIsToldWhenTheOSVerified() async throws {
        let (client, _) = try await makeClient()
        let told = CallWitness()
        try await registration(client, .DevicePasscode).devicePasscodeUserVerifier(WitnessedOSVerifier(told)).executeAsync()
        XCTAssertEqual(told.names, ["verifyDevicePasscode", "valid"])
    }
}

private func captureSDKError(_ body: () async throws -> Void) async -> (any Error)? {
    do {
        try await body()
        return nil
    } catch { return error }
}
