#if os(Linux)
import Crypto
import Foundation
import X509

/// The iPhone behind the shimmed frameworks, as Apple documents its behaviour: a sensor and its enrolment, a
/// passcode, a keychain whose `…WhenPasscodeSetThisDeviceOnly` items the OS wipes with the passcode, Secure Enclave
/// keys with their access control, and prompts whose outcomes a test scripts. `current` is the device the shim
/// answers for; a test installs a fresh one.
public final class ScriptedAppleDevice: @unchecked Sendable {
    /// A LocalAuthentication prompt the app showed.
    public struct Prompt: Equatable, Sendable {
        public let policy: LAPolicy
        public let reason: String
        public let fallbackTitle: String?
        public let cancelTitle: String?
        public init(policy: LAPolicy, reason: String, fallbackTitle: String?, cancelTitle: String?) {
            self.policy = policy
            self.reason = reason
            self.fallbackTitle = fallbackTitle
            self.cancelTitle = cancelTitle
        }
    }

    /// A Secure Enclave key as the OS holds it.
    public struct EnclaveKey {
        public let privateKey: P256.Signing.PrivateKey
        public let control: SecAccessControl
    }

    private final class Slot: @unchecked Sendable {
        let lock = NSLock()
        var device = ScriptedAppleDevice()
    }
    private static let slot = Slot()
    public static var current: ScriptedAppleDevice {
        get { slot.lock.withLock { slot.device } }
        set { slot.lock.withLock { slot.device = newValue } }
    }

    private let lock = NSLock()
    private var _biometryType: LABiometryType = .faceID
    private var _biometricsEnrolled = true
    private var _passcodeSet = true
    private var _biometryLockedOut = false
    private var _biometryAllowedForApp = true
    private var _debuggerAttached = false
    private var biometricGeneration = 1
    private var promptOutcomes: [LAError.Code] = []
    private var keyUseOutcomes: [NSError] = []
    private var _prompts: [Prompt] = []
    private var _keyUses: [(tag: String, withContext: Bool)] = []
    private var keys: [String: EnclaveKey] = [:]
    private var passwords: [String: (data: Data, accessible: String)] = [:]
    /// A status every keychain lookup answers instead of looking (the device is locked, the user cancelled…).
    public var lookupStatus: OSStatus? {
        get { lock.withLock { _lookupStatus } }
        set { lock.withLock { _lookupStatus = newValue } }
    }
    private var _lookupStatus: OSStatus?
    /// The roots the device's trust store holds (Settings → About → Certificate Trust Settings): none unless a test
    /// installs some.
    public var systemRoots: [Certificate] {
        get { lock.withLock { _systemRoots } }
        set { lock.withLock { _systemRoots = newValue } }
    }
    private var _systemRoots: [Certificate] = []

    public init() {}

    // MARK: What the user does in the Settings app

    public var biometryType: LABiometryType { lock.withLock { _biometryType } }
    public var biometricsEnrolled: Bool { lock.withLock { _biometricsEnrolled } }
    public var debuggerAttached: Bool { lock.withLock { _debuggerAttached } }
    public var biometricDomainState: Data { lock.withLock { Data("domain-state-\(biometricGeneration)".utf8) } }

    public func setSensor(_ type: LABiometryType) { lock.withLock { _biometryType = type } }
    public func setBiometricsEnrolled(_ enrolled: Bool) { lock.withLock { _biometricsEnrolled = enrolled } }
    public func attachDebugger() { lock.withLock { _debuggerAttached = true } }
    /// Too many failed biometric attempts: biometrics are locked until the user enters the passcode.
    public func lockOutBiometry(_ lockedOut: Bool = true) { lock.withLock { _biometryLockedOut = lockedOut } }
    /// The user switches Face ID off (`false`) for this app in Settings; iOS answers the same for an app without
    /// `NSFaceIDUsageDescription`: `biometryNotAvailable`, with `biometryType` still the sensor's.
    public func allowBiometryForApp(_ allowed: Bool) { lock.withLock { _biometryAllowedForApp = allowed } }

    /// A finger or face added: the domain state changes and `.biometryCurrentSet` keys are invalidated for good.
    public func changeBiometricSet() {
        lock.withLock {
            biometricGeneration += 1
            keys = keys.filter { !$0.value.control.flags.contains(.biometryCurrentSet) }
        }
    }

    /// The passcode removed: the OS wipes every item and key stored `…WhenPasscodeSetThisDeviceOnly`.
    public func removePasscode() {
        lock.withLock {
            _passcodeSet = false
            keys = keys.filter { $0.value.control.protection != kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String }
            passwords = passwords.filter { $0.value.accessible != kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String }
        }
    }

    // MARK: Prompts

