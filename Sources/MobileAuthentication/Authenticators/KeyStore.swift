import Crypto
import Foundation
import UAF

/// Where authenticator keys live. The software implementation keeps P-256 keys in the SDK's SecureStorage;
/// an Apple implementation keeps them in the Secure Enclave.
protocol KeyStore: Sendable {
    /// Generates a new key under `alias` and returns its public key.
    func generateKey(alias: String) async throws -> P256.Signing.PublicKey
    /// Signs `message` (SHA-256 is applied by the signer) in DER form.
    func sign(alias: String, message: [UInt8]) async throws -> P256.Signing.ECDSASignature
    func deleteKey(alias: String) async throws
}

enum KeyStoreError: Error, Equatable {
    /// The key is gone (deleted, or invalidated): `keyDisappearedPermanently`.
    case keyNotFound(String)
}

struct SoftwareKeyStore: KeyStore {
    let state: LocalState

    private static func entry(_ alias: String) -> String { "key/\(alias)" }

    func generateKey(alias: String) async throws -> P256.Signing.PublicKey {
        let key = P256.Signing.PrivateKey()
        try await state.setSecret(Array(key.rawRepresentation), Self.entry(alias))
        return key.publicKey
    }

    func sign(alias: String, message: [UInt8]) async throws -> P256.Signing.ECDSASignature {
        guard let raw = try await state.secret([UInt8].self, Self.entry(alias)) else { throw KeyStoreError.keyNotFound(alias) }
        return try P256.Signing.PrivateKey(rawRepresentation: raw).signature(for: message)
    }

    func deleteKey(alias: String) async throws { try await state.removeSecret(Self.entry(alias)) }
}
