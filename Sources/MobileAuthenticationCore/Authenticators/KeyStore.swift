import Crypto
import Foundation
import UAF
import _CryptoExtras

/// The kind of key an authenticator holds.
enum KeyType: String, Codable, Sendable {
    case p256
    case rsa2048
}

/// Who may use a key, and what makes it disappear: the access control a hardware keystore (Secure Enclave,
/// Android Keystore) attaches to a key, recorded with the key so every platform enforces the same rules.
struct KeyAccessControl: Codable, Sendable, Equatable {
    /// Biometric keys created with `invalidateOnNewOsBiometrics`: the biometric set they are bound to. When the
    /// OS set changes, the key is gone (`keyDisappearedPermanently`).
    var boundBiometricSet: String?
    /// Hardware keys are wiped by the OS when the device lock is removed: the lock generation at creation.
    var deviceLockGeneration: Int?
}

/// A private key as the SDK stores it (software platforms keep it in SecureStorage, encrypted).
struct StoredKey: Codable, Sendable {
    var type: KeyType
    /// P-256: the raw scalar; RSA: the DER private key.
    var material: [UInt8]
    var access: KeyAccessControl
    /// Set when the private key lives in the platform's hardware keystore under this tag (`material` is then empty).
    var hardwareTag: String?
}

/// Why a key cannot be used.
enum KeyStoreError: Error, Equatable {
    /// The key is gone (deleted, invalidated by a biometric change, wiped with the device lock):
    /// `keyDisappearedPermanently`.
    case keyDisappeared(String)
    /// The OS prompt of the key's use was cancelled.
    case cancelled
    /// Biometrics are locked until the user enters the device passcode; the key is intact.
    case lockedOut(String)
    /// No biometrics are enrolled in the system settings now: `userNotEnrolled`.
    case notEnrolled(String)
    /// The app may not use biometrics (Face ID off for it, no usage description): `authenticatorAccessDenied`; the key
    /// is intact.
    case notAllowed(String)
}

/// A newly generated key that is not stored yet: registration commits it together with the registration record,
/// so a failed registration leaves nothing behind (a hardware key is deleted with ``discard()``).
struct GeneratedKey: Sendable {
    let alias: String
    let stored: StoredKey
    /// The public key in the scheme's ALG_KEY encoding.
    let publicKey: [UInt8]
    let hardware: (any HardwareKeyStore)?
    var entry: String { KeyStore.entry(alias) }

    func sign(_ message: [UInt8], algorithm: SignatureAlgorithm) async throws -> [UInt8] {
        try await KeyStore.sign(message, with: stored, algorithm: algorithm, hardware: hardware)
    }

    /// Deletes a hardware key of a registration that did not complete.
    func discard() { if let tag = stored.hardwareTag { hardware?.deleteKey(tag: tag) } }
}

