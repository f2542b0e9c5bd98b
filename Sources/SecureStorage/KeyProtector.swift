import Crypto
import Foundation
import _CryptoExtras

/// How a store's data key is protected, as reported to the app (instead of a single boolean).
public struct KeyProtectionReport: Sendable, Equatable, CustomStringConvertible {
    /// Short identifier of the protector ("software-scrypt", "apple-keychain").
    public var protector: String
    /// Where the key-encryption secret lives.
    public var keyLocation: String
    /// Whether a hardware element (Secure Enclave, TEE) guards the key-encryption secret.
    public var isHardwareBacked: Bool
    /// Whether the data key can only be unwrapped with this device's fingerprint.
    public var isDeviceBound: Bool
    /// Whether a user passphrase is mixed into the key derivation.
    public var usesPassphrase: Bool
    /// Whether an older copy of the file would be detected (rollback anchor configured).
    public var detectsRollback: Bool
    /// Key-derivation function and its cost, if any.
    public var kdf: String

    package init(
        protector: String, keyLocation: String, isHardwareBacked: Bool, isDeviceBound: Bool, usesPassphrase: Bool,
        detectsRollback: Bool, kdf: String
    ) {
        self.protector = protector
        self.keyLocation = keyLocation
        self.isHardwareBacked = isHardwareBacked
        self.isDeviceBound = isDeviceBound
        self.usesPassphrase = usesPassphrase
        self.detectsRollback = detectsRollback
        self.kdf = kdf
    }

    public var description: String {
        "\(protector) (key in \(keyLocation); hardware: \(isHardwareBacked); device-bound: \(isDeviceBound); "
            + "passphrase: \(usesPassphrase); rollback detection: \(detectsRollback); kdf: \(kdf))"
    }
}

/// Derives the key-encryption key (KEK) that wraps a store's random data key.
///
/// The protector never sees the data key. It turns its own secret material plus the device fingerprint into
/// a KEK for the given stored parameters; the store wraps and unwraps the data key with AES-GCM under that KEK.
/// A protector that cannot work on this machine throws ``SecureStorageError/keyProtectionUnavailable(reason:)``:
/// it never substitutes a weaker scheme.
public protocol KeyProtector: Sendable {
    /// A stable one-byte identifier written into the file header.
    var kind: UInt8 { get }
    /// Fresh parameters (salt, cost) for a new wrap of the data key.
    func makeParameters() throws -> [UInt8]
    /// The KEK for `parameters` (as produced by ``makeParameters()``) and this device fingerprint.
    func keyEncryptionKey(parameters: [UInt8], fingerprint: [UInt8], storeID: [UInt8]) throws -> SymmetricKey
    /// Describes the protection this protector gives.
    func report(parameters: [UInt8]) -> KeyProtectionReport
    /// Forgets any secret this protector keeps outside the file for `storeID` (called by `delete`).
    func destroySecret(storeID: [UInt8]) throws
}

extension KeyProtector {
    public func destroySecret(storeID: [UInt8]) throws {}
}

/// Software key protection: the KEK is derived from the device fingerprint (and an optional passphrase) with
/// scrypt, a memory-hard KDF, so that a copied file cannot be opened elsewhere without redoing that work per guess.
///
/// The cost parameter N is the storage's "iteration count". It is stored in the header with the salt, so a later
/// version can raise the cost without losing data (re-wrap on ``SecureStore/rebind(to:protector:)``).
/// Derived KEKs are cached per parameter set in this instance, so re-opening a store in the same process pays the
/// KDF once.
public final class SoftwareKeyProtector: KeyProtector, @unchecked Sendable {
    public static let kindIdentifier: UInt8 = 1
    public var kind: UInt8 { Self.kindIdentifier }

    /// scrypt N (a power of two, at least 1024).
    public let costFactor: UInt32
    /// scrypt r.
    public let blockSize: UInt32 = 8
    /// scrypt p.
    public let parallelism: UInt32 = 1
    private let passphrase: [UInt8]?
    private let lock = NSLock()
    private var cache: [[UInt8]: SymmetricKey] = [:]

    /// Creates a software protector.
    /// - Parameters:
    ///   - iterationCount: the scrypt cost N. A value that is not a power of two is rounded **up** to the next
    ///     one (never down); values below 1024 are rejected as too weak.
    ///   - passphrase: optional user secret mixed into the derivation.
    public init(iterationCount: Int, passphrase: String? = nil) throws {
        guard iterationCount >= 1024 else {
            throw SecureStorageError.keyProtectionUnavailable(reason: "iteration count \(iterationCount) is below the minimum of 1024")
        }
        guard iterationCount <= 1 << 22 else {
            throw SecureStorageError.keyProtectionUnavailable(reason: "iteration count \(iterationCount) is above the maximum of 4194304")
        }
        var n = 1024
        while n < iterationCount { n <<= 1 }
        self.costFactor = UInt32(n)
        self.passphrase = passphrase.map { Array($0.utf8) }
    }

    public func makeParameters() throws -> [UInt8] {
        var w = StoreByteWriter()
        w.u32(costFactor)
        w.u32(blockSize)
        w.u32(parallelism)
        w.raw(randomBytes(32))
        w.u8(passphrase == nil ? 0 : 1)
        return w.bytes
    }

    private struct Parameters {
        var n, r, p: UInt32
        var salt: [UInt8]
        var hasPassphrase: Bool
    }

    private func parse(_ parameters: [UInt8]) throws -> Parameters {
        var r = StoreByteReader(parameters)
        let p = try Parameters(n: r.u32(), r: r.u32(), p: r.u32(), salt: Array(r.take(32)), hasPassphrase: r.u8() == 1)
        guard r.remaining == 0, p.n >= 1024, p.n.nonzeroBitCount == 1, p.n <= 1 << 22, p.r >= 1, p.r <= 32, p.p >= 1, p.p <= 16 else {
            throw SecureStorageError.corrupted(reason: "invalid key-derivation parameters")
        }
        return p
    }

    public func keyEncryptionKey(parameters: [UInt8], fingerprint: [UInt8], storeID: [UInt8]) throws -> SymmetricKey {
        let p = try parse(parameters)
        if p.hasPassphrase != (passphrase != nil) { throw SecureStorageError.fingerprintMismatch }
        var secret = fingerprint
        secret.append(0)
        secret.append(contentsOf: passphrase ?? [])
        let cacheKey = parameters + [0xFF] + SHA256.hash(data: secret + storeID).map { $0 }
        if let hit = lock.withLock({ cache[cacheKey] }) { return hit }
        let key: SymmetricKey
        do {
            key = try KDF.Scrypt.deriveKey(
                from: secret, salt: p.salt + storeID, outputByteCount: 32,
                rounds: Int(p.n), blockSize: Int(p.r), parallelism: Int(p.p))
        } catch {
            throw SecureStorageError.keyProtectionUnavailable(reason: "scrypt failed: \(error)")
        }
        lock.withLock { cache[cacheKey] = key }
        return key
    }

    public func report(parameters: [UInt8]) -> KeyProtectionReport {
        let n = (try? parse(parameters))?.n ?? costFactor
        return KeyProtectionReport(
            protector: "software-scrypt", keyLocation: "derived from the device fingerprint",
            isHardwareBacked: false, isDeviceBound: true, usesPassphrase: passphrase != nil,
            detectsRollback: false, kdf: "scrypt N=\(n) r=\(blockSize) p=\(parallelism)")
    }
}

package func randomBytes(_ count: Int) -> [UInt8] {
    var g = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &g) }
}
