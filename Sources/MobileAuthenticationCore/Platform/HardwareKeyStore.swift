import Crypto
import Foundation

/// The access control a hardware key is created with (Secure Enclave / Android Keystore semantics).
public struct HardwareKeyAccess: Sendable, Equatable {
    /// The key is invalidated when the OS biometric set changes (`invalidateOnNewOsBiometrics`).
    public var boundToCurrentBiometricSet: Bool
    /// The key needs the device lock; the OS wipes it when the lock is removed.
    public var requiresDeviceLock: Bool
    public init(boundToCurrentBiometricSet: Bool, requiresDeviceLock: Bool) {
        self.boundToCurrentBiometricSet = boundToCurrentBiometricSet; self.requiresDeviceLock = requiresDeviceLock
    }
}

/// Why a hardware key cannot be used.
public enum HardwareKeyError: Error, Sendable, Equatable {
    /// Invalidated (biometric set changed), wiped (device lock removed) or deleted: `keyDisappearedPermanently`.
    case keyGone(String)
    /// The keystore refused (no Secure Enclave, user verification failed or missing).
    case unavailable(String)
}

/// P-256 keys that never leave the device's hardware. The SDK's biometric and device-passcode authenticators use
/// it when the platform has one; PIN and password keys stay software keys (their user verification is the SDK's).
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