/// Where authenticator keys live, and the enforcement of their access control against the platform's current
/// state (biometric set, device lock).
package struct KeyStore: Sendable {
    let state: LocalState
    let platform: any Platform

    package static func entry(_ alias: String) -> String { "key/\(alias)" }

    /// Generates a key of `scheme`'s type with `access`; in the platform's hardware keystore when `hardware` is
    /// given and the device has one (P-256 only, as the Secure Enclave).
    func generate(alias: String, scheme: SigningScheme, access: KeyAccessControl, hardware: HardwareKeyAccess?) throws -> GeneratedKey {
        if let hardware, scheme.keyType == .p256, let keystore = platform.hardwareKeyStore {
            let x963 = try keystore.createKey(tag: alias, access: hardware)
            let publicKey = try P256.Signing.PublicKey(x963Representation: x963)
            return GeneratedKey(
                alias: alias, stored: StoredKey(type: .p256, material: [], access: access, hardwareTag: alias),
                publicKey: SignatureSuite.encode(publicKey, as: scheme.keyEncoding), hardware: keystore)
        }
        switch scheme.keyType {
        case .p256:
            let key = P256.Signing.PrivateKey()
            return GeneratedKey(
                alias: alias, stored: StoredKey(type: .p256, material: Array(key.rawRepresentation), access: access),
                publicKey: SignatureSuite.encode(key.publicKey, as: scheme.keyEncoding), hardware: nil)
        case .rsa2048:
            let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            // ALG_KEY_RSA_2048_DER is the PKCS#1 RSAPublicKey (uaf-spec §3.2).
            return GeneratedKey(
                alias: alias, stored: StoredKey(type: .rsa2048, material: Array(key.derRepresentation), access: access),
                publicKey: Array(key.publicKey.pkcs1DERRepresentation), hardware: nil)
        }
    }

    /// Signs with the stored key after checking that the key still exists under the platform's current state.
    func sign(_ message: [UInt8], alias: String, algorithm: SignatureAlgorithm) async throws -> [UInt8] {
        guard let stored = try await state.secret(StoredKey.self, Self.entry(alias)) else { throw KeyStoreError.keyDisappeared(alias) }
        // The recorded access control is checked on every platform, hardware or not (defense in depth, and the
        // user is not prompted for a key that is gone).
        try check(stored.access, alias: alias)
        return try await Self.sign(message, with: stored, algorithm: algorithm, hardware: platform.hardwareKeyStore)
    }

    /// Whether the key of `alias` is usable now (for the selection context's facts).
    func isUsable(alias: String) async -> Bool { (try? await requireUsable(alias: alias)) != nil }

    /// Fails with why the key of `alias` cannot be used now.
    func requireUsable(alias: String) async throws(KeyStoreError) {
        guard let stored = try? await state.secret(StoredKey.self, Self.entry(alias)) else { throw .keyDisappeared(alias) }
        try check(stored.access, alias: alias)
    }

    private func check(_ access: KeyAccessControl, alias: String) throws(KeyStoreError) {
        if let generation = access.deviceLockGeneration, generation != platform.deviceLockGeneration {
            throw KeyStoreError.keyDisappeared("\(alias) was wiped when the device lock was removed")
        }
        // Biometrics locked out, not allowed for this app or not enrolled hide the biometric set; an unknown set is not
        // a changed one, and only a changed one makes the app delete the registration.
        if access.boundBiometricSet != nil {
            if platform.biometricsLockedOut {
                throw KeyStoreError.lockedOut("biometrics are locked after too many failed attempts; unlock the device with its passcode")
            }
            if !platform.biometricsAllowed {
                throw KeyStoreError.notAllowed(
                    "this app may not use Face ID: turn it on in Settings → the app → Face ID (or the app lacks NSFaceIDUsageDescription)")
            }
            if !platform.biometricsEnrolled {
                throw KeyStoreError.notEnrolled("no biometrics are enrolled: set up Face ID or Touch ID in Settings")
            }
        }
        if let bound = access.boundBiometricSet, bound != platform.biometricSetIdentifier {
            throw KeyStoreError.keyDisappeared("\(alias) was invalidated because the biometric set changed")
        }
    }

    static func sign(
        _ message: [UInt8], with stored: StoredKey, algorithm: SignatureAlgorithm,
        hardware: (any HardwareKeyStore)?
    ) async throws -> [UInt8] {
        if let tag = stored.hardwareTag {
            guard let hardware else { throw KeyStoreError.keyDisappeared("\(tag) is in a hardware keystore this platform does not have") }
            do {
                // The keystore signs in DER, which is ALG_SIGN_SECP256R1_ECDSA_SHA256_DER; a raw algorithm is converted.
                let der = try await hardware.sign(tag: tag, message: message)
                return SignatureSuite.encode(try P256.Signing.ECDSASignature(derRepresentation: der), as: algorithm)
            } catch HardwareKeyError.keyGone(let reason) {
                throw KeyStoreError.keyDisappeared(reason)
            } catch HardwareKeyError.cancelled {
                throw KeyStoreError.cancelled
            } catch HardwareKeyError.lockedOut(let reason) {
                throw KeyStoreError.lockedOut(reason)
            }
        }
        switch stored.type {
        case .p256:
            let key = try P256.Signing.PrivateKey(rawRepresentation: stored.material)
            return SignatureSuite.encode(try key.signature(for: message), as: algorithm)
        case .rsa2048:
            let key = try _RSA.Signing.PrivateKey(derRepresentation: stored.material)
            return try SignatureSuite.sign(message, with: key, as: algorithm)
        }
    }
}
