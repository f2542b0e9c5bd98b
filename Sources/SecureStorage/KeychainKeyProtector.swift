// Compiled in SecureStorage where Security exists, and in the test target ApplePlatformTests (a link to this file)
// only against its shim on Linux: on an Apple platform the test module is not this file's home (APPLE_SOURCES_LINKED).
#if APPLE_FRAMEWORKS_SHIM || (canImport(Security) && !APPLE_SOURCES_LINKED)
import Crypto
import Foundation
#if APPLE_FRAMEWORKS_SHIM
// Linux: compiled by the test target `ApplePlatformTests` against the scripted Security stand-in.
import AppleFrameworksShim
import SecureStorage
#else
import Security
#endif

/// Apple key protection: a random 256-bit secret kept in the data-protection keychain with a
/// `…ThisDeviceOnly` accessibility class (so it is never in a backup and never leaves the device), mixed with the
/// device fingerprint through HKDF to give the KEK. A keychain failure is reported as
/// ``SecureStorageError/keyProtectionUnavailable(reason:)``; there is no fallback to software protection.
public struct KeychainKeyProtector: KeyProtector {
    public static let kindIdentifier: UInt8 = 2
    public var kind: UInt8 { Self.kindIdentifier }
    /// Keychain service name under which the per-store secrets are kept.
    public var service: String

    public init(service: String = "mauth.securestorage") { self.service = service }

    public func makeParameters() throws -> [UInt8] { randomBytes(32) }

    private func account(_ storeID: [UInt8]) -> String { Data(storeID).base64EncodedString() }

    private func loadOrCreateSecret(storeID: [UInt8]) throws -> [UInt8] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account(storeID),
            kSecUseDataProtectionKeychain as String: true,
            kSecReturnData as String: true,
        ]
        var out: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &out)
        if status == errSecSuccess, let data = out as? Data { return [UInt8](data) }
        guard status == errSecItemNotFound else {
            throw SecureStorageError.keyProtectionUnavailable(reason: "keychain read failed (\(status))")
        }
        let secret = randomBytes(32)
        query.removeValue(forKey: kSecReturnData as String)
        query[kSecValueData as String] = Data(secret)
        query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let add = SecItemAdd(query as CFDictionary, nil)
        if add == errSecDuplicateItem { return try loadOrCreateSecret(storeID: storeID) }
        guard add == errSecSuccess else {
            throw SecureStorageError.keyProtectionUnavailable(reason: "keychain write failed (\(add))")
        }
        return secret
    }

    public func keyEncryptionKey(parameters: [UInt8], fingerprint: [UInt8], storeID: [UInt8]) throws -> SymmetricKey {
        let secret = try loadOrCreateSecret(storeID: storeID)
        return HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: secret + fingerprint), salt: parameters + storeID,
            info: Array("mauth-securestorage/v1/kek".utf8), outputByteCount: 32)
    }

    public func report(parameters: [UInt8]) -> KeyProtectionReport {
        KeyProtectionReport(
            protector: "apple-keychain", keyLocation: "data-protection keychain (this device only)",
            isHardwareBacked: true, isDeviceBound: true, usesPassphrase: false, detectsRollback: false,
            kdf: "HKDF-SHA256")
    }

    public func destroySecret(storeID: [UInt8]) throws {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: account(storeID), kSecUseDataProtectionKeychain as String: true,
        ]
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else {
            throw SecureStorageError.keyProtectionUnavailable(reason: "keychain delete failed (\(status))")
        }
    }
}
#endif
