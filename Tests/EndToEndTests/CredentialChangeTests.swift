import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import UAF
import XCTest

/// PIN and password change (seed 002): recoverable errors, the cool-down rule, lockout, and that the new secret is
/// the one authentication then accepts.
final class CredentialChangeTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    func registerPassword(_ client: any MobileAuthenticationClient, _ username: String, password: String) async throws {
        try await client.authorizedRegistration(username, choose: AuthenticatorAaid.Password.rawValue)
            .passwordEnroller(ScriptedPasswordEnroller(passwords: [password])).executeAsync()
    }

    func testAPinChangeReportsRecoverableErrorsThenTheNewPinWorks() async throws {
        let client = try await env.client()
        try await client.register("alice")
        let changer = ScriptedPinChanger(pins: [("123456", "12"), ("123456", "123456"), ("000000", "654321"), ("123456", "654321")])
        try await client.operations.pinChange.username("alice").pinChanger(changer).executeAsync()
        XCTAssertEqual(
            changer.shownContexts.map(\.lastRecoverableError),
            [
                nil, .InvalidPinFormat(message: "The PIN must have exactly 6 digits."),
                .OldPinEqualsNewPin(message: "The new PIN must differ from the current one."), .InvalidPin(message: "The current PIN is wrong."),
            ])
        XCTAssertEqual(
            changer.shownContexts.map(\.authenticatorProtectionStatus),
            [
                .Unlocked, .Unlocked, .Unlocked, .LastAttemptFailed(remainingTries: 4, coolDownTimeInSeconds: 0),
            ], "a bad new PIN costs no attempt; a wrong old PIN does")
        let old = await captureError { try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456", nil])) }
        XCTAssertEqual(fidoCode(old!), .userCanceled, "the old PIN no longer verifies")
        try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["654321"]))
    }

    func testDuringACoolDownEnteredPinsAreIgnoredWithoutUsingARetry() async throws {
        let client = try await env.client()
        try await client.register("bob")
        // Three wrong old PINs start a 60 s cool-down; the next two answers (one of them right) are ignored.
        let changer = ScriptedPinChanger(pins: [
            ("000001", "222222"), ("000002", "222222"), ("000003", "222222"),
            ("123456", "222222"), ("000004", "222222"), nil,
        ])
        let error = await captureError { try await client.operations.pinChange.username("bob").pinChanger(changer).executeAsync() }
        guard case .UserCanceled? = error as? PinChangeError else { return XCTFail("\(String(describing: error))") }
        let statuses = changer.shownContexts.map(\.authenticatorProtectionStatus)
        XCTAssertEqual(
            statuses.prefix(4),
            [
                .Unlocked, .LastAttemptFailed(remainingTries: 4, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 3, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 2, coolDownTimeInSeconds: 60),
            ])
        for status in statuses.dropFirst(4) {
            guard case .LastAttemptFailed(2, let coolDown) = status, coolDown > 0 else { return XCTFail("a retry was used: \(status)") }
        }
        // After the cool-down the right PIN changes it.
        env.platform.advanceClock(by: 61)
        try await client.operations.pinChange.username("bob").pinChanger(ScriptedPinChanger(pins: [("123456", "222222")])).executeAsync()
        try await client.authenticate("bob", verifier: ScriptedPinUserVerifier(pins: ["222222"]))
    }

    func testAPinChangeLocksAfterTheFifthWrongPin() async throws {
        let client = try await env.client()
        try await client.register("carol")
        var pins: [(String, String)?] = [("000001", "222222"), ("000002", "222222"), ("000003", "222222")]
        let first = ScriptedPinChanger(pins: pins + [nil])
        _ = await captureError { try await client.operations.pinChange.username("carol").pinChanger(first).executeAsync() }
        env.platform.advanceClock(by: 61)
        _ = await captureError {
            try await client.operations.pinChange.username("carol").pinChanger(ScriptedPinChanger(pins: [("000004", "222222"), nil])).executeAsync()
        }
        env.platform.advanceClock(by: 181)
        pins = [("000005", "222222")]
        let error = await captureError {
            try await client.operations.pinChange.username("carol").pinChanger(ScriptedPinChanger(pins: pins)).executeAsync()
        }
        guard case .PinLocked? = error as? PinChangeError else { return XCTFail("\(String(describing: error))") }
        let locked = await captureError { try await client.authenticate("carol", verifier: ScriptedPinUserVerifier(pins: ["123456"])) }
        XCTAssertEqual(fidoCode(locked!), .userLockout, "the change and the authentication share one lockout")
    }

    func testAPinChangeWithoutAPinFailsWithPinNotEnrolled() async throws {
        let client = try await env.client()
        let error = await captureError {
            try await client.operations.pinChange.username("nobody").pinChanger(ScriptedPinChanger(pins: [])).executeAsync()
        }
        guard case .PinNotEnrolled? = error as? PinChangeError else { return XCTFail("\(String(describing: error))") }
    }

    func testAPasswordChangeAppliesThePolicyThenTheNewPasswordWorks() async throws {
        let client = try await env.client()
        try await registerPassword(client, "dora", password: "first pass 1")
        let changer = ScriptedPasswordChanger(passwords: [
            ("first pass 1", "short"), ("first pass 1", "first pass 1"),
            ("wrong pass 9", "second pass 2"), ("first pass 1", "second pass 2"),
        ])
        try await client.operations.passwordChange.username("dora").passwordChanger(changer).executeAsync()
        XCTAssertEqual(
            changer.shownContexts.map(\.lastRecoverableError),
            [
                nil, .CustomValidationError(message: "The password must have at least 8 characters."),
                .OldPasswordEqualsNewPassword(message: "The new password must differ from the current one."),
                .InvalidPassword(message: "The current password is wrong."),
            ])
        _ = try await client.operations.authentication.username("dora")
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Password.rawValue))
            .passwordUserVerifier(ScriptedPasswordUserVerifier(passwords: ["second pass 2"])).executeAsync()
    }

    func testAPasswordEnrollmentAsksAgainWithThePolicysError() async throws {
        let client = try await env.client()
        let enroller = ScriptedPasswordEnroller(passwords: ["", "abc", "long enough 7"])
        try await client.authorizedRegistration("erin", choose: AuthenticatorAaid.Password.rawValue).passwordEnroller(enroller).executeAsync()
        XCTAssertEqual(
            enroller.shownContexts.map(\.lastRecoverableError),
            [
                nil, .CustomValidationError(message: "The password must not be empty."),
                .CustomValidationError(message: "The password must have at least 8 characters."),
            ])
    }

    func testAPasswordChangeCancelledLeavesThePasswordAsItWas() async throws {
        let client = try await env.client()
        try await registerPassword(client, "fred", password: "first pass 1")
        let error = await captureError {
            try await client.operations.passwordChange.username("fred").passwordChanger(ScriptedPasswordChanger(passwords: [nil])).executeAsync()
        }
        guard case .UserCanceled? = error as? PasswordChangeError else { return XCTFail("\(String(describing: error))") }
        _ = try await client.operations.authentication.username("fred")
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Password.rawValue))
            .passwordUserVerifier(ScriptedPasswordUserVerifier(passwords: ["first pass 1"])).executeAsync()
    }
}
