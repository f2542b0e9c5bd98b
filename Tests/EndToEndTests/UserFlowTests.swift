import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import UAF
import XCTest

final class UserFlowTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    func testRegisterThenAuthenticateWithAPin() async throws {
        let client = try await env.client()
        let enroller = ScriptedPinEnroller(pins: ["123456"])
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        try await client.operations.registration.username("alice").authenticatorSelector(selector)
            .authorizationProvider(try await relyingPartyAuthorization("alice"))
            .deviceInformation(DeviceInformation(name: "test phone")).pinEnroller(enroller).executeAsync()
        XCTAssertEqual(client.localData.accounts.map(\.username), ["alice"])
        XCTAssertEqual(client.localData.accounts.first?.server.baseUrl, env.server.baseURL)
        XCTAssertEqual(client.localData.deviceInformation?.name, "test phone")
        XCTAssertEqual(client.localData.deviceInformation?.idUsernamePairs.map(\.username), ["alice"])
        let pin = try XCTUnwrap(client.localData.authenticators.first { $0.aaid == AuthenticatorAaid.Pin.rawValue })
        XCTAssertTrue(pin.registration.isRegistered("alice"))
        XCTAssertTrue(selector.shownContexts.first?.isPolicyCompliant(authenticatorAaid: "F1D0#1001") ?? false)
        XCTAssertFalse(selector.shownContexts.first?.isPolicyCompliant(authenticatorAaid: "F1D0#1002") ?? true)

        let verifier = ScriptedPinUserVerifier(pins: ["123456"])
        try await client.authenticate("alice", verifier: verifier)
        XCTAssertEqual(verifier.shownContexts.map(\.authenticatorProtectionStatus), [.Unlocked])
        // The server advanced the counter.
        let stored = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(stored.first?.signCounter, 1)
        // Usernameless authentication works with one account on the device.
        try await client.authenticate(nil, verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        let again = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(again.first?.signCounter, 2)
    }

    func testTheSDKAnswersTheUAF11MessageOfAServerSpeakingEveryVersion() async throws {
        try await env.shutdown()
        env = try await Environment(acceptedVersions: ["1.0", "1.1", "1.2"])
        let client = try await env.client()
        try await client.operations.registration.username("alice").authenticatorSelector(
            ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        )
        .authorizationProvider(try await relyingPartyAuthorization("alice"))
        .deviceInformation(DeviceInformation(name: "test phone")).pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        let stored = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(stored.first?.signCounter, 1)
    }

    func testAnInvalidPinFormatIsRecoverableDuringEnrollment() async throws {
        let client = try await env.client()
        let enroller = ScriptedPinEnroller(pins: ["12", "abcdef", "654321"])
        try await client.authorizedRegistration("bob", choose: AuthenticatorAaid.Pin.rawValue)
            .pinEnroller(enroller).executeAsync()
        XCTAssertEqual(
            enroller.shownContexts.map(\.lastRecoverableError),
            [
                nil, .InvalidPinFormat(message: "The PIN must have exactly 6 digits."),
                .InvalidPinFormat(message: "The PIN must contain digits only."),
            ])
        try await client.authenticate("bob", verifier: ScriptedPinUserVerifier(pins: ["654321"]))
    }

