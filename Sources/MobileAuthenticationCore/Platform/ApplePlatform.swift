// Compiled in MobileAuthenticationCore where the frameworks exist, and in the test target ApplePlatformTests (a link
// to this file) only against its shim on Linux: on an Apple platform the test module is not this file's home.
#if APPLE_FRAMEWORKS_SHIM || (canImport(LocalAuthentication) && canImport(Security) && !APPLE_SOURCES_LINKED)
import Foundation
#if APPLE_FRAMEWORKS_SHIM
// Linux: the test target `ApplePlatformTests` compiles this file against a scripted stand-in of the frameworks,
// with Apple's signatures, so that the decisions below run in `swift test` (see the catalogue's "The Apple path").
import AppleFrameworksShim
import MobileAuthenticationCore
#else
import LocalAuthentication
import Security
#endif
import SecureStorage

/// Apple platforms: LocalAuthentication verifies the user (Face ID, Touch ID, the device passcode) and reports
/// the facts the authenticators need (sensor, enrolment, the biometric domain state, whether a passcode is set);
/// the SDK's storage key is protected by the Keychain (``SecureStorage/KeychainKeyProtector``, this device only).
///
/// Every authenticator key is a Secure Enclave key stored `…WhenPasscodeSetThisDeviceOnly`, so the OS wipes it when
/// the device lock is removed (seed 000, "Device lock removal"). Its access control follows the registration's
/// options (`accessControlFlags(_:)`): biometric keys need biometrics of the current set or of any set, with the
/// passcode as an alternative only when the fallback is allowed; PIN and password keys need no OS prompt, since the
/// SDK verifies the secret. The prompt the SDK shows is reused for the key's use, so the user sees one prompt.
/// It is the default platform of `MobileAuthenticationClient` on Apple platforms.
public struct ApplePlatform: Platform {
    public let storageDirectory: URL
    public let applicationFacetId: String
    private let authenticated = AuthenticatedContext()
    private let useSecureEnclave: Bool
    /// The build's flavor (``SDKFlavor/current``); tests of the Apple path choose one, an app cannot.
    let flavor: SDKFlavor

    /// `secureEnclave: false` for devices without one (the simulator): keys are then software keys whose access
    /// control the SDK enforces.
    public init(storageDirectory: URL, applicationFacetId: String = MetaData.applicationFacetId, secureEnclave: Bool = true) {
        self.init(storageDirectory: storageDirectory, applicationFacetId: applicationFacetId, secureEnclave: secureEnclave, flavor: .current)
    }

    init(storageDirectory: URL, applicationFacetId: String, secureEnclave: Bool, flavor: SDKFlavor) {
        self.storageDirectory = storageDirectory
        self.applicationFacetId = applicationFacetId
        self.useSecureEnclave = secureEnclave
        self.flavor = flavor
    }

    public var hardwareKeyStore: (any HardwareKeyStore)? { useSecureEnclave ? AppleSecureEnclave(authenticated: authenticated) : nil }
    /// App Attest (DeviceCheck): used when the app configured ``Configuration/appAttestation`` and a server asks.
    public var appAttest: (any AppAttestProvider)? { AppleAppAttestService() }

    /// The Keychain secret is already bound to this device (`…ThisDeviceOnly`), so the fingerprint only separates apps.
    public var deviceFingerprint: String { "apple|\(applicationFacetId)" }
    public func now() -> Date { Date() }
    public func makeKeyProtector() throws -> any KeyProtector { KeychainKeyProtector() }

    /// Application Support is backed up by default; the storage folder is not (its Keychain secret never is).
    public func excludeFromBackup(_ directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        var folder = directory
        try folder.setResourceValues(values)
    }
    public var deviceProfile: DeviceProfile { .ios }

