import FIDOSimulation
import Foundation
import MobileAuthenticationCore
import SecureStorage

/// A scriptable platform for tests and the virtual device: it can move the clock, attach a debugger, remove the
/// device lock, enrol or change biometrics, remove sensors, and script how the OS prompts end, as real devices do.
public final class SimulatedPlatform: Platform, @unchecked Sendable {
    private let lock = NSLock()
    public let storageDirectory: URL
    public let applicationFacetId: String
    public let deviceFingerprint: String
    public let deviceProfile: DeviceProfile
    private var clockOffset: TimeInterval = 0
    private var debuggerAttached = false
    private var deviceLockPresent = true
    private var lockGeneration = 0
    private var sensors: Set<BiometricSensor>
    private var enrolled = true
    private var biometricSet = 1
    private var lockedOut = false
    private var biometricsAllowedForApp = true
    private var promptScript: [OSVerificationResult] = []
    private var fallbackAlwaysOffered = false
    private var prompts: [OSVerificationRequest] = []
    private let protector: SoftwareKeyProtector
    private var secureEnclave: SimulatedHardwareKeyStore?
    private var excludedFromBackup: [URL] = []
    private var appAttestService: SimulatedAppAttest?
    private var playIntegrityService: SimulatedPlayIntegrity?

    /// A device of `profile` with its usual sensor (Face ID on iOS, a Class 3 sensor on Android), biometrics
    /// enrolled and a device lock set.
    public init(
        storageDirectory: URL, applicationFacetId: String = SoftwareAuthenticator.virtualDeviceFacetID,
        deviceFingerprint: String = "simulated-device", deviceProfile: DeviceProfile = .ios
    ) {
        self.storageDirectory = storageDirectory
        self.applicationFacetId = applicationFacetId
        self.deviceFingerprint = deviceFingerprint
        self.deviceProfile = deviceProfile
        sensors = deviceProfile == .ios ? [.faceID] : [.androidClass3, .androidFingerprint]
        simulatedPasskeys = SimulatedPasskeys(profile: deviceProfile)
        // A fixed, cheap cost: the simulated device's storage key is not what its tests are about.
        protector = try! SoftwareKeyProtector(iterationCount: 1024)
    }

    public func now() -> Date { lock.withLock { Date().addingTimeInterval(clockOffset) } }
    /// Moves the simulated clock forward.
    public func advanceClock(by seconds: TimeInterval) { lock.withLock { clockOffset += seconds } }
    public func attachDebugger(_ attached: Bool = true) { lock.withLock { debuggerAttached = attached } }
    /// Sets or removes the device lock. Removing it wipes every hardware-protected key, as the OS does.
    public func setDeviceLock(_ present: Bool) {
        lock.withLock {
            if deviceLockPresent && !present { lockGeneration += 1 }
            deviceLockPresent = present
        }
    }
    /// Which biometric sensors the device has (empty: no biometric hardware).
    public func setBiometricSensors(_ sensors: Set<BiometricSensor>) { lock.withLock { self.sensors = sensors } }
    /// Whether biometrics are enrolled in the OS settings.
    public func setBiometricsEnrolled(_ enrolled: Bool) { lock.withLock { self.enrolled = enrolled } }
    /// The user adds (or removes) a finger or face in the OS settings.
    public func changeBiometricSet() { lock.withLock { biometricSet += 1 } }
    /// Too many failed biometric attempts: biometrics are locked until the user enters the passcode (`false`). As
    /// on iOS, the biometric set cannot be read meanwhile and every biometric prompt ends `.lockedOut`.
    public func lockOutBiometrics(_ locked: Bool = true) { lock.withLock { lockedOut = locked } }
    /// The user switches Face ID off (`false`) or on for this app in Settings. As on iOS, the biometric set cannot be
    /// read meanwhile and every biometric prompt ends `.notAllowed`; the keys are intact.
    public func setBiometricsAllowed(_ allowed: Bool) { lock.withLock { biometricsAllowedForApp = allowed } }
    /// How the next OS prompts end, in order; after the script, prompts succeed.
    public func scriptOSPrompts(_ results: [OSVerificationResult]) { lock.withLock { promptScript = results } }
    /// A lenient OS: its biometric prompt accepts the device passcode even when the SDK did not ask for the fallback.
    /// The SDK must refuse that answer itself; by default the simulated OS, like iOS, offers no passcode button then.
    public func offerPasscodeFallbackAlways() { lock.withLock { fallbackAlwaysOffered = true } }
    /// The OS prompts shown so far.
    public var shownOSPrompts: [OSVerificationRequest] { lock.withLock { prompts } }

