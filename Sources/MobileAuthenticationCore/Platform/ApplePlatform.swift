#if canImport(LocalAuthentication) && canImport(Security)
import Foundation
import LocalAuthentication
import Security
import SecureStorage

/// Apple platforms: LocalAuthentication verifies the user (Face ID, Touch ID, the device passcode) and reports
/// the facts the authenticators need (sensor, enrolment, the biometric domain state, whether a passcode is set);
/// the SDK's storage key is protected by the Keychain (``SecureStorage/KeychainKeyProtector``, this device only).
///
/// Biometric and device-passcode keys are Secure Enclave keys (``AppleSecureEnclave``): `.biometryCurrentSet`
/// when the registration invalidates on new biometrics, `.userPresence` otherwise, and only while a passcode is set
/// (the OS wipes them with the lock). The prompt the SDK shows is reused for the key's use, so the user sees one
/// prompt. PIN and password keys stay software keys in the Keychain-protected storage. Linux is the tested path;
/// this type is compiled only on Apple platforms.
public struct ApplePlatform: Platform {
    public let storageDirectory: URL
    public let applicationFacetId: String
    private let authenticated = AuthenticatedContext()
    private let useSecureEnclave: Bool

    /// `secureEnclave: false` for devices without one (the simulator): biometric keys are then software keys whose
    /// access control the SDK enforces.
    public init(storageDirectory: URL, applicationFacetId: String = MetaData.applicationFacetId, secureEnclave: Bool = true) {
        self.storageDirectory = storageDirectory; self.applicationFacetId = applicationFacetId; self.useSecureEnclave = secureEnclave
    }

    public var hardwareKeyStore: (any HardwareKeyStore)? { useSecureEnclave ? AppleSecureEnclave(authenticated: authenticated) : nil }

    /// The Keychain secret is already bound to this device (`…ThisDeviceOnly`), so the fingerprint only separates apps.
    public var deviceFingerprint: String { "apple|\(applicationFacetId)" }
    public func now() -> Date { Date() }
    public func makeKeyProtector() throws -> any KeyProtector { KeychainKeyProtector() }
    public var deviceProfile: DeviceProfile { .ios }

    /// A debugger can read keys and PINs from memory (Apple QA1361: the `P_TRACED` flag of the process).
    public func checkIntegrity() throws(PlatformIntegrityError) {
        var info = kinfo_proc()
        var mib: [Int32] = [CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()]
        var size = MemoryLayout<kinfo_proc>.stride
        if sysctl(&mib, UInt32(mib.count), &info, &size, nil, 0) == 0, (info.kp_proc.p_flag & P_TRACED) != 0 {
            throw .deviceProtection("a debugger is attached")
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

    public var biometricsEnrolled: Bool { LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) }

    public var biometricSetIdentifier: String? {
        let context = LAContext()
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) else { return nil }
        return context.evaluatedPolicyDomainState?.base64EncodedString()
    }

    public var hasDeviceLock: Bool { LAContext().canEvaluatePolicy(.deviceOwnerAuthentication, error: nil) }

    public func verifyWithOS(_ request: OSVerificationRequest) async -> OSVerificationResult {
        let context = LAContext()
        let policy: LAPolicy
        switch request.kind {
        case .biometric(_, let passcodeFallback):
            // Without the fallback the prompt offers no passcode button (an empty title hides it).
            policy = passcodeFallback ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
            context.localizedFallbackTitle = passcodeFallback ? request.fallbackButtonTitle : ""
        case .devicePasscode:
            policy = .deviceOwnerAuthentication
        }
        if let cancel = request.cancelButtonTitle { context.localizedCancelTitle = cancel }
        var availability: NSError?
        guard context.canEvaluatePolicy(policy, error: &availability) else {
            return .notAvailable(availability?.localizedDescription ?? "the device cannot verify the user")
        }
        do {
            guard try await context.evaluatePolicy(policy, localizedReason: request.reason) else { return .failed }
            // The key's use right after reuses this evaluation instead of prompting again.
            authenticated.set(context)
            return .verified
        } catch let error as LAError {
            switch error.code {
            case .userCancel, .appCancel, .systemCancel, .userFallback: return .cancelled
            case .biometryNotEnrolled, .biometryNotAvailable, .passcodeNotSet: return .notAvailable(error.localizedDescription)
            default: return .failed
            }
        } catch {
            return .failed
        }
    }
}

/// The last successful LocalAuthentication evaluation, handed to the next Secure Enclave key use once.
final class AuthenticatedContext: @unchecked Sendable {
    private let lock = NSLock()
    private var context: LAContext?
    func set(_ context: LAContext) { lock.withLock { self.context = context } }
    func take() -> LAContext? { lock.withLock { defer { context = nil }; return context } }
}

/// P-256 keys in the Secure Enclave, found by their application tag.
struct AppleSecureEnclave: HardwareKeyStore {
    let authenticated: AuthenticatedContext

    func createKey(tag: String, access: HardwareKeyAccess) throws(HardwareKeyError) -> [UInt8] {
        var error: Unmanaged<CFError>?
        let flags: SecAccessControlCreateFlags = access.boundToCurrentBiometricSet ? [.privateKeyUsage, .biometryCurrentSet] : [.privateKeyUsage, .userPresence]
        let protection = access.requiresDeviceLock ? kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly : kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        guard let control = SecAccessControlCreateWithFlags(kCFAllocatorDefault, protection, flags, &error) else {
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
        // A key invalidated by a biometric change, or wiped with the passcode, is no longer found.
        guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess, let item, CFGetTypeID(item) == SecKeyGetTypeID() else {
            throw .keyGone("\(tag) is no longer in the Secure Enclave")
        }
        let key = unsafeBitCast(item, to: SecKey.self)
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data(message) as CFData, &error) as Data? else {
            throw .unavailable(Self.describe(error))
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
