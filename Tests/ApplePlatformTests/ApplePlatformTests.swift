#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
import Crypto
import Foundation
import MobileAuthentication
import MobileAuthenticationCore
import SecureStorage
import XCTest

/// `ApplePlatform` and `KeychainKeyProtector`, compiled from their own source files (`AppleSources/` links to them)
/// against the scripted frameworks: which access control each registration gets, which outcome each
/// LocalAuthentication error and keychain status becomes, and what the OS's wipes do to the keys. What the real
/// frameworks answer in each case is Apple's documentation, scripted by `ScriptedAppleDevice`; that they answer so
/// is verified only on a device.
final class ApplePlatformTests: XCTestCase {
    private var device = ScriptedAppleDevice()
    private var platform = ApplePlatform(storageDirectory: FileManager.default.temporaryDirectory, applicationFacetId: "ios:bundle-id:ch.example.app")

    override func setUp() {
        device = ScriptedAppleDevice()
        ScriptedAppleDevice.current = device
        platform = ApplePlatform(storageDirectory: FileManager.default.temporaryDirectory, applicationFacetId: "ios:bundle-id:ch.example.app")
    }

    private var enclave: any HardwareKeyStore { platform.hardwareKeyStore! }
    private let message = Array("signed data".utf8)

    private func biometricPrompt(fallback: Bool) -> OSVerificationRequest {
        OSVerificationRequest(kind: .biometric(sensor: .faceID, passcodeFallback: fallback), reason: "Log in", fallbackButtonTitle: "Use passcode")
    }

    private func signingError(_ tag: String) async -> HardwareKeyError? {
        do {
            _ = try await enclave.sign(tag: tag, message: message)
            return nil
        } catch { return error }
    }

    // MARK: Access control of each registration (seed 000)

