import Crypto
import Foundation

/// The on-disk format, version 1. All integers little-endian.
///
/// ```
/// body:
///   magic "MAUS" (4) | formatVersion u16 = 1 | storeID (16 random bytes) | generation u64
///   protectorKind u8 | protectorParameters (u16 length + bytes) | wrappedDataKey (u16 length + bytes)
///   entryCount u32 | entryCount × { nameTag (32) | entryGeneration u64 | sealed (u32 length + bytes) }
/// storeMAC   (32) = HMAC-SHA256(K_mac, body)
/// checksum   (32) = SHA-256(body ‖ storeMAC)
/// ```
/// - `wrappedDataKey` = AES-256-GCM(KEK, dataKey) as nonce ‖ ciphertext ‖ tag, with associated data
///   magic ‖ version ‖ storeID ‖ protectorKind ‖ protectorParameters.
/// - `nameTag` = HMAC-SHA256(K_name, keyName): the key name itself is only inside the sealed envelope.
/// - `sealed` = AES-256-GCM(K_enc, u16 nameLength ‖ name ‖ value) as nonce ‖ ciphertext ‖ tag, with associated
///   data magic ‖ version ‖ storeID ‖ nameTag ‖ entryGeneration.
/// - K_enc, K_name, K_mac = HKDF-SHA256(dataKey, salt: storeID, info: "mauth-securestorage/v1/{enc,name,mac}").
/// - Entries are written sorted by nameTag.
enum StoreFormat {
    static let magic: [UInt8] = Array("MAUS".utf8)
    static let version: UInt16 = 1
    static let trailerSize = 64
    static let storeIDSize = 16
    static let tagSize = 32

    struct Header: Equatable {
        var storeID: [UInt8]
        var generation: UInt64
        var protectorKind: UInt8
        var protectorParameters: [UInt8]
        var wrappedDataKey: [UInt8]
    }

    struct Record: Equatable {
        var generation: UInt64
        var sealed: [UInt8]
    }

    struct Keys {
        let enc: SymmetricKey
        let name: SymmetricKey
        let mac: SymmetricKey

        init(dataKey: SymmetricKey, storeID: [UInt8]) {
            func derive(_ label: String) -> SymmetricKey {
                HKDF<SHA256>.deriveKey(
                    inputKeyMaterial: dataKey, salt: storeID,
                    info: Array("mauth-securestorage/v1/\(label)".utf8), outputByteCount: 32)
            }
            enc = derive("enc")
            name = derive("name")
            mac = derive("mac")
        }
    }

    /// A parsed file whose checksum was verified; the MAC is checked once the data key is known.
    struct ParsedFile {
        var header: Header
        var records: [[UInt8]: Record]
        var body: ArraySlice<UInt8>
        var mac: [UInt8]
    }

    static func wrapAssociatedData(storeID: [UInt8], kind: UInt8, parameters: [UInt8]) -> [UInt8] {
        var w = StoreByteWriter()
        w.raw(magic)
        w.u16(version)
        w.raw(storeID)
        w.u8(kind)
        w.raw(parameters)
        return w.bytes
    }

    static func entryAssociatedData(storeID: [UInt8], nameTag: [UInt8], generation: UInt64) -> [UInt8] {
        var w = StoreByteWriter(capacity: 64)
        w.raw(magic)
        w.u16(version)
        w.raw(storeID)
        w.raw(nameTag)
        w.u64(generation)
        return w.bytes
    }

