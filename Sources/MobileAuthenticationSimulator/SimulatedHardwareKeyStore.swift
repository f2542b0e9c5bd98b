import Crypto
import Foundation
import MobileAuthenticationCore

/// A simulated Secure Enclave for ``SimulatedPlatform``: the keys live in memory with the platform and the store
/// itself enforces their access control, as hardware does (a changed biometric set or a removed lock makes them
/// unusable for good).
final class SimulatedHardwareKeyStore: HardwareKeyStore, @unchecked Sendable {
    private struct Entry {
        let key: P256.Signing.PrivateKey
        let biometricSet: String?
        let lockGeneration: Int?
    }
    private let lock = NSLock()
    private var keys: [String: Entry] = [:]
    private unowned let platform: SimulatedPlatform

    init(platform: SimulatedPlatform) { self.platform = platform }

    var count: Int { lock.withLock { keys.count } }

    func createKey(tag: String, access: HardwareKeyAccess) throws(HardwareKeyError) -> [UInt8] {
        if access.requiresDeviceLock && !platform.hasDeviceLock { throw .unavailable("a hardware key needs a device lock") }
        let entry = Entry(
            key: P256.Signing.PrivateKey(),
            biometricSet: access.boundToCurrentBiometricSet ? platform.biometricSetIdentifier : nil,
            lockGeneration: access.requiresDeviceLock ? platform.deviceLockGeneration : nil)
        lock.withLock { keys[tag] = entry }
        return Array(entry.key.publicKey.x963Representation)
    }

    func sign(tag: String, message: [UInt8]) async throws(HardwareKeyError) -> [UInt8] {
        guard let entry = lock.withLock({ keys[tag] }) else { throw .keyGone("\(tag) is not in the keystore") }
        if let generation = entry.lockGeneration, generation != platform.deviceLockGeneration {
            throw .keyGone("\(tag) was wiped when the device lock was removed")
        }
        if entry.biometricSet != nil && platform.biometricsLockedOut { throw .lockedOut("biometrics are locked") }
        if let set = entry.biometricSet, set != platform.biometricSetIdentifier {
            throw .keyGone("\(tag) was invalidated because the biometric set changed")
        }
        do { return Array(try entry.key.signature(for: message).derRepresentation) } catch { throw .unavailable("\(error)") }
    }

    func deleteKey(tag: String) { lock.withLock { _ = keys.removeValue(forKey: tag) } }
}