    func testABiometricKeyWithoutFallbackNeedsBiometricsOnly() throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: false, passcodeFallback: false), requiresDeviceLock: true))
        XCTAssertEqual(device.enclaveKeys["k"]?.control.flags, [.privateKeyUsage, .biometryAny])
    }

    func testABiometricKeyWithFallbackAcceptsThePasscode() throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: false, passcodeFallback: true), requiresDeviceLock: true))
        XCTAssertEqual(device.enclaveKeys["k"]?.control.flags, [.privateKeyUsage, .userPresence])
    }

    func testAKeyInvalidatedOnNewBiometricsNeedsTheCurrentSet() throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: true, passcodeFallback: false), requiresDeviceLock: true))
        XCTAssertEqual(device.enclaveKeys["k"]?.control.flags, [.privateKeyUsage, .biometryCurrentSet])
    }

    func testAKeyInvalidatedOnNewBiometricsWithFallbackTakesTheCurrentSetOrThePasscode() throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: true, passcodeFallback: true), requiresDeviceLock: true))
        XCTAssertEqual(device.enclaveKeys["k"]?.control.flags, [.privateKeyUsage, .biometryCurrentSet, .or, .devicePasscode])
    }

    func testAPinKeyNeedsNoPromptButIsKeptOnlyWhileAPasscodeIsSet() throws {
        _ = try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        XCTAssertEqual(device.enclaveKeys["k"]?.control.flags, [.privateKeyUsage])
        XCTAssertEqual(device.enclaveKeys["k"]?.control.protection, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String)
    }

    // MARK: What the OS's wipes do

    func testRemovingThePasscodeWipesAPinKey() async throws {
        _ = try enclave.createKey(tag: "pin", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        device.removePasscode()
        guard case .keyGone? = await signingError("pin") else { return XCTFail("a PIN key outlived the device lock") }
    }

    func testANewFingerInvalidatesABoundKeyButNotAnAnyKey() async throws {
        _ = try enclave.createKey(
            tag: "bound", access: HardwareKeyAccess(userVerification: .biometry(currentSet: true, passcodeFallback: false), requiresDeviceLock: true))
        _ = try enclave.createKey(
            tag: "any", access: HardwareKeyAccess(userVerification: .biometry(currentSet: false, passcodeFallback: false), requiresDeviceLock: true))
        let before = platform.biometricSetIdentifier
        device.changeBiometricSet()
        XCTAssertNotEqual(platform.biometricSetIdentifier, before)
        guard case .keyGone? = await signingError("bound") else { return XCTFail("the bound key survived a new finger") }
        let stillSigns = await signingError("any")
        XCTAssertNil(stillSigns)
    }

    func testTheEnclaveSignatureVerifiesWithTheReturnedPublicKey() async throws {
        let x963 = try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        let der = try await enclave.sign(tag: "k", message: message)
        XCTAssertTrue(
            try P256.Signing.PublicKey(x963Representation: x963).isValidSignature(P256.Signing.ECDSASignature(derRepresentation: der), for: message))
    }

    func testAKeyCannotBeCreatedWithoutAPasscode() throws {
        device.removePasscode()
        XCTAssertThrowsError(try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))) {
            guard case .unavailable = $0 as? HardwareKeyError else { return XCTFail("\($0)") }
        }
    }

    func testDeletingAKeyRemovesItFromTheEnclave() throws {
        _ = try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        enclave.deleteKey(tag: "k")
        XCTAssertNil(device.enclaveKeys["k"])
    }

    // MARK: Failures that leave the key intact (never keyGone)

    func testACancelledKeyLookupIsACancelNotAGoneKey() async throws {
        _ = try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        device.lookupStatus = errSecUserCanceled
        let error = await signingError("k")
        XCTAssertEqual(error, .cancelled)
    }

    func testALockedDeviceLeavesTheKeyIntact() async throws {
        _ = try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        device.lookupStatus = errSecInteractionNotAllowed
        guard case .unavailable? = await signingError("k") else { return XCTFail("a locked device read as a gone key") }
    }

    func testARefusedVerificationLeavesTheKeyIntact() async throws {
        _ = try enclave.createKey(tag: "k", access: HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        device.lookupStatus = errSecAuthFailed
        guard case .unavailable? = await signingError("k") else { return XCTFail("a failed verification read as a gone key") }
    }

    func testALockOutAtKeyUseIsALockOut() async throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: true, passcodeFallback: false), requiresDeviceLock: true))
        device.scriptKeyUses([LAError(.biometryLockout).nsError])
        guard case .lockedOut? = await signingError("k") else { return XCTFail("a lock-out at key use read otherwise") }
    }

    func testACancelAtKeyUseIsACancel() async throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: true, passcodeFallback: false), requiresDeviceLock: true))
        device.scriptKeyUses([LAError(.userCancel).nsError])
        let error = await signingError("k")
        XCTAssertEqual(error, .cancelled)
    }

    // MARK: LocalAuthentication prompts

    func testABiometricPromptWithoutFallbackUsesTheBiometricsOnlyPolicyAndHidesTheButton() async {
        let result = await platform.verifyWithOS(biometricPrompt(fallback: false))
        XCTAssertEqual(result, .verified)
        XCTAssertEqual(
            device.prompts, [.init(policy: .deviceOwnerAuthenticationWithBiometrics, reason: "Log in", fallbackTitle: "", cancelTitle: nil)])
    }

    func testABiometricPromptWithFallbackOffersThePasscode() async {
        _ = await platform.verifyWithOS(biometricPrompt(fallback: true))
        XCTAssertEqual(device.prompts.first?.policy, .deviceOwnerAuthentication)
        XCTAssertEqual(device.prompts.first?.fallbackTitle, "Use passcode")
    }

    func testTheKeyUseReusesThePromptsEvaluation() async throws {
        _ = try enclave.createKey(
            tag: "k", access: HardwareKeyAccess(userVerification: .biometry(currentSet: false, passcodeFallback: false), requiresDeviceLock: true))
        _ = await platform.verifyWithOS(biometricPrompt(fallback: false))
        _ = try await enclave.sign(tag: "k", message: message)
        _ = try await enclave.sign(tag: "k", message: message)
        XCTAssertEqual(device.keyUses.map(\.withContext), [true, false], "the evaluation is handed to the next key use only")
    }

    func testALockedOutSensorIsALockOutNotAMissingEnrolment() async {
        device.lockOutBiometry()
        let result = await platform.verifyWithOS(biometricPrompt(fallback: false))
        guard case .lockedOut = result else { return XCTFail("\(result)") }
        XCTAssertTrue(platform.biometricsEnrolled)
        XCTAssertTrue(platform.biometricsLockedOut)
        XCTAssertNil(platform.biometricSetIdentifier, "iOS hides the domain state while biometrics are locked")
    }

    func testALockOutDuringThePromptIsALockOut() async {
        device.scriptPrompts([.biometryLockout])
        guard case .lockedOut = await platform.verifyWithOS(biometricPrompt(fallback: false)) else { return XCTFail() }
    }

    func testEachPromptErrorBecomesItsOutcome() {
        let expected: [(LAError.Code, OSVerificationResult)] = [
            (.userCancel, .cancelled), (.appCancel, .cancelled), (.systemCancel, .cancelled), (.userFallback, .cancelled),
            (.authenticationFailed, .failed), (.invalidContext, .failed), (.notInteractive, .failed),
        ]
        for (code, outcome) in expected { XCTAssertEqual(ApplePlatform.result(for: code), outcome, "\(code)") }
        for code in [LAError.Code.biometryNotEnrolled, .biometryNotAvailable, .passcodeNotSet] {
            guard case .notAvailable = ApplePlatform.result(for: code) else { return XCTFail("\(code)") }
        }
    }

    /// Face ID switched off for the app (or no usage description): LocalAuthentication says `biometryNotAvailable` with
    /// the sensor still named; that is "not allowed", never a missing sensor or a changed set.
    func testFaceIDSwitchedOffForTheAppIsNotAllowed() async {
        device.allowBiometryForApp(false)
        XCTAssertFalse(platform.biometricsAllowed)
        XCTAssertFalse(platform.biometricsLockedOut)
        XCTAssertNil(platform.biometricSetIdentifier, "the set cannot be read, so the SDK must not compare it")
        guard case .notAllowed(let reason) = await platform.verifyWithOS(biometricPrompt(fallback: false)) else { return XCTFail() }
        XCTAssertTrue(reason.contains("Settings"), reason)
        device.allowBiometryForApp(true)
        XCTAssertTrue(platform.biometricsAllowed)
    }

    func testADeviceWithoutASensorIsNotAvailableNotNotAllowed() async {
        device.setSensor(.none)
        XCTAssertTrue(platform.biometricsAllowed, "no sensor is nothing the user switched off")
        guard case .notAvailable = await platform.verifyWithOS(biometricPrompt(fallback: false)) else { return XCTFail() }
    }

    func testNoEnrolledBiometricsIsNotAvailable() async {
        device.setBiometricsEnrolled(false)
        guard case .notAvailable = await platform.verifyWithOS(biometricPrompt(fallback: false)) else { return XCTFail() }
        XCTAssertFalse(platform.biometricsEnrolled)
        XCTAssertFalse(platform.biometricsLockedOut)
    }

    func testTheSensorIsReadFromTheBiometryType() {
        XCTAssertEqual(platform.biometricSensors, [.faceID])
        device.setSensor(.touchID)
        XCTAssertEqual(platform.biometricSensors, [.touchID])
        device.setSensor(.none)
        XCTAssertEqual(platform.biometricSensors, [])
    }

    // MARK: Integrity

    func flavored(_ flavor: SDKFlavor) -> ApplePlatform {
        ApplePlatform(
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("apple-\(UUID().uuidString)"),
            applicationFacetId: "ios:bundle-id:ch.example.app", secureEnclave: true, flavor: flavor)
    }

    func testTheReleaseFlavorRefusesAnAttachedDebugger() {
        device.attachDebugger()
        XCTAssertThrowsError(try flavored(.release).checkIntegrity()) {
            guard case .deviceProtection = $0 as? PlatformIntegrityError else { return XCTFail("\($0)") }
        }
    }

    func testTheDebugFlavorLetsAnAttachedDebuggerThrough() {
        device.attachDebugger()
        XCTAssertNoThrow(try flavored(.debug).checkIntegrity())
    }

    func testTheDebugFlavorStillRequiresADeviceLock() {
        device.attachDebugger()
        device.removePasscode()
        XCTAssertThrowsError(try flavored(.debug).checkIntegrity()) { XCTAssertEqual($0 as? PlatformIntegrityError, .noDeviceLock) }
    }

    /// Xcode's Run: the app starts under LLDB. The SDK built in the Debug configuration initializes; the one built for
    /// Archive (Release) refuses, as before.
    func testUnderADebuggerTheDebugFlavorInitializesAndTheReleaseFlavorRefuses() async throws {
        device.attachDebugger()
        let configuration = Configuration(baseUrl: URL(string: "https://bank.example")!)
        let debug = flavored(.debug)
        defer { try? FileManager.default.removeItem(at: debug.storageDirectory) }
        let client = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(debug).executeAsync()
        await client.shutdown()
        do {
            _ = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(flavored(.release)).executeAsync()
            XCTFail("the release flavor initialized under a debugger")
        } catch {
            guard case .DeviceProtectionError = error else { return XCTFail("\(error)") }
        }
    }

    func testThisBuildIsTheDebugFlavor() {
        // `swift build` and `swift test` compile the Debug configuration, as Xcode's Run does.
        XCTAssertEqual(SDKFlavor.current, .debug)
        XCTAssertEqual(platform.flavor, .debug)
    }

    func testADeviceWithoutPasscodeIsRefused() {
        XCTAssertNoThrow(try platform.checkIntegrity())
        device.removePasscode()
        XCTAssertThrowsError(try platform.checkIntegrity()) { XCTAssertEqual($0 as? PlatformIntegrityError, .noDeviceLock) }
    }

    // MARK: The storage key in the keychain

    func testTheStorageSecretIsCreatedOnceAndReused() throws {
        let protector = KeychainKeyProtector(service: "test")
        let parameters = try protector.makeParameters()
        let first = try protector.keyEncryptionKey(parameters: parameters, fingerprint: [1], storeID: [9])
        let second = try protector.keyEncryptionKey(parameters: parameters, fingerprint: [1], storeID: [9])
        XCTAssertEqual(first, second)
        XCTAssertEqual(device.keychainPasswordCount, 1)
    }

    func testDestroyingTheStorageSecretMakesANewKey() throws {
        let protector = KeychainKeyProtector(service: "test")
        let first = try protector.keyEncryptionKey(parameters: [0], fingerprint: [1], storeID: [9])
        try protector.destroySecret(storeID: [9])
        XCTAssertEqual(device.keychainPasswordCount, 0)
        XCTAssertNotEqual(try protector.keyEncryptionKey(parameters: [0], fingerprint: [1], storeID: [9]), first)
    }

    func testAKeychainFailureIsReportedNotWorkedAround() {
        device.lookupStatus = errSecInteractionNotAllowed
        XCTAssertThrowsError(try KeychainKeyProtector(service: "test").keyEncryptionKey(parameters: [0], fingerprint: [1], storeID: [9])) {
            guard case .keyProtectionUnavailable = $0 as? SecureStorageError else { return XCTFail("\($0)") }
        }
    }
}
#endif
