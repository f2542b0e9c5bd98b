import Foundation
import SecureStorage

/// Why the platform refuses to run an operation.
public enum PlatformIntegrityError: Error, Sendable, Equatable {
    /// A debugger is attached or the process was tampered with.
    case deviceProtection(String)
    /// The device has no screen lock.
    case noDeviceLock
}

/// A biometric sensor the operating system offers.
public enum BiometricSensor: String, Sendable, Hashable, CaseIterable {
    case touchID
    case faceID
    /// An Android Class 3 (strong) biometric sensor, usable with BiometricPrompt.
    case androidClass3
    /// An Android Class 2 (weak) biometric sensor; used only with `allowClass2Sensors(true)`.
    case androidClass2
    /// The legacy Android fingerprint sensor (FingerprintManager).
    case androidFingerprint
}

/// What the operating system is asked to verify.
public struct OSVerificationRequest: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Biometrics of `sensor`; `passcodeFallback` lets the OS offer the device passcode instead.
        case biometric(sensor: BiometricSensor, passcodeFallback: Bool)
        case devicePasscode
    }
    public let kind: Kind
    /// The text the prompt shows (the app's ``BiometricPromptOptions`` or ``DevicePasscodePromptOptions``).
    public let reason: String
    public let fallbackButtonTitle: String?
    public let cancelButtonTitle: String?
    public init(kind: Kind, reason: String, fallbackButtonTitle: String? = nil, cancelButtonTitle: String? = nil) {
        self.kind = kind
        self.reason = reason
        self.fallbackButtonTitle = fallbackButtonTitle
        self.cancelButtonTitle = cancelButtonTitle
    }
}

/// How the operating system's prompt ended.
public enum OSVerificationResult: Sendable, Equatable {
    case verified
    /// The user verified with the device passcode offered as fallback.
    case verifiedWithPasscodeFallback
    /// The OS gave up after too many failed attempts (the OS itself shows the retries).
    case failed
    /// The user (or the app) cancelled the prompt.
    case cancelled
    /// Biometrics are locked after too many failed attempts (temporarily: the device passcode unlocks them).
    case lockedOut(String)
    /// The OS cannot verify now (no sensor, nothing enrolled, no passcode).
    case notAvailable(String)
    /// The app may not use biometrics: the user switched Face ID off for it, or it has no `NSFaceIDUsageDescription`.
    case notAllowed(String)
}

/// What the SDK needs from the operating system. Three implementations: ``SoftwarePlatform`` (Linux),
/// the Apple platform (Secure Enclave, Keychain, LocalAuthentication; compiled only where they exist), and
/// `SimulatedPlatform` (module `MobileAuthenticationSimulator`: tests and the CLI's virtual device).
public protocol Platform: Sendable {
    /// Device-dependent data that binds the SDK's storage to this device.
    var deviceFingerprint: String { get }
    /// Where the SDK keeps its storage file.
    var storageDirectory: URL { get }
    /// The FacetID of the running application, used when the configuration names none.
    var applicationFacetId: String { get }
    /// The current time (a platform so that tests can move it).
    func now() -> Date
    /// Checks the device's integrity before and during operations.
    func checkIntegrity() throws(PlatformIntegrityError)
    /// The key protection for the SDK's storage.
    func makeKeyProtector() throws -> any KeyProtector

    /// Which authenticator family the device offers (AAIDs, algorithms).
    var deviceProfile: DeviceProfile { get }
    /// The biometric sensors present.
    var biometricSensors: Set<BiometricSensor> { get }
    /// Whether the user enrolled biometrics in the OS settings.
    var biometricsEnrolled: Bool { get }
    /// An opaque value that changes whenever the OS biometric set changes (iOS: the LocalAuthentication domain
    /// state). Keys created with `invalidateOnNewOsBiometrics` are bound to it.
    var biometricSetIdentifier: String? { get }
    /// Whether biometrics are locked after too many failed attempts. The biometric set cannot be read then
    /// (``biometricSetIdentifier`` is `nil`), which must not be taken for a changed set.
    var biometricsLockedOut: Bool { get }
    /// Whether this app may use biometrics: false when the user switched Face ID off for the app in Settings, or the
    /// app has no `NSFaceIDUsageDescription` (iOS refuses Face ID to such an app). The biometric set cannot be read
    /// then either, which must not be taken for a changed set.
    var biometricsAllowed: Bool { get }
    /// Whether the device has a screen lock (passcode).
    var hasDeviceLock: Bool { get }
    /// Changes every time the device lock is removed. Hardware-protected keys remember the value they were created
    /// under; the OS wipes them when the lock goes, so a key from an earlier generation is gone for good.
    var deviceLockGeneration: Int { get }
    /// Shows the operating system's verification prompt and waits for its outcome.
    func verifyWithOS(_ request: OSVerificationRequest) async -> OSVerificationResult
    /// The hardware keystore for authenticator keys, if the device has one.
    var hardwareKeyStore: (any HardwareKeyStore)? { get }
    /// Keeps `directory` (the storage folder, created if missing) out of the device's backups; called before the
    /// storage opens. The storage's key protection is device-bound, so a backed-up copy could never be opened on
    /// another device. Where the system makes no backups of the folder, nothing to do.
    func excludeFromBackup(_ directory: URL) throws
    /// Apple's App Attest, where the platform has it (``AppAttestProvider``).
    var appAttest: (any AppAttestProvider)? { get }
    /// Google's Play Integrity, where the platform has it (``PlayIntegrityProvider``).
    var playIntegrity: (any PlayIntegrityProvider)? { get }
    /// The platform's passkey authenticator; nil where there is none.
    var passkeys: (any PasskeyProvider)? { get }
}