    func testWrongPinsCoolDownAndLockOutAndTheLockSurvivesARestart() async throws {
        let client = try await env.client()
        try await client.register("carol")
        // Failures 1 and 2 have no cool-down: the verifier is asked again at once.
        let verifier = ScriptedPinUserVerifier(pins: ["000000", "111111", "123456"])
        try await client.authenticate("carol", verifier: verifier)
        XCTAssertEqual(
            verifier.shownContexts.map(\.authenticatorProtectionStatus),
            [
                .Unlocked, .LastAttemptFailed(remainingTries: 4, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 3, coolDownTimeInSeconds: 0),
            ])
        // A success resets the counter; now fail 3 times: the third failure imposes 60 s.
        let failing = ScriptedPinUserVerifier(pins: ["0", "000001", "000002", "000003", "123456", nil])
        do {
            try await client.authenticate("carol", verifier: failing)
            XCTFail("the attempt during the cool-down must not be accepted")
        } catch {
            XCTAssertEqual(fidoCode(error), .userCanceled, "the scripted user gives up during the cool-down")
        }
        let statuses = failing.shownContexts.map(\.authenticatorProtectionStatus)
        XCTAssertEqual(
            statuses.prefix(4),
            [
                .Unlocked, .LastAttemptFailed(remainingTries: 4, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 3, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 2, coolDownTimeInSeconds: 60),
            ])
        // The correct PIN given during the cool-down was refused without being checked (status unchanged).
        guard case .LastAttemptFailed(2, let coolDown)? = statuses.last, (55...60).contains(coolDown) else {
            return XCTFail("unexpected status \(String(describing: statuses.last))")
        }

        // A restarted client still sees the failures; after the cool-down two more wrong PINs lock the PIN for good.
        await client.shutdown()
        env.platform.advanceClock(by: 61)
        let restarted = try await env.client()
        let locking = ScriptedPinUserVerifier(pins: ["999999", "888888", "123456", nil])
        do {
            try await restarted.authenticate("carol", verifier: locking)
            XCTFail("expected a lockout")
        } catch {
            XCTAssertEqual(fidoCode(error), .userCanceled, "during the 180 s cool-down the scripted user gives up")
        }
        env.platform.advanceClock(by: 181)
        do {
            try await restarted.authenticate("carol", verifier: ScriptedPinUserVerifier(pins: ["777777"]))
            XCTFail("expected a lockout")
        } catch {
            XCTAssertEqual(fidoCode(error), .userLockout)
        }
        do {
            try await restarted.authenticate("carol", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
            XCTFail("a locked PIN stays locked, even with the right PIN")
        } catch {
            XCTAssertEqual(fidoCode(error), .userLockout)
        }
    }

    func testCancellingTheSelectorOrTheEnrollerFailsWithUserCanceledAndLeavesNothing() async throws {
        let client = try await env.client()
        do {
            try await client.register("dave", choose: nil)
            XCTFail()
        } catch { XCTAssertEqual(fidoCode(error), .userCanceled) }
        do {
            try await client.register("dave", pins: [nil])
            XCTFail()
        } catch { XCTAssertEqual(fidoCode(error), .userCanceled) }
        XCTAssertTrue(client.localData.accounts.isEmpty)
        let stored = try await env.server.stores.registrations.registrations(username: "dave")
        XCTAssertTrue(stored.isEmpty)
    }

    func testASilentUserTimesOutWithUserNotResponsive() async throws {
        var configuration = env.configuration
        configuration = Configuration(baseUrl: env.server.baseURL, userInteractionTimeoutInSeconds: 1, facetId: env.platform.applicationFacetId)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [env.server.certificatePEM]))
        let client = try await env.client(configuration: configuration)
        do {
            try await client.register("erin", pins: [])
            XCTFail()
        } catch { XCTAssertEqual(fidoCode(error), .userNotResponsive) }
    }

    func testTheStateSurvivesARestartOfTheClient() async throws {
        let first = try await env.client()
        try await first.register("frank")
        await first.shutdown()
        let second = try await env.client()
        XCTAssertEqual(second.localData.accounts.map(\.username), ["frank"])
        try await second.authenticate("frank", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
    }

    func testTheSameAuthenticatorCannotBeRegisteredTwiceForAUser() async throws {
        let client = try await env.client()
        try await client.register("gina")
        do {
            try await client.register("gina")
            XCTFail()
        } catch { XCTAssertEqual(fidoCode(error), .noSuitableAuthenticator, "the server's policy disallows the registered key") }
    }

    func testAuthenticatingAnUnknownUserFails() async throws {
        let client = try await env.client()
        do {
            try await client.authenticate("nobody", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
            XCTFail()
        } catch {
            // The server answers an anonymous step-up for any username alike; the device has no key for this one.
            XCTAssertEqual(fidoCode(error), .noSuitableAuthenticator)
        }
    }

    func testAKeyDeletedFromTheDeviceIsReportedAsDisappeared() async throws {
        let client = try await env.client()
        try await client.register("hank")
        await client.shutdown()
        // Remove the private key from the device's secure storage behind the SDK's back.
        let store = try await SecureStorageAccess.open(env.platform)
        try await store.removeKeys()
        let restarted = try await env.client()
        do {
            try await restarted.authenticate("hank", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
            XCTFail()
        } catch { XCTAssertEqual(fidoCode(error), .keyDisappearedPermanently) }
    }

    func testAnUntrustedFacetIsRefusedBeforeAnythingIsSigned() async throws {
        let platform = SimulatedPlatform(
            storageDirectory: env.directory.appendingPathComponent("other-app"), applicationFacetId: "ios:bundle-id:com.evil.app")
        let configuration = Configuration(baseUrl: env.server.baseURL, facetId: platform.applicationFacetId)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [env.server.certificatePEM]))
        let client = try await env.client(configuration: configuration, platform: platform)
        do {
            try await client.register("ivy")
            XCTFail()
        } catch { XCTAssertEqual(fidoCode(error), .untrustedFacetID) }
    }

    func testADeviceWithADebuggerOrWithoutLockIsRefused() async throws {
        let client = try await env.client()
        env.platform.attachDebugger()
        let debuggerError = await captureError { try await client.register("jack") }
        guard case .DeviceProtectionError? = debuggerError as? OperationError else { return XCTFail("\(String(describing: debuggerError))") }
        env.platform.attachDebugger(false)
        env.platform.setDeviceLock(false)
        let initError = await captureError {
            _ = try await MobileAuthenticationClientInitializer().configuration(self.env.configuration).platform(self.env.platform).executeAsync()
        }
        guard case .NoDeviceLockError? = initError as? InitializationError else { return XCTFail("\(String(describing: initError))") }
    }

    func testCallbackStyleBuildersDeliverTheirResults() async throws {
        let client = try await env.client()
        let registered = expectation(description: "registered")
        try await client.authorizedRegistration("kate", choose: AuthenticatorAaid.Pin.rawValue)
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .onSuccess { registered.fulfill() }
            .onError { XCTFail("\($0)") }
            .execute()
        await fulfillment(of: [registered], timeout: 30)
        let failed = expectation(description: "failed")
        client.operations.authentication.username("kate")
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: nil))
            .pinUserVerifier(ScriptedPinUserVerifier(pins: []))
            .onSuccess { _ in XCTFail("cancelled") }
            .onError { error in
                if case .FidoError(let code, _, _) = error, code == .userCanceled { failed.fulfill() }
            }
            .execute()
        await fulfillment(of: [failed], timeout: 30)
    }
}