    /// A debugger can read keys and PINs from memory (Apple QA1361: the `P_TRACED` flag of the process). The debug
    /// flavor (Xcode's Run, LLDB attached) skips that check only, and says so once; the device lock is required in
    /// both flavors.
    public func checkIntegrity() throws(PlatformIntegrityError) {
        var info = kinfo_proc()
        var mib: [Int32] = [CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()]
        var size = MemoryLayout<kinfo_proc>.stride
        if sysctl(&mib, UInt32(mib.count), &info, &size, nil, 0) == 0, (info.kp_proc.p_flag & P_TRACED) != 0 {
            guard flavor == .debug else { throw .deviceProtection("a debugger is attached") }
            _ = DebugFlavorNotice.said
        }
        if !hasDeviceLock { throw .noDeviceLock }
    }

    public var biometricSensors: Set<BiometricSensor> {
        let context = LAContext()
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        switch context.biometryType {
        case .faceID: return [.faceID]
        case .touchID: return [.touchID]
        default: return []
        }
    }

    /// Locked-out biometrics are still enrolled: the lock-out ends with the passcode, the enrolment does not.
    public var biometricsEnrolled: Bool {
        let (available, code) = Self.evaluate(.deviceOwnerAuthenticationWithBiometrics)
        return available || code == .biometryLockout
    }

    public var biometricsLockedOut: Bool { Self.evaluate(.deviceOwnerAuthenticationWithBiometrics).code == .biometryLockout }

    public var biometricsAllowed: Bool {
        let context = LAContext()
        var error: NSError?
        if context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) { return true }
        return !Self.biometryDenied(error, type: context.biometryType)
    }

    public var biometricSetIdentifier: String? {
        let context = LAContext()
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) else { return nil }
        return context.evaluatedPolicyDomainState?.base64EncodedString()
    }

    public var hasDeviceLock: Bool { LAContext().canEvaluatePolicy(.deviceOwnerAuthentication, error: nil) }

    public func verifyWithOS(_ request: OSVerificationRequest) async -> OSVerificationResult {
        let context = LAContext()
        let policy = Self.policy(for: request.kind)
        if case .biometric(_, let passcodeFallback) = request.kind {
            // Without the fallback the prompt offers no passcode button (an empty title hides it).
            context.localizedFallbackTitle = passcodeFallback ? request.fallbackButtonTitle : ""
        }
        if let cancel = request.cancelButtonTitle { context.localizedCancelTitle = cancel }
        var availability: NSError?
        guard context.canEvaluatePolicy(policy, error: &availability) else {
            if case .biometric = request.kind, Self.biometryDenied(availability, type: context.biometryType) { return Self.notAllowed }
            return Self.unavailable(availability)
        }
        do {
            guard try await context.evaluatePolicy(policy, localizedReason: request.reason) else { return .failed }
            // The key's use right after reuses this evaluation instead of prompting again.
            authenticated.set(context)
            return .verified
        } catch let error as LAError {
            if error.code == .biometryNotAvailable, context.biometryType != .none { return Self.notAllowed }
            return Self.result(for: error.code)
        } catch {
            return .failed
        }
    }
}

// MARK: - Decisions (unit-tested on Linux against the scripted frameworks)

extension ApplePlatform {
    /// The LocalAuthentication policy of a prompt. Biometrics without the passcode fallback evaluate the
    /// biometrics-only policy, so the OS itself cannot accept the passcode.
    static func policy(for kind: OSVerificationRequest.Kind) -> LAPolicy {
        switch kind {
        case .biometric(_, let passcodeFallback): return passcodeFallback ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
        case .devicePasscode: return .deviceOwnerAuthentication
        }
    }

    /// How a prompt's `LAError` ends the verification. A lock-out is its own outcome: it passes when the user
    /// enters the passcode, so it must never read as a failure of the key (`keyDisappearedPermanently`).
    static func result(for code: LAError.Code) -> OSVerificationResult {
        switch code {
        case .userCancel, .appCancel, .systemCancel, .userFallback: return .cancelled
        case .biometryLockout:
            return .lockedOut("biometrics are locked after too many failed attempts; unlock the device with its passcode to use them again")
        case .biometryNotEnrolled: return .notAvailable("no biometrics are enrolled in the system settings")
        case .biometryNotAvailable: return .notAvailable("biometrics are not available on this device")
        case .passcodeNotSet: return .notAvailable("no device passcode is set")
        default: return .failed
        }
    }