    /// How the next LocalAuthentication prompts end, in order; after the script, prompts succeed.
    public func scriptPrompts(_ outcomes: [LAError.Code]) { lock.withLock { promptOutcomes = outcomes } }
    /// How the next Secure Enclave key uses fail (the OS's own prompt at key use), in order.
    public func scriptKeyUses(_ failures: [NSError]) { lock.withLock { keyUseOutcomes = failures } }
    public var prompts: [Prompt] { lock.withLock { _prompts } }
    /// The key uses, and whether each came with an authenticated LocalAuthentication context.
    public var keyUses: [(tag: String, withContext: Bool)] { lock.withLock { _keyUses } }
    public var enclaveKeys: [String: EnclaveKey] { lock.withLock { keys } }
    public var keychainPasswordCount: Int { lock.withLock { passwords.count } }

    func recordPrompt(_ prompt: Prompt) { lock.withLock { _prompts.append(prompt) } }

    func nextPromptOutcome() -> LAError? {
        lock.withLock { promptOutcomes.isEmpty ? nil : LAError(promptOutcomes.removeFirst()) }
    }

    /// Why the device cannot evaluate `policy` now, in the order iOS checks.
    func availabilityError(_ policy: LAPolicy) -> LAError? {
        lock.withLock {
            switch policy {
            case .deviceOwnerAuthenticationWithBiometrics:
                if _biometryType == .none { return LAError(.biometryNotAvailable) }
                if !_biometryAllowedForApp { return LAError(.biometryNotAvailable) }
                if !_biometricsEnrolled { return LAError(.biometryNotEnrolled) }
                if !_passcodeSet { return LAError(.passcodeNotSet) }
                if _biometryLockedOut { return LAError(.biometryLockout) }
                return nil
            case .deviceOwnerAuthentication:
                return _passcodeSet ? nil : LAError(.passcodeNotSet)
            }
        }
    }

    // MARK: The keychain and the Secure Enclave

    func createEnclaveKey(tag: String, control: SecAccessControl) -> Result<SecKey, NSError> {
        lock.withLock {
            if control.protection == kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly as String && !_passcodeSet {
                return .failure(NSError(domain: NSOSStatusErrorDomain, code: Int(errSecAuthFailed)))
            }
            keys[tag] = EnclaveKey(privateKey: P256.Signing.PrivateKey(), control: control)
            return .success(SecKey(tag: tag, isPublic: false, context: nil))
        }
    }

    func enclavePublicKey(tag: String) -> P256.Signing.PublicKey? { lock.withLock { keys[tag]?.privateKey.publicKey } }

    func sign(_ key: SecKey, message: Data) -> Result<Data, NSError> {
        lock.withLock {
            _keyUses.append((key.tag, key.context?.isAuthenticated == true))
            guard let entry = keys[key.tag] else { return .failure(NSError(domain: NSOSStatusErrorDomain, code: Int(errSecItemNotFound))) }
            if !keyUseOutcomes.isEmpty { return .failure(keyUseOutcomes.removeFirst()) }
            do { return .success(try entry.privateKey.signature(for: message).derRepresentation) } catch {
                return .failure(NSError(domain: NSOSStatusErrorDomain, code: -50))
            }
        }
    }

    func copyMatching(_ query: [String: Any], result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
        lock.withLock {
            if let status = _lookupStatus { return status }
            let kind = query[kSecClass as String] as? String
            if kind == kSecClassKey as String {
                guard let tag = (query[kSecAttrApplicationTag as String] as? Data).map({ String(decoding: $0, as: UTF8.self) }),
                    keys[tag] != nil
                else { return errSecItemNotFound }
                result?.pointee = SecKey(tag: tag, isPublic: false, context: query[kSecUseAuthenticationContext as String] as? LAContext)
                return errSecSuccess
            }
            if kind == kSecClassGenericPassword as String {
                guard let entry = passwords[Self.passwordKey(query)] else { return errSecItemNotFound }
                if query[kSecReturnData as String] as? Bool == true { result?.pointee = entry.data as CFData }
                return errSecSuccess
            }
            return -50
        }
    }

    func add(_ attributes: [String: Any]) -> OSStatus {
        lock.withLock {
            guard attributes[kSecClass as String] as? String == kSecClassGenericPassword as String,
                let data = attributes[kSecValueData as String] as? Data,
                let accessible = attributes[kSecAttrAccessible as String] as? String
            else { return -50 }
            let key = Self.passwordKey(attributes)
            if passwords[key] != nil { return errSecDuplicateItem }
            passwords[key] = (data, accessible)
            return errSecSuccess
        }
    }

    func delete(_ query: [String: Any]) -> OSStatus {
        lock.withLock {
            let kind = query[kSecClass as String] as? String
            if kind == kSecClassKey as String {
                guard let tag = (query[kSecAttrApplicationTag as String] as? Data).map({ String(decoding: $0, as: UTF8.self) }),
                    keys.removeValue(forKey: tag) != nil
                else { return errSecItemNotFound }
                return errSecSuccess
            }
            if kind == kSecClassGenericPassword as String {
                return passwords.removeValue(forKey: Self.passwordKey(query)) == nil ? errSecItemNotFound : errSecSuccess
            }
            return -50
        }
    }

    private static func passwordKey(_ query: [String: Any]) -> String {
        "\(query[kSecAttrService as String] as? String ?? "")|\(query[kSecAttrAccount as String] as? String ?? "")"
    }
}
#endif
