import Crypto
import Foundation

/// The access control a hardware key is created with (Secure Enclave / Android Keystore semantics).
public struct HardwareKeyAccess: Sendable, Equatable {
    /// Who must verify the user before the hardware uses the key.
    public enum UserVerification: Sendable, Equatable {
        /// The SDK itself (PIN, password): the hardware asks for nothing.
        case application
        /// Biometrics. `currentSet`: the key is invalidated when the OS biometric set changes
        /// (`invalidateOnNewOsBiometrics`); `passcodeFallback`: the device passcode is accepted instead
        /// (`allowDevicePasscodeAsFallback`).
        case biometry(currentSet: Bool, passcodeFallback: Bool)
        /// The device owner: the device passcode, or biometrics, as the OS's owner prompt accepts.
        case deviceOwner
    }
    public var userVerification: UserVerification
    /// The key needs the device lock; the OS wipes it when the lock is removed.
    public var requiresDeviceLock: Bool
    public init(userVerification: UserVerification, requiresDeviceLock: Bool) {
        self.userVerification = userVerification
        self.requiresDeviceLock = requiresDeviceLock
    }
    /// Whether the key is invalidated when the OS biometric set changes.
    public var boundToCurrentBiometricSet: Bool {
        if case .biometry(currentSet: true, _) = userVerification { return true }
        return false
    }
}

/// Why a hardware key cannot be used.
public enum HardwareKeyError: Error, Sendable, Equatable {
    /// Invalidated (biometric set changed), wiped (device lock removed) or deleted: `keyDisappearedPermanently`.
    case keyGone(String)
    /// The keystore refused (no Secure Enclave, user verification failed or missing, the device is locked).
    case unavailable(String)
    /// The user cancelled the OS prompt the key's use showed.
    case cancelled
    /// Biometrics are locked after too many failed attempts until the user enters the device passcode: the key is
    /// still there.
    case lockedOut(String)
}

/// P-256 keys that never leave the device's hardware. The SDK's biometric and device-passcode authenticators use
/// it when the platform has one, and on iOS the PIN and password authenticators too (with
/// ``HardwareKeyAccess/UserVerification/application``: the SDK verifies the user, the hardware ties the key to the
/// device lock).
public protocol HardwareKeyStore: Sendable {
    /// Creates a key under `tag` and returns its public key in X9.63 form (65 bytes).
    func createKey(tag: String, access: HardwareKeyAccess) throws(HardwareKeyError) -> [UInt8]
    /// Signs `message` (SHA-256 is applied by the signer) with ECDSA and returns the DER signature.
    func sign(tag: String, message: [UInt8]) async throws(HardwareKeyError) -> [UInt8]
    func deleteKey(tag: String)
}

extension Platform {
    public var hardwareKeyStore: (any HardwareKeyStore)? { nil }
}
