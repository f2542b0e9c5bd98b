import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import NevisProtocol
import UAF
import XCTest

/// Every authenticator type over loopback TLS against our server: register, authenticate, confirm a transaction,
/// and the failures the seeds describe.
final class AuthenticatorFlowTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    func register(
        _ client: any MobileAuthenticationClient, _ username: String, aaid: String, password: String = "correct horse 1",
        os: ScriptedOSVerifier = ScriptedOSVerifier(), configure: (Registration) -> Void = { _ in }
    ) async throws {
        let builder = try await client.authorizedRegistration(username, choose: aaid)
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .passwordEnroller(ScriptedPasswordEnroller(passwords: [password]))
            .biometricUserVerifier(os).devicePasscodeUserVerifier(os).fingerprintUserVerifier(os)
        configure(builder)
        try await builder.executeAsync()
    }

    @discardableResult
    func authenticate(
        _ client: any MobileAuthenticationClient, _ username: String?, aaid: String, transaction: String? = nil,
        selector: ScriptedAuthenticatorSelector? = nil, os: ScriptedOSVerifier = ScriptedOSVerifier(),
        pins: [String?] = ["123456"], passwords: [String?] = ["correct horse 1"]
    ) async throws -> (any AuthorizationProvider)? {
        let builder = client.operations.authentication
            .authenticatorSelector(selector ?? ScriptedAuthenticatorSelector(choose: aaid))
            .pinUserVerifier(ScriptedPinUserVerifier(pins: pins)).passwordUserVerifier(ScriptedPasswordUserVerifier(passwords: passwords))
            .biometricUserVerifier(os).devicePasscodeUserVerifier(os).fingerprintUserVerifier(os)
        if let username { builder.username(username) }
        if let transaction { builder.transactionConfirmation(text: transaction) }
        return try await builder.executeAsync()
    }

    /// Registers, authenticates and confirms a transaction with `aaid`; the server's counter proves each assertion.
    func roundTrip(_ aaid: String, username: String) async throws {
        let client = try await env.client()
        try await register(client, username, aaid: aaid)
        XCTAssertTrue(client.localData.authenticators.first { $0.aaid == aaid }?.registration.isRegistered(username) ?? false)
        let provider = try await authenticate(client, username, aaid: aaid)
        XCTAssertNotNil(provider)
        let selector = ScriptedAuthenticatorSelector(choose: aaid)
        try await authenticate(client, username, aaid: aaid, transaction: "Pay 100 CHF to Alice", selector: selector)
        XCTAssertEqual(
            selector.shownContexts.first?.transactionConfirmationData.map { String(decoding: $0, as: UTF8.self) }, "Pay 100 CHF to Alice",
            "the app was shown the transaction before it was signed")
        let stored = try await env.server.stores.registrations.registrations(username: username)
        XCTAssertEqual(stored.map(\.aaid), [aaid])
        XCTAssertEqual(stored.first?.signCounter, 2)
    }

    func testPinRegistersAuthenticatesAndConfirms() async throws { try await roundTrip("F1D0#1001", username: "pin-user") }
    func testTouchIDRegistersAuthenticatesAndConfirms() async throws {
        env.platform.setBiometricSensors([.touchID])
        try await roundTrip("F1D0#1002", username: "touch-user")
    }
    func testFaceIDRegistersAuthenticatesAndConfirms() async throws { try await roundTrip("F1D0#1003", username: "face-user") }
    func testDevicePasscodeRegistersAuthenticatesAndConfirms() async throws { try await roundTrip("F1D0#1004", username: "passcode-user") }
    func testPasswordRegistersAuthenticatesAndConfirms() async throws { try await roundTrip("F1D0#1005", username: "password-user") }

    func testAndroidProfileAuthenticatorsSignWithECDSAByDefault() async throws {
        try await env.shutdown()
        env = try await Environment(profile: .android)
        for (aaid, user) in [
            ("F1D0#0001", "a-pin"), ("F1D0#0002", "a-finger"), ("F1D0#0003", "a-bio"), ("F1D0#0004", "a-passcode"), ("F1D0#0005", "a-password"),
        ] {
            try await roundTrip(aaid, username: user)
        }
    }

    func testAndroidProfileSignsWithRSAWhenTheServersMetadataAllowsOnlyRSA() async throws {
        // The seed's verbatim Android PIN statement: authenticationAlgorithm 9 (RSA PKCS#1 DER) only.
        var statement = try XCTUnwrap(NevisAuthenticatorMetadata.statements.first { $0.aaid == "F1D0#0001" })
        statement.authenticationAlgorithms = nil
        statement.publicKeyAlgAndEncoding = 259
        statement.publicKeyAlgAndEncodings = nil
        let json = String(decoding: try JSONEncoder().encode([statement]), as: UTF8.self)
        try await env.shutdown()
        env = try await Environment(profile: .android, metadataJSON: json)
        try await roundTrip("F1D0#0001", username: "rsa-user")
        let stored = try await env.server.stores.registrations.registrations(username: "rsa-user")
        XCTAssertEqual(stored.first?.publicKeyEncoding, .rsa2048DER)
    }

    func testAChangedBiometricSetMakesTheKeyDisappearPermanently() async throws {
        let client = try await env.client()
        try await register(client, "bio", aaid: "F1D0#1003")
        env.platform.changeBiometricSet()
        let os = ScriptedOSVerifier()
        let error = await captureError { try await self.authenticate(client, "bio", aaid: "F1D0#1003", os: os) }
        XCTAssertEqual(fidoCode(error!), .keyDisappearedPermanently)
        XCTAssertEqual(os.shownAuthenticators, [], "the user is not prompted for a key that is gone")
    }

    /// Face ID switched off for the app in Settings (or no NSFaceIDUsageDescription) hides the biometric set; the key
    /// bound to it is intact, and the app is told to let the user turn Face ID back on, not to delete it.
    func testFaceIDSwitchedOffForTheAppIsAccessDeniedAndTheKeyStays() async throws {
        let client = try await env.client()
        try await register(client, "bio-off", aaid: "F1D0#1003")
        env.platform.setBiometricsAllowed(false)
        let os = ScriptedOSVerifier()
        let error = await captureError { try await self.authenticate(client, "bio-off", aaid: "F1D0#1003", os: os) }
        XCTAssertEqual(fidoCode(error!), .authenticatorAccessDenied)
        XCTAssertTrue("\(error!)".contains("turn it on in Settings"), "\(error!)")
        env.platform.setBiometricsAllowed(true)
        try await authenticate(client, "bio-off", aaid: "F1D0#1003")
    }

    /// The same without a bound set: the OS prompt says the app may not use Face ID.
    func testFaceIDSwitchedOffForTheAppIsAccessDeniedAtThePromptToo() async throws {
        let client = try await env.client()
        try await register(client, "bio-off-any", aaid: "F1D0#1003") { $0.invalidateOnNewOsBiometrics(false) }
        env.platform.setBiometricsAllowed(false)
        let error = await captureError { try await self.authenticate(client, "bio-off-any", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(error!), .authenticatorAccessDenied)
    }

    /// No biometrics enrolled now (the user removed her face): not enrolled, with what to do; not a gone key.
    func testBiometricsNoLongerEnrolledAreNotEnrolledNotAGoneKey() async throws {
        let client = try await env.client()
        try await register(client, "bio-unenrolled", aaid: "F1D0#1003")
        env.platform.setBiometricsEnrolled(false)
        let error = await captureError { try await self.authenticate(client, "bio-unenrolled", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(error!), .userNotEnrolled)
        XCTAssertTrue("\(error!)".contains("set up Face ID or Touch ID in Settings"), "\(error!)")
    }

    func testWithoutInvalidationANewBiometricSetStillWorks() async throws {
        let client = try await env.client()
        try await register(client, "bio2", aaid: "F1D0#1003") { $0.invalidateOnNewOsBiometrics(false) }
        env.platform.changeBiometricSet()
        try await authenticate(client, "bio2", aaid: "F1D0#1003")
    }

    func testRemovingTheDeviceLockRefusesOperationsAndWipesHardwareKeys() async throws {
        try await env.shutdown()
        env = try await Environment(profile: .android)
        let client = try await env.client()
        try await register(client, "lock", aaid: "F1D0#0004")
        try await register(client, "lock", aaid: "F1D0#0001")
        env.platform.setDeviceLock(false)
        let refused = await captureError { try await self.authenticate(client, "lock", aaid: "F1D0#0001") }
        guard case .NoDeviceLockError? = refused as? AuthenticationError else { return XCTFail("\(String(describing: refused))") }
        env.platform.setDeviceLock(true)
        let wiped = await captureError { try await self.authenticate(client, "lock", aaid: "F1D0#0004") }
        XCTAssertEqual(fidoCode(wiped!), .keyDisappearedPermanently, "the passcode key went with the lock")
        try await authenticate(client, "lock", aaid: "F1D0#0001")  // On Android the PIN key is not bound to the lock.
    }

    func testACancelledOSPromptFailsWithUserCanceledAndStoresNothing() async throws {
        let client = try await env.client()
        env.platform.scriptOSPrompts([.cancelled])
        let error = await captureError { try await self.register(client, "cancel", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(error!), .userCanceled)
        XCTAssertTrue(client.localData.accounts.isEmpty)
        let stored = try await env.server.stores.registrations.registrations(username: "cancel")
        XCTAssertTrue(stored.isEmpty)
    }

    func testThePasscodeFallbackIsRefusedByDefaultAndAllowedWhenChosen() async throws {
        let client = try await env.client()
        try await register(client, "fallback", aaid: "F1D0#1003")
        env.platform.scriptOSPrompts([.verifiedWithPasscodeFallback])
        let refused = await captureError { try await self.authenticate(client, "fallback", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(refused!), .authenticatorAccessDenied)
        XCTAssertEqual(env.platform.shownOSPrompts.last?.fallbackButtonTitle, nil, "no passcode button is offered")

        try await register(client, "fallback2", aaid: "F1D0#1003") {
            $0.allowDevicePasscodeAsFallback(true).invalidateOnNewOsBiometrics(false)
        }
        env.platform.scriptOSPrompts([.verifiedWithPasscodeFallback])
        try await authenticate(client, "fallback2", aaid: "F1D0#1003")
        XCTAssertEqual(env.platform.shownOSPrompts.last?.fallbackButtonTitle, "Enter Passcode")
    }

    func testTheSDKRefusesAPasscodeAnswerTheOSAcceptedWithoutTheFallback() async throws {
        // The OS would take the passcode; only the SDK's own guard stands between it and a signature.
        let client = try await env.client()
        try await register(client, "lenient", aaid: "F1D0#1003")
        env.platform.offerPasscodeFallbackAlways()
        env.platform.scriptOSPrompts([.verifiedWithPasscodeFallback])
        let captured = await captureError { try await self.authenticate(client, "lenient", aaid: "F1D0#1003") }
        let refused = try XCTUnwrap(captured, "the SDK signed after a passcode answer it had not allowed")
        XCTAssertEqual(fidoCode(refused), .authenticatorAccessDenied)
        XCTAssertTrue(String(describing: refused).contains("the device passcode is not allowed as fallback"), "\(refused)")
    }

    func testBothFallbackAndInvalidationCannotBeEnabled() async throws {
        let client = try await env.client()
        let error = await captureError {
            try await self.register(client, "both", aaid: "F1D0#1003") { $0.allowDevicePasscodeAsFallback(true) }
        }
        guard case .Unknown(let cause as SDKMessage)? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(cause.message, "allowDevicePasscodeAsFallback and invalidateOnNewOsBiometrics cannot both be enabled")
    }

    func testASecondAuthenticatorOfTheSameTypeIsRefused() async throws {
        let client = try await env.client()
        try await register(client, "twice", aaid: "F1D0#1005")
        let error = await captureError { try await self.register(client, "twice", aaid: "F1D0#1005") }
        XCTAssertEqual(fidoCode(error!), .noSuitableAuthenticator)
        try await register(client, "twice", aaid: "F1D0#1001")  // Another type is fine.
    }

    func testWithoutBiometricHardwareTheAuthenticatorIsNotSupported() async throws {
        env.platform.setBiometricSensors([])
        let client = try await env.client()
        XCTAssertEqual(client.localData.authenticators.first { $0.aaid == "F1D0#1003" }?.isSupportedByHardware, false)
        XCTAssertEqual(client.localData.authenticators.first { $0.aaid == "F1D0#1001" }?.isSupportedByHardware, true)
        let error = await captureError { try await self.register(client, "nohw", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(error!), .noSuitableAuthenticator)
    }

    func testWrongPasswordsCoolDownAndLockOut() async throws {
        let client = try await env.client()
        try await register(client, "pw", aaid: "F1D0#1005")
        let verifier = ScriptedPasswordUserVerifier(passwords: ["wrong 1", "wrong 2", "wrong 3", nil])
        let cancelled = await captureError {
            _ = try await client.operations.authentication.username("pw").authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1005"))
                .passwordUserVerifier(verifier).executeAsync()
        }
        XCTAssertEqual(fidoCode(cancelled!), .userCanceled)
        XCTAssertEqual(
            verifier.shownContexts.map(\.authenticatorProtectionStatus),
            [
                .Unlocked, .LastAttemptFailed(remainingTries: 4, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 3, coolDownTimeInSeconds: 0),
                .LastAttemptFailed(remainingTries: 2, coolDownTimeInSeconds: 60),
            ])
        env.platform.advanceClock(by: 61)
        let error = await captureError { try await self.authenticate(client, "pw", aaid: "F1D0#1005", passwords: ["wrong 4", nil]) }
        XCTAssertEqual(fidoCode(error!), .userCanceled)
        env.platform.advanceClock(by: 181)
        let locked = await captureError { try await self.authenticate(client, "pw", aaid: "F1D0#1005", passwords: ["wrong 5"]) }
        XCTAssertEqual(fidoCode(locked!), .userLockout)
        let stillLocked = await captureError { try await self.authenticate(client, "pw", aaid: "F1D0#1005") }
        XCTAssertEqual(fidoCode(stillLocked!), .userLockout)
    }

    func testAnAccountSelectorPicksAmongSeveralAccountsAndSeesTheTransaction() async throws {
        let client = try await env.client()
        try await register(client, "first", aaid: "F1D0#1001")
        try await register(client, "second", aaid: "F1D0#1001")
        let none = await captureError { try await self.authenticate(client, nil, aaid: "F1D0#1001") }
        XCTAssertEqual(fidoCode(none!), .noSuitableAuthenticator, "several accounts and no account selector")
        let accounts = ScriptedAccountSelector(choose: "second")
        _ = try await client.operations.authentication.accountSelector(accounts).pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
            .transactionConfirmation(text: "Sign the contract").executeAsync()
        let context = try XCTUnwrap(accounts.shownContexts.first)
        XCTAssertEqual(Set(context.accounts.map(\.username)), ["first", "second"])
        XCTAssertTrue(context.isPolicyCompliant(username: "second", aaid: "F1D0#1001"))
        XCTAssertEqual(context.transactionConfirmationData, Data("Sign the contract".utf8))
        let second = try await env.server.stores.registrations.registrations(username: "second")
        XCTAssertEqual(second.first?.signCounter, 1)
    }

    func testATransactionIsNeverSignedUnseen() async throws {
        let client = try await env.client()
        try await register(client, "unseen", aaid: "F1D0#1001")
        let error = await captureError {
            _ = try await client.operations.authentication.username("unseen").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
                .transactionConfirmation(text: "Pay 1,000,000").executeAsync()
        }
        XCTAssertEqual(fidoCode(error!), .invalidTransactionContent)
        let stored = try await env.server.stores.registrations.registrations(username: "unseen")
        XCTAssertEqual(stored.first?.signCounter, 0, "nothing was signed")
    }

    func testTheFirstRegistrationRequiresDeviceInformation() async throws {
        let client = try await env.client()
        let error = await captureError {
            try await client.operations.registration.username("nodevice").authorizationProvider(try await relyingPartyAuthorization("nodevice"))
                .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1001"))
                .executeAsync()
        }
        guard case .Unknown(let cause as SDKMessage)? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(cause.message, "the first registration needs deviceInformation(_:) (a DeviceInformation with the device's name)")
    }

    func testWithASimulatedSecureEnclaveBiometricKeysLiveInHardwareAndFollowItsRules() async throws {
        env.platform.enableHardwareKeyStore()
        let client = try await env.client()
        try await register(client, "enclave", aaid: "F1D0#1003")
        try await register(client, "enclave", aaid: "F1D0#1004")
        try await register(client, "enclave", aaid: "F1D0#1001")
        XCTAssertEqual(env.platform.hardwareKeyCount, 3, "on iOS every key is a hardware key, the PIN key too")
        try await authenticate(client, "enclave", aaid: "F1D0#1003", transaction: "Pay 5 CHF")
        try await authenticate(client, "enclave", aaid: "F1D0#1004")
        env.platform.changeBiometricSet()
        let gone = await captureError { try await self.authenticate(client, "enclave", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(gone!), .keyDisappearedPermanently)
        try await authenticate(client, "enclave", aaid: "F1D0#1004")
        try await client.localData.deleteAuthenticator(username: "enclave", aaid: nil)
        XCTAssertEqual(env.platform.hardwareKeyCount, 0, "deleting the authenticators deletes their hardware keys")
    }

    func testRemovingTheDeviceLockWipesTheIOSPinKeyFromTheSecureEnclave() async throws {
        env.platform.enableHardwareKeyStore()
        let client = try await env.client()
        try await register(client, "pin-lock", aaid: "F1D0#1001")
        try await register(client, "pin-lock", aaid: "F1D0#1005")
        XCTAssertEqual(env.platform.hardwareKeyCount, 2)
        env.platform.setDeviceLock(false)
        env.platform.setDeviceLock(true)
        for aaid in ["F1D0#1001", "F1D0#1005"] {
            let wiped = await captureError { try await self.authenticate(client, "pin-lock", aaid: aaid) }
            XCTAssertEqual(fidoCode(wiped!), .keyDisappearedPermanently, "\(aaid) outlived the device lock")
        }
    }

    func testLockedOutBiometricsAreALockOutAndTheKeyStays() async throws {
        let client = try await env.client()
        try await register(client, "locked-out", aaid: "F1D0#1003")
        env.platform.lockOutBiometrics()
        let os = ScriptedOSVerifier()
        let error = await captureError { try await self.authenticate(client, "locked-out", aaid: "F1D0#1003", os: os) }
        XCTAssertEqual(fidoCode(error!), .userLockout, "a temporary lock-out must not read as a key that is gone")
        env.platform.lockOutBiometrics(false)
        try await authenticate(client, "locked-out", aaid: "F1D0#1003")
    }

    func testAPromptTheOSLocksOutIsALockOut() async throws {
        let client = try await env.client()
        try await register(client, "locked-prompt", aaid: "F1D0#1003") { $0.invalidateOnNewOsBiometrics(false) }
        env.platform.scriptOSPrompts([.lockedOut("too many attempts")])
        let error = await captureError { try await self.authenticate(client, "locked-prompt", aaid: "F1D0#1003") }
        XCTAssertEqual(fidoCode(error!), .userLockout)
    }

    func testDeleteAuthenticatorRemovesOnlyLocalData() async throws {
        let client = try await env.client()
        try await register(client, "local", aaid: "F1D0#1001")
        try await register(client, "local", aaid: "F1D0#1005")
        do {
            try await client.localData.deleteAuthenticator(username: "local", aaid: "X#1")
            XCTFail()
        } catch {
            guard case .InvalidAaid = error else { return XCTFail("\(error)") }
        }
        try await client.localData.deleteAuthenticator(username: "local", aaid: "F1D0#1001")
        XCTAssertEqual(client.localData.authenticators.first { $0.aaid == "F1D0#1001" }?.registration.isRegistered("local"), false)
        XCTAssertNotNil(client.localData.deviceInformation)
        try await client.localData.deleteAuthenticator(username: "local", aaid: nil)
        XCTAssertTrue(client.localData.accounts.isEmpty)
        XCTAssertNil(client.localData.deviceInformation, "the device information goes with the last authenticator")
        let server = try await env.server.stores.registrations.registrations(username: "local")
        XCTAssertEqual(server.count, 2, "the server is not contacted")
        let store = try await SecureStorageAccess.open(env.platform)
        let keys = try await store.keys()
        XCTAssertEqual(keys.filter { $0.hasPrefix("key/") || $0.hasPrefix("pin/") || $0.hasPrefix("password/") }, [])
    }
}
