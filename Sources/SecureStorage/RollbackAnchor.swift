import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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

/// The anchor file: two slots of `storeID (16) ‖ generation u64 ‖ HMAC (32)`. A commit overwrites the slot holding
/// the older generation in place and flushes it (one sync instead of a whole atomic replace); a write torn by a
/// crash can only damage that slot, and the other still holds the previous generation.
struct RollbackAnchor {
    static let slotSize = 16 + 8 + 32
    let path: String

    struct State: Equatable {
        /// The highest generation among the valid slots.
        var generation: UInt64
        /// Whether a slot failed its check (a torn write, or tampering).
        var damaged: Bool
        /// The slot index holding the lower generation (or the damaged one): the next one to overwrite.
        var nextSlot: Int
    }

    private static func slot(storeID: [UInt8], generation: UInt64, key: SymmetricKey) -> [UInt8] {
        var w = StoreByteWriter()
        w.raw(Array("anchor".utf8))
        w.raw(storeID)
        w.u64(generation)
        let mac = Array(HMAC<SHA256>.authenticationCode(for: w.bytes, using: key))
        var out = StoreByteWriter()
        out.raw(storeID)
        out.u64(generation)
        out.raw(mac)
        return out.bytes
    }

    private static func parseSlot(_ bytes: ArraySlice<UInt8>, storeID: [UInt8], key: SymmetricKey) -> UInt64? {
        var r = StoreByteReader(Array(bytes))
        guard let id = try? Array(r.take(16)), id == storeID, let generation = try? r.u64() else { return nil }
        return slot(storeID: storeID, generation: generation, key: key) == Array(bytes) ? generation : nil
    }

    /// The anchor's state, nil if there is no anchor file; `tampered` if no slot is valid.
    func read(storeID: [UInt8], key: SymmetricKey) throws -> State? {
        guard let bytes = try DurableFile.readFile(path) else { return nil }
        guard bytes.count == 2 * Self.slotSize else { throw SecureStorageError.tampered(reason: "rollback anchor is malformed") }
        let slots = [0, 1].map { Self.parseSlot(bytes[($0 * Self.slotSize)..<(($0 + 1) * Self.slotSize)], storeID: storeID, key: key) }
        switch (slots[0], slots[1]) {
        case (nil, nil): throw SecureStorageError.tampered(reason: "rollback anchor failed authentication")
        case (let g?, nil): return State(generation: g, damaged: true, nextSlot: 1)
        case (nil, let g?): return State(generation: g, damaged: true, nextSlot: 0)
        case (let a?, let b?): return State(generation: max(a, b), damaged: false, nextSlot: a <= b ? 0 : 1)
        }
    }

    /// Writes a fresh anchor (both slots) with an atomic replace.
    func create(storeID: [UInt8], generation: UInt64, key: SymmetricKey) throws {
        let slot = Self.slot(storeID: storeID, generation: generation, key: key)
        try DurableFile.replace(path, with: slot + slot)
    }

    /// Records `generation` by overwriting the older slot in place and flushing it.
    func advance(storeID: [UInt8], generation: UInt64, key: SymmetricKey) throws {
        guard let state = try? read(storeID: storeID, key: key) else {
            return try create(storeID: storeID, generation: generation, key: key)
        }
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw SecureStorageError.unreadable(path: path, reason: DurableFile.errnoText()) }
        defer { close(fd) }
        let slot = Self.slot(storeID: storeID, generation: generation, key: key)
        let written = slot.withUnsafeBytes { pwrite(fd, $0.baseAddress!, slot.count, off_t(state.nextSlot * Self.slotSize)) }
        guard written == slot.count else { throw SecureStorageError.unreadable(path: path, reason: DurableFile.errnoText()) }
        try DurableFile.flush(fd, path: path)
    }
}