    /// Face ID switched off for this app in Settings, or no `NSFaceIDUsageDescription`: the device has the sensor, yet
    /// LocalAuthentication calls biometrics "not available" to the app (`biometryType` is set whatever
    /// `canEvaluatePolicy` answers).
    static func biometryDenied(_ error: NSError?, type: LABiometryType) -> Bool { laCode(error) == .biometryNotAvailable && type != .none }

    static let notAllowed = OSVerificationResult.notAllowed(
        "this app may not use Face ID: turn it on in Settings → the app → Face ID (or the app lacks NSFaceIDUsageDescription)")

    /// Why `canEvaluatePolicy` said no, as a verification outcome.
    static func unavailable(_ error: NSError?) -> OSVerificationResult {
        if let code = laCode(error) {
            if case .lockedOut(let reason) = result(for: code) { return .lockedOut(reason) }
            if case .notAvailable(let reason) = result(for: code) { return .notAvailable(reason) }
        }
        return .notAvailable(error?.localizedDescription ?? "the device cannot verify the user")
    }

    /// The access control of a Secure Enclave key (seed 000: passcode fallback and biometric invalidation).
    /// `.biometryAny` rather than `.userPresence` when no fallback is allowed: `.userPresence` would let the
    /// passcode unlock the key whatever the registration said.
    static func accessControlFlags(_ verification: HardwareKeyAccess.UserVerification) -> SecAccessControlCreateFlags {
        switch verification {
        case .application: return [.privateKeyUsage]
        case .deviceOwner: return [.privateKeyUsage, .userPresence]
        case .biometry(currentSet: true, passcodeFallback: false): return [.privateKeyUsage, .biometryCurrentSet]
        case .biometry(currentSet: true, passcodeFallback: true): return [.privateKeyUsage, .biometryCurrentSet, .or, .devicePasscode]
        case .biometry(currentSet: false, passcodeFallback: false): return [.privateKeyUsage, .biometryAny]
        case .biometry(currentSet: false, passcodeFallback: true): return [.privateKeyUsage, .userPresence]
        }
    }

    /// The keychain protection class of a key: with the device lock, the OS wipes it when the lock is removed.
    static func protectionClass(_ access: HardwareKeyAccess) -> CFString {
        access.requiresDeviceLock ? kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly : kSecAttrAccessibleWhenUnlockedThisDeviceOnly
    }

    /// Why the keychain did not hand out a key. Only a key that is not there is gone for good; a locked device, a
    /// cancelled prompt or a refused verification leave it intact, and must not make the app delete a registration.
    static func lookupFailure(_ status: OSStatus, tag: String) -> HardwareKeyError {
        switch status {
        case errSecItemNotFound: return .keyGone("\(tag) is no longer in the Secure Enclave")
        case errSecUserCanceled: return .cancelled
        case errSecInteractionNotAllowed: return .unavailable("the device is locked")
        case errSecAuthFailed: return .unavailable("the operating system did not verify the user")
        default: return .unavailable("the keychain refused the key (status \(status))")
        }
    }

    /// Why the Secure Enclave did not sign: a LocalAuthentication error from the key's own prompt, or a status.
    static func signingFailure(_ error: Error?, tag: String) -> HardwareKeyError {
        guard let error = error.map({ $0 as NSError }) else { return .unavailable("the Secure Enclave refused") }
        if let code = laCode(error) {
            switch result(for: code) {
            case .cancelled: return .cancelled
            case .lockedOut(let reason): return .lockedOut(reason)
            default: return .unavailable("the operating system did not verify the user")
            }
        }
        if error.domain == NSOSStatusErrorDomain, let status = OSStatus(exactly: error.code) { return lookupFailure(status, tag: tag) }
        return .unavailable("the Secure Enclave refused (\(error.domain) \(error.code))")
    }