extension Platform {
    public var deviceProfile: DeviceProfile { .ios }
    public var biometricSensors: Set<BiometricSensor> { [] }
    public var biometricsEnrolled: Bool { false }
    public var biometricSetIdentifier: String? { nil }
    public var biometricsLockedOut: Bool { false }
    public var biometricsAllowed: Bool { true }
    public var hasDeviceLock: Bool { false }
    public var deviceLockGeneration: Int { 0 }
    public func excludeFromBackup(_ directory: URL) throws {}
    public var appAttest: (any AppAttestProvider)? { nil }
    public var playIntegrity: (any PlayIntegrityProvider)? { nil }
    public var passkeys: (any PasskeyProvider)? { nil }
    public func verifyWithOS(_ request: OSVerificationRequest) async -> OSVerificationResult {
        .notAvailable("this platform has no operating-system user verification")
    }
}

/// Linux (and any system without a hardware keystore): keys live in the SDK's SecureStorage, bound to
/// `/etc/machine-id`, the user and the application facet, protected with scrypt. There are no biometrics and no
/// device passcode, so only the PIN and password authenticators are supported.
public struct SoftwarePlatform: Platform {
    public let storageDirectory: URL
    public let applicationFacetId: String
    /// scrypt cost for the storage key.
    public let storageKDFCost: Int
    public let deviceProfile: DeviceProfile
    /// Where the process status is read for the tracer check (a parameter so that tests can point at a file).
    let processStatusPath: String

    public init(storageDirectory: URL, applicationFacetId: String, storageKDFCost: Int = 1 << 15, deviceProfile: DeviceProfile = .ios) {
        self.init(
            storageDirectory: storageDirectory, applicationFacetId: applicationFacetId, storageKDFCost: storageKDFCost,
            deviceProfile: deviceProfile, processStatusPath: "/proc/self/status")
    }

    init(storageDirectory: URL, applicationFacetId: String, storageKDFCost: Int, deviceProfile: DeviceProfile, processStatusPath: String) {
        self.storageDirectory = storageDirectory
        self.applicationFacetId = applicationFacetId
        self.storageKDFCost = storageKDFCost
        self.deviceProfile = deviceProfile
        self.processStatusPath = processStatusPath
    }

    public var deviceFingerprint: String {
        let machineID =
            (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "no-machine-id"
        return "\(machineID)|uid=\(getuid())|\(applicationFacetId)"
    }

    public func now() -> Date { Date() }

    /// A debugger or tracer (gdb, lldb, strace) attached to the process can read keys and PINs from memory, so
    /// operations refuse to run while one is attached: Linux reports it as `TracerPid` in `/proc/self/status`.
    public func checkIntegrity() throws(PlatformIntegrityError) {
        guard let status = try? String(contentsOfFile: processStatusPath, encoding: .utf8) else { return }
        if let tracer = Self.tracerPID(inProcessStatus: status), tracer != 0 {
            throw .deviceProtection("a debugger or tracer (pid \(tracer)) is attached to the process")
        }
    }

    /// The `TracerPid` of a `/proc/<pid>/status` text.
    static func tracerPID(inProcessStatus status: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix("TracerPid:") {
            return Int(line.dropFirst("TracerPid:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    public func makeKeyProtector() throws -> any KeyProtector { try SoftwareKeyProtector(iterationCount: storageKDFCost) }
}
