import Dispatch
import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// A PIN prompt shown during a cool-down gives the user the interaction timeout plus the cool-down still to run
/// (seed 000: the user must be able to wait it out), and only a prompt without one times out at the plain timeout.
final class CoolDownTimeoutTests: XCTestCase {
    var directory: URL!
    override func setUp() { directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-cooldown-\(UUID().uuidString)") }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// Answers three wrong PINs at once, then, on the prompt that shows the 60 s cool-down, waits it out (the
    /// simulated clock moves 60 s) and answers the right PIN `delay` seconds later in real time.
    final class WaitingVerifier: PinUserVerifier, @unchecked Sendable {
        let platform: SimulatedPlatform
        let delay: TimeInterval
        private let lock = NSLock()
        private(set) var statuses: [PinAuthenticatorProtectionStatus] = []
        init(platform: SimulatedPlatform, delay: TimeInterval) {
            self.platform = platform
            self.delay = delay
        }

        func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
            let status = context.authenticatorProtectionStatus
            let count = lock.withLock {
                statuses.append(status)
                return statuses.count
            }
            guard count > 3 else { return handler.verify("000000") }
            platform.advanceClock(by: 61)
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { handler.verify("123456") }
        }
    }

    func authenticate(timeout: Int, delay: TimeInterval) async throws -> (Result<Void, AuthenticationError>, [PinAuthenticatorProtectionStatus]) {
        let (client, _, platform) = try await makeInMemoryClient(in: directory, interactionTimeout: timeout)
        try await client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1001")).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .executeAsync()
        let verifier = WaitingVerifier(platform: platform, delay: delay)
        let result: Result<Void, AuthenticationError>
        do {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(verifier).executeAsync()
            result = .success(())
        } catch { result = .failure(error) }
        await client.shutdown()
        return (result, verifier.statuses)
    }

    func testAnAnswerAfterTheTimeoutButWithinTheCoolDownIsTaken() async throws {
        let (result, statuses) = try await authenticate(timeout: 1, delay: 2)
        XCTAssertEqual(statuses.last, .LastAttemptFailed(remainingTries: 2, coolDownTimeInSeconds: 60))
        if case .failure(let error) = result { XCTFail("the user waited out the cool-down and answered: \(error)") }
    }

    func testWithoutACoolDownTheSameWaitTimesOut() async throws {
        let (client, _, _) = try await makeInMemoryClient(in: directory, interactionTimeout: 1)
        try await client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1001")).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .executeAsync()
        final class Late: PinUserVerifier, @unchecked Sendable {
            func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
                DispatchQueue.global().asyncAfter(deadline: .now() + 2) { handler.verify("123456") }
            }
        }
        do {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(Late()).executeAsync()
            XCTFail("an answer after the timeout, without a cool-down, must not be taken")
        } catch {
            XCTAssertEqual(error.fidoErrorCode, .userNotResponsive)
        }
        await client.shutdown()
    }
}