    static func laCode(_ error: NSError?) -> LAError.Code? {
        guard let error, error.domain == LAErrorDomain else { return nil }
        return LAError.Code(rawValue: error.code)
    }

    /// Whether `policy` can be evaluated now, and the LocalAuthentication reason when not.
    private static func evaluate(_ policy: LAPolicy) -> (available: Bool, code: LAError.Code?) {
        var error: NSError?
        let available = LAContext().canEvaluatePolicy(policy, error: &error)
        return (available, available ? nil : laCode(error))
    }
}

/// The debug flavor's word in the log, once per process, the first time it lets a traced process through: a
/// static is initialized once, on first use, whichever thread gets there.
enum DebugFlavorNotice {
    static let said: Void = NSLog(
        "mauth SDK, debug flavor: a debugger is attached and allowed; a Release build (Archive) refuses it with DeviceProtectionError")
}

/// The last successful LocalAuthentication evaluation, handed to the next Secure Enclave key use once.
final class AuthenticatedContext: @unchecked Sendable {
    private let lock = NSLock()
    private var context: LAContext?
    func set(_ context: LAContext) { lock.withLock { self.context = context } }
    func take() -> LAContext? {
        lock.withLock {
            defer { context = nil }
            return context
        }
    }
}

/// P-256 keys in the Secure Enclave, found by their application tag.
struct AppleSecureEnclave: HardwareKeyStore {
    let authenticated: AuthenticatedContext

    func createKey(tag: String, access: HardwareKeyAccess) throws(HardwareKeyError) -> [UInt8] {
        var error: Unmanaged<CFError>?
        guard
            let control = SecAccessControlCreateWithFlags(
                kCFAllocatorDefault, ApplePlatform.protectionClass(access), ApplePlatform.accessControlFlags(access.userVerification), &error)
        else {
            throw .unavailable(Self.describe(error))
        }
        let attributes: [String: Any] = [
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecAttrKeySizeInBits as String: 256,
            kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
            kSecPrivateKeyAttrs as String: [
                kSecAttrIsPermanent as String: true,
                kSecAttrApplicationTag as String: Data(tag.utf8),
                kSecAttrAccessControl as String: control,
            ] as [String: Any],
        ]
        guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else { throw .unavailable(Self.describe(error)) }
        guard let publicKey = SecKeyCopyPublicKey(privateKey), let x963 = SecKeyCopyExternalRepresentation(publicKey, &error) as Data? else {
            deleteKey(tag: tag)
            throw .unavailable(Self.describe(error))
        }
        return Array(x963)
    }

    func sign(tag: String, message: [UInt8]) async throws(HardwareKeyError) -> [UInt8] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassKey,
            kSecAttrApplicationTag as String: Data(tag.utf8),
            kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
            kSecReturnRef as String: true,
        ]
        if let context = authenticated.take() { query[kSecUseAuthenticationContext as String] = context }
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        guard status == errSecSuccess else { throw ApplePlatform.lookupFailure(status, tag: tag) }
        guard let item, CFGetTypeID(item) == SecKeyGetTypeID() else {
            throw .unavailable("the keychain answered something other than a key for \(tag)")
        }
        let key = unsafeDowncast(item, to: SecKey.self)
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data(message) as CFData, &error) as Data? else {
            throw ApplePlatform.signingFailure(error?.takeRetainedValue() as Error?, tag: tag)
        }
        return Array(signature)
    }

    func deleteKey(tag: String) {
        SecItemDelete([kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data(tag.utf8)] as CFDictionary)
    }

    private static func describe(_ error: Unmanaged<CFError>?) -> String {
        error.map { String(describing: $0.takeRetainedValue()) } ?? "the Secure Enclave refused"
    }
}
#endif