    static func nameTag(_ name: [UInt8], keys: Keys) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: name, using: keys.name))
    }

    static func seal(name: [UInt8], value: [UInt8], nameTag: [UInt8], generation: UInt64, storeID: [UInt8], keys: Keys) throws -> [UInt8] {
        var w = StoreByteWriter(capacity: 2 + name.count + value.count)
        w.short(name)
        w.raw(value)
        let box = try AES.GCM.seal(
            w.bytes, using: keys.enc,
            authenticating: entryAssociatedData(storeID: storeID, nameTag: nameTag, generation: generation))
        return Array(box.combined!)
    }

    /// Opens a sealed entry and checks that the name inside it is the one its tag claims. When the caller knows
    /// the name (`expectedName`), a byte comparison replaces the second HMAC: the tag is bound by the AEAD's
    /// associated data, so a matching name proves the pairing just as well.
    static func open(
        _ record: Record, nameTag: [UInt8], storeID: [UInt8], keys: Keys, expectedName: [UInt8]? = nil
    ) throws -> (name: [UInt8], value: [UInt8]) {
        let plain: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(combined: record.sealed)
            plain = Array(
                try AES.GCM.open(
                    box, using: keys.enc,
                    authenticating: entryAssociatedData(storeID: storeID, nameTag: nameTag, generation: record.generation)))
        } catch {
            throw SecureStorageError.tampered(reason: "an entry failed authentication")
        }
        var r = StoreByteReader(plain)
        guard let name = try? Array(r.short()), expectedName.map({ $0 == name }) ?? (nameTag == self.nameTag(name, keys: keys)) else {
            throw SecureStorageError.tampered(reason: "an entry does not belong to its name")
        }
        return (name, Array(plain[r.offset...]))
    }

    static func encode(header: Header, records: [[UInt8]: Record], keys: Keys) -> [UInt8] {
        let payload = records.values.reduce(0) { $0 + $1.sealed.count + 44 }
        var w = StoreByteWriter(capacity: 128 + header.protectorParameters.count + header.wrappedDataKey.count + payload + trailerSize)
        w.raw(magic)
        w.u16(version)
        w.raw(header.storeID)
        w.u64(header.generation)
        w.u8(header.protectorKind)
        w.short(header.protectorParameters)
        w.short(header.wrappedDataKey)
        w.u32(UInt32(records.count))
        for tag in records.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let record = records[tag]!
            w.raw(tag)
            w.u64(record.generation)
            w.long(record.sealed)
        }
        let mac = HMAC<SHA256>.authenticationCode(for: w.bytes, using: keys.mac)
        w.raw(Array(mac))
        let checksum = SHA256.hash(data: w.bytes)
        w.raw(Array(checksum))
        return w.bytes
    }

    /// Parses a file. Any modification is reported as `tampered` (checksum first, so that a single flipped byte
    /// anywhere is caught before any other field is interpreted); structural problems in a file whose checksum is
    /// right are reported as `corrupted`.
    static func parse(_ bytes: [UInt8]) throws -> ParsedFile {
        // A file that does not even start like a store (two or more magic bytes wrong) is some other file;
        // anything closer to a store than that is treated as a modified store.
        if bytes.count >= 4, zip(bytes[0..<4], magic).filter({ $0 != $1 }).count >= 2 {
            throw SecureStorageError.corrupted(reason: "not a secure store file")
        }
        let minimum = 4 + 2 + storeIDSize + 8 + 1 + 2 + 2 + 4 + trailerSize
        guard bytes.count >= minimum else {
            throw SecureStorageError.tampered(reason: "file is truncated (\(bytes.count) bytes)")
        }
        let checksumStart = bytes.count - 32
        let expected = Array(SHA256.hash(data: bytes[0..<checksumStart]))
        guard expected == Array(bytes[checksumStart...]) else {
            throw SecureStorageError.tampered(reason: "file checksum mismatch")
        }
        let bodyEnd = checksumStart - 32
        var r = StoreByteReader(Array(bytes[0..<bodyEnd]))
        guard Array(try r.take(4)) == magic else { throw SecureStorageError.corrupted(reason: "not a secure store file") }
        let version = try r.u16()
        guard version == self.version else { throw SecureStorageError.corrupted(reason: "unsupported format version \(version)") }
        let header = try Header(
            storeID: Array(r.take(storeIDSize)), generation: r.u64(), protectorKind: r.u8(),
            protectorParameters: Array(r.short()), wrappedDataKey: Array(r.short()))
        let count = try r.u32()
        guard count <= SecureStoreLimits.maximumEntries else { throw SecureStorageError.corrupted(reason: "entry count \(count) out of range") }
        var records: [[UInt8]: Record] = [:]
        records.reserveCapacity(Int(count))
        for _ in 0..<count {
            let tag = Array(try r.take(tagSize))
            let record = try Record(generation: r.u64(), sealed: Array(r.long()))
            guard records.updateValue(record, forKey: tag) == nil else {
                throw SecureStorageError.corrupted(reason: "duplicate entry")
            }
        }
        guard r.remaining == 0 else { throw SecureStorageError.corrupted(reason: "trailing bytes after the entries") }
        return ParsedFile(header: header, records: records, body: bytes[0..<bodyEnd], mac: Array(bytes[bodyEnd..<checksumStart]))
    }

    static func verifyMAC(_ file: ParsedFile, keys: Keys) throws {
        guard HMAC<SHA256>.isValidAuthenticationCode(file.mac, authenticating: file.body, using: keys.mac) else {
            throw SecureStorageError.tampered(reason: "store authenticator mismatch")
        }
    }

    static func wrap(dataKey: SymmetricKey, kek: SymmetricKey, storeID: [UInt8], kind: UInt8, parameters: [UInt8]) throws -> [UInt8] {
        let box = try dataKey.withUnsafeBytes {
            try AES.GCM.seal(Array($0), using: kek, authenticating: wrapAssociatedData(storeID: storeID, kind: kind, parameters: parameters))
        }
        return Array(box.combined!)
    }

    static func unwrap(_ header: Header, kek: SymmetricKey) throws -> SymmetricKey {
        do {
            let box = try AES.GCM.SealedBox(combined: header.wrappedDataKey)
            let raw = try AES.GCM.open(
                box, using: kek,
                authenticating: wrapAssociatedData(
                    storeID: header.storeID, kind: header.protectorKind, parameters: header.protectorParameters))
            guard raw.count == 32 else { throw SecureStorageError.corrupted(reason: "data key has the wrong size") }
            return SymmetricKey(data: raw)
        } catch let error as SecureStorageError {
            throw error
        } catch {
            // The file checksum was right, so the wrapped key is as written: only the KEK can be wrong.
            throw SecureStorageError.fingerprintMismatch
        }
    }
}
