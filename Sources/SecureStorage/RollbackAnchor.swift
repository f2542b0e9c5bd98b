import Crypto
import Foundation

/// Where the store remembers the last generation it committed, outside the store file, so that an older copy
/// of the file put back in place is detected (``SecureStorageError/rolledBack(fileGeneration:expectedAtLeast:)``).
///
/// The anchor is authenticated with the store's MAC key. Commit order: the new file is made durable first, then
/// the anchor is advanced; a crash between the two leaves `file = anchor + 1`, which open accepts and repairs.
/// Residual risk (documented in the DocC threat model): an attacker who can restore both the file and the anchor
/// from the same older backup is not detected. Put the anchor where backups of the store do not reach.
public enum RollbackAnchorLocation: Sendable, Equatable {
    /// No anchor: rollback to an older file is **not** detected. Reported in ``KeyProtectionReport``.
    case none
    /// A small authenticated file in this directory, named after the store.
    case directory(URL)
}

struct RollbackAnchor {
    let path: String

    private static func mac(storeID: [UInt8], generation: UInt64, key: SymmetricKey) -> [UInt8] {
        var w = StoreByteWriter()
        w.raw(Array("anchor".utf8)); w.raw(storeID); w.u64(generation)
        return Array(HMAC<SHA256>.authenticationCode(for: w.bytes, using: key))
    }

    /// The committed generation, or nil if there is no anchor yet.
    func read(storeID: [UInt8], key: SymmetricKey) throws -> UInt64? {
        guard let bytes = try DurableFile.readFile(path) else { return nil }
        var r = StoreByteReader(bytes)
        guard let id = try? Array(r.take(16)), let generation = try? r.u64(), let mac = try? Array(r.take(32)), r.remaining == 0 else {
            throw SecureStorageError.tampered(reason: "rollback anchor is malformed")
        }
        guard id == storeID else { throw SecureStorageError.tampered(reason: "rollback anchor belongs to another store") }
        guard mac == Self.mac(storeID: storeID, generation: generation, key: key) else {
            throw SecureStorageError.tampered(reason: "rollback anchor failed authentication")
        }
        return generation
    }

    func write(storeID: [UInt8], generation: UInt64, key: SymmetricKey) throws {
        var w = StoreByteWriter()
        w.raw(storeID); w.u64(generation); w.raw(Self.mac(storeID: storeID, generation: generation, key: key))
        try DurableFile.replace(path, with: w.bytes)
    }
}
