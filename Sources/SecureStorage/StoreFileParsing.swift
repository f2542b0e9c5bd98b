import Crypto

/// What opening a store does with a file's bytes, without the disk, the lock, the key protector or the rollback
/// anchor: for the fuzz harness (`Sources/FuzzTargets`) and its regression tests. Not API; the SPI name keeps it out
/// of ordinary imports.
@_spi(Fuzzing) public enum StoreFileParsing {
    /// Parses `bytes` as a store file, unwraps its data key with `kek`, checks the store MAC and opens every entry,
    /// in the order ``StoreEngine`` does. Returns the entries by name; any damage is a ``SecureStorageError``.
    public static func load(_ bytes: [UInt8], kek: SymmetricKey) throws -> [[UInt8]: [UInt8]] {
        let file = try StoreFormat.parse(bytes)
        let dataKey = try StoreFormat.unwrap(file.header, kek: kek)
        let keys = StoreFormat.Keys(dataKey: dataKey, storeID: file.header.storeID)
        try StoreFormat.verifyMAC(file, keys: keys)
        var entries: [[UInt8]: [UInt8]] = [:]
        for (tag, record) in file.records {
            let (name, value) = try StoreFormat.open(record, nameTag: tag, storeID: file.header.storeID, keys: keys)
            entries[name] = value
        }
        return entries
    }

    /// A well-formed file holding `entries`, its data key `dataKey` wrapped with `kek`.
    public static func file(
        entries: [[UInt8]: [UInt8]], storeID: [UInt8], generation: UInt64, dataKey: SymmetricKey,
        kek: SymmetricKey
    ) throws -> [UInt8] {
        let keys = StoreFormat.Keys(dataKey: dataKey, storeID: storeID)
        let kind: UInt8 = 0
        let parameters: [UInt8] = []
        let header = StoreFormat.Header(
            storeID: storeID, generation: generation, protectorKind: kind, protectorParameters: parameters,
            wrappedDataKey: try StoreFormat.wrap(dataKey: dataKey, kek: kek, storeID: storeID, kind: kind, parameters: parameters))
        var records: [[UInt8]: StoreFormat.Record] = [:]
        for (name, value) in entries {
            let tag = StoreFormat.nameTag(name, keys: keys)
            records[tag] = StoreFormat.Record(
                generation: generation,
                sealed: try StoreFormat.seal(name: name, value: value, nameTag: tag, generation: generation, storeID: storeID, keys: keys))
        }
        return StoreFormat.encode(header: header, records: records, keys: keys)
    }

    /// `bytes` with its trailer recomputed: the store MAC under `dataKey` (keyed with the storeID the bytes carry,
    /// when they are long enough to carry one) and the checksum. A mutated file then gets past the integrity checks
    /// and reaches the structural parser and the entry opening.
    public static func resealed(_ bytes: [UInt8], dataKey: SymmetricKey) -> [UInt8] {
        guard bytes.count >= StoreFormat.trailerSize else { return bytes }
        let body = Array(bytes[..<(bytes.count - StoreFormat.trailerSize)])
        let idStart = StoreFormat.magic.count + 2
        let storeID = body.count >= idStart + StoreFormat.storeIDSize ? Array(body[idStart..<(idStart + StoreFormat.storeIDSize)]) : []
        let mac = HMAC<SHA256>.authenticationCode(for: body, using: StoreFormat.Keys(dataKey: dataKey, storeID: storeID).mac)
        let signed = body + Array(mac)
        return signed + Array(SHA256.hash(data: signed))
    }
}