    public var biometricSensors: Set<BiometricSensor> { lock.withLock { sensors } }
    public var biometricsEnrolled: Bool { lock.withLock { enrolled && !sensors.isEmpty } }
    public var biometricSetIdentifier: String? {
        lock.withLock { enrolled && !sensors.isEmpty && !lockedOut && biometricsAllowedForApp ? "biometric-set-\(biometricSet)" : nil }
    }
    public var biometricsLockedOut: Bool { lock.withLock { lockedOut } }
    public var biometricsAllowed: Bool { lock.withLock { biometricsAllowedForApp } }
    public var hasDeviceLock: Bool { lock.withLock { deviceLockPresent } }
    public var deviceLockGeneration: Int { lock.withLock { lockGeneration } }

    public func verifyWithOS(_ request: OSVerificationRequest) async -> OSVerificationResult {
        lock.withLock {
            prompts.append(request)
            switch request.kind {
            case .biometric(let sensor, _):
                guard sensors.contains(sensor) else { return .notAvailable("no \(sensor.rawValue) sensor") }
                guard biometricsAllowedForApp else { return .notAllowed("Face ID is turned off for this app in Settings") }
                guard enrolled else { return .notAvailable("no biometrics enrolled") }
                if lockedOut { return .lockedOut("biometrics are locked after too many failed attempts") }
            case .devicePasscode:
                guard deviceLockPresent else { return .notAvailable("no device passcode is set") }
            }
            if promptScript.isEmpty { return .verified }
            let next = promptScript.removeFirst()
            if next == .verifiedWithPasscodeFallback, case .biometric(_, false) = request.kind, !fallbackAlwaysOffered {
                // The OS offers no passcode button when the key does not allow it: the user can only fail.
                return .failed
            }
            return next
        }
    }

    /// Gives the device a simulated Secure Enclave: biometric and device-passcode keys (on the iOS profile every
    /// authenticator key) are then created in it and it enforces their access control itself. Without it they are software keys whose access control the SDK
    /// enforces (the Linux path).
    public func enableHardwareKeyStore() { lock.withLock { if secureEnclave == nil { secureEnclave = SimulatedHardwareKeyStore(platform: self) } } }
    public var hardwareKeyStore: (any HardwareKeyStore)? { lock.withLock { secureEnclave } }
    /// App Attest, once ``useAppAttest(_:)`` gave the device one (an iOS device without it answers no ask).
    public var appAttest: (any AppAttestProvider)? { lock.withLock { appAttestService } }
    /// Gives the device `service` as its App Attest (nil: none).
    public func useAppAttest(_ service: SimulatedAppAttest?) { lock.withLock { appAttestService = service } }

    /// The phone's platform passkey authenticator (the iCloud Keychain's or Google Password Manager's, in software).
    public let simulatedPasskeys: SimulatedPasskeys
    public var passkeys: (any PasskeyProvider)? { simulatedPasskeys }
    /// Play Integrity, once ``usePlayIntegrity(_:)`` gave the device one (a device without it answers no ask).
    public var playIntegrity: (any PlayIntegrityProvider)? { lock.withLock { playIntegrityService } }
    /// Gives the device `service` as its Play Integrity (nil: none).
    public func usePlayIntegrity(_ service: SimulatedPlayIntegrity?) { lock.withLock { playIntegrityService = service } }
    /// How many keys the simulated Secure Enclave holds.
    public var hardwareKeyCount: Int { lock.withLock { secureEnclave }?.count ?? 0 }

    public func checkIntegrity() throws(PlatformIntegrityError) {
        let (debugger, deviceLock) = lock.withLock { (debuggerAttached, deviceLockPresent) }
        if debugger { throw .deviceProtection("a debugger is attached") }
        if !deviceLock { throw .noDeviceLock }
    }

    public func makeKeyProtector() throws -> any KeyProtector { protector }

    /// The folders the SDK asked to keep out of backups, in order (a simulated device makes no backups).
    public var foldersExcludedFromBackup: [URL] { lock.withLock { excludedFromBackup } }
    public func excludeFromBackup(_ directory: URL) throws { lock.withLock { excludedFromBackup.append(directory) } }
}
