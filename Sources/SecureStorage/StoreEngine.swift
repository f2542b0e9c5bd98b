import Crypto
import Foundation

/// Where a store lives and how it is protected.
public struct StoreLocation: Sendable, Equatable {
    /// Directory holding the store file, its lock file and (by default) its rollback anchor.
    public var directory: URL
    /// Store name: 1...200 characters, no `/`, no NUL, not `.` or `..`.
    public var name: String
    /// Where the rollback anchor is kept. Defaults to the store's directory.
    public var anchor: RollbackAnchorLocation

    public init(directory: URL, name: String, anchor: RollbackAnchorLocation? = nil) {
        self.directory = directory
        self.name = name
        self.anchor = anchor ?? .directory(directory)
    }

    var filePath: String { directory.appendingPathComponent("\(name).mauthstore").path }
    var lockPath: String { directory.appendingPathComponent("\(name).lock").path }
    /// Where ``SecureStore/setAside(at:)`` moves the store file.
    var setAsidePath: String { filePath + Self.setAsideSuffix }
    static let setAsideSuffix = ".unreadable"
    var anchorPath: String? {
        if case .directory(let dir) = anchor { return dir.appendingPathComponent("\(name).anchor").path }
        return nil
    }

    func validate() throws {
        guard !name.isEmpty, name.count <= 200, !name.contains("/"), !name.contains("\0"), name != ".", name != ".." else {
            throw SecureStorageError.invalidParameter("storage name \"\(name)\" must be 1...200 characters without '/' or NUL")
        }
    }
}

/// The synchronous, thread-safe core shared by ``SecureStore`` (async) and ``SecureStorageSDK`` (facade).
///
/// Holds the store's volatile state: every value stays sealed (AES-GCM under the data key) in memory and is
/// decrypted only when read. `write()` commits the volatile state to disk under the cross-process lock; if
/// another process committed since this state was loaded, its entries are merged in and only the keys changed
/// here overwrite them, so neither process silently loses the other's writes.
final class StoreEngine: @unchecked Sendable {
    private enum Change { case set, removed }

    private let lock = NSLock()
    let location: StoreLocation
    private var fingerprint: [UInt8]
    private var protector: any KeyProtector
    private var header: StoreFormat.Header
    private var keys: StoreFormat.Keys
    private var dataKey: SymmetricKey
    private var records: [[UInt8]: StoreFormat.Record]
    private var names: [[UInt8]: String] = [:]
    /// name → tag; tags depend only on the store's data key, which never changes, so the cache never goes stale.
    private var tagCache: [String: [UInt8]] = [:]
    private var changes: [[UInt8]: Change] = [:]
    private var pendingHeader: StoreFormat.Header?
    private var closed = false

    private init(
        location: StoreLocation, fingerprint: [UInt8], protector: any KeyProtector, header: StoreFormat.Header,
        dataKey: SymmetricKey, records: [[UInt8]: StoreFormat.Record]
    ) {
        self.location = location
        self.fingerprint = fingerprint
        self.protector = protector
        self.header = header
        self.dataKey = dataKey
        self.keys = StoreFormat.Keys(dataKey: dataKey, storeID: header.storeID)
        self.records = records
    }

    // MARK: Lifecycle

    static func create(location: StoreLocation, fingerprint: [UInt8], protector: any KeyProtector) throws -> StoreEngine {
        try location.validate()
        try FileManager.default.createDirectory(
            at: location.directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        return try StoreFileLock.withLock(path: location.lockPath) {
            guard !DurableFile.exists(location.filePath) else {
                throw SecureStorageError.storageAlreadyExists(path: location.filePath)
            }
            let storeID = randomBytes(StoreFormat.storeIDSize)
            let dataKey = SymmetricKey(size: .bits256)
            let parameters = try protector.makeParameters()
            let kek = try protector.keyEncryptionKey(parameters: parameters, fingerprint: fingerprint, storeID: storeID)
            let header = StoreFormat.Header(
                storeID: storeID, generation: 1, protectorKind: protector.kind, protectorParameters: parameters,
                wrappedDataKey: try StoreFormat.wrap(dataKey: dataKey, kek: kek, storeID: storeID, kind: protector.kind, parameters: parameters))
            let engine = StoreEngine(
                location: location, fingerprint: fingerprint, protector: protector, header: header, dataKey: dataKey, records: [:])
            try DurableFile.replace(location.filePath, with: StoreFormat.encode(header: header, records: [:], keys: engine.keys))
            try engine.anchor?.create(storeID: storeID, generation: 1, key: engine.keys.mac)
            return engine
        }
    }

    static func open(location: StoreLocation, fingerprint: [UInt8], protector: any KeyProtector) throws -> StoreEngine {
        try location.validate()
        guard DurableFile.exists(location.directory.path) else { throw SecureStorageError.storageNotFound(path: location.filePath) }
        return try StoreFileLock.withLock(path: location.lockPath) {
            DurableFile.removeStaleTemporaries(of: location.filePath)
            if let anchorPath = location.anchorPath { DurableFile.removeStaleTemporaries(of: anchorPath) }
            guard let bytes = try DurableFile.readFile(location.filePath) else {
                throw SecureStorageError.storageNotFound(path: location.filePath)
            }
            let file = try StoreFormat.parse(bytes)
            guard file.header.protectorKind == protector.kind else {
                throw SecureStorageError.keyProtectionUnavailable(
                    reason: "the store is protected by protector kind \(file.header.protectorKind), not \(protector.kind)")
            }
            let kek = try protector.keyEncryptionKey(
                parameters: file.header.protectorParameters, fingerprint: fingerprint, storeID: file.header.storeID)
            let dataKey = try StoreFormat.unwrap(file.header, kek: kek)
            let engine = StoreEngine(
                location: location, fingerprint: fingerprint, protector: protector, header: file.header, dataKey: dataKey, records: file.records)
            try StoreFormat.verifyMAC(file, keys: engine.keys)
            try engine.checkAnchor(fileGeneration: file.header.generation)
            return engine
        }
    }

    private var anchor: RollbackAnchor? { location.anchorPath.map(RollbackAnchor.init(path:)) }

    private func checkAnchor(fileGeneration: UInt64) throws {
        guard let anchor else { return }
        guard let state = try anchor.read(storeID: header.storeID, key: keys.mac) else {
            // A store always writes its anchor before it is ever opened; a missing anchor means it was removed.
            throw SecureStorageError.tampered(reason: "rollback anchor is missing")
        }
        if fileGeneration < state.generation {
            throw SecureStorageError.rolledBack(fileGeneration: fileGeneration, expectedAtLeast: state.generation)
        }
        // A damaged slot is what a crash during an anchor update leaves, and then the file is already ahead of
        // the surviving slot. A damaged slot with the file *at* the surviving generation is not a crash state: it
        // is what hiding the newest slot to replay an older file looks like.
        if state.damaged && fileGeneration == state.generation {
            throw SecureStorageError.tampered(reason: "rollback anchor was damaged")
        }
        if fileGeneration > state.generation || state.damaged {
            // Crash between the file commit and the anchor update: repair the anchor.
            try anchor.create(storeID: header.storeID, generation: fileGeneration, key: keys.mac)
        }
    }

    private func withState<T>(_ body: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { throw SecureStorageError.storeClosed }
        return try body()
    }

    // MARK: Entries

    static func validate(name: String) throws -> [UInt8] {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= SecureStoreLimits.maximumKeyNameBytes, !bytes.contains(0) else {
            throw SecureStorageError.invalidKeyName(name)
        }
        return bytes
    }

    func set(_ value: [UInt8], for name: String) throws {
        let nameBytes = try Self.validate(name: name)
        guard value.count <= SecureStoreLimits.maximumValueBytes else {
            throw SecureStorageError.valueTooLarge(size: value.count, limit: SecureStoreLimits.maximumValueBytes)
        }
        try withState {
            let tag = tagLocked(name, nameBytes)
            if records[tag] == nil, records.count >= SecureStoreLimits.maximumEntries {
                throw SecureStorageError.invalidParameter("the store already holds \(SecureStoreLimits.maximumEntries) entries")
            }
            let generation = header.generation + 1
            let sealed = try StoreFormat.seal(
                name: nameBytes, value: value, nameTag: tag, generation: generation, storeID: header.storeID, keys: keys)
            records[tag] = .init(generation: generation, sealed: sealed)
            names[tag] = name
            changes[tag] = .set
        }
    }

    func get(_ name: String) throws -> [UInt8]? {
        let nameBytes = try Self.validate(name: name)
        return try withState {
            let tag = tagLocked(name, nameBytes)
            guard let record = records[tag] else { return nil }
            return try StoreFormat.open(record, nameTag: tag, storeID: header.storeID, keys: keys, expectedName: nameBytes).value
        }
    }

    /// The tag of `name`, from the cache when possible (caller holds the lock).
    private func tagLocked(_ name: String, _ nameBytes: [UInt8]) -> [UInt8] {
        if let cached = tagCache[name] { return cached }
        let tag = StoreFormat.nameTag(nameBytes, keys: keys)
        if tagCache.count >= 4096 { tagCache.removeAll(keepingCapacity: true) }
        tagCache[name] = tag
        return tag
    }

    func contains(_ name: String) throws -> Bool {
        let nameBytes = try Self.validate(name: name)
        return try withState { records[tagLocked(name, nameBytes)] != nil }
    }

    @discardableResult
    func remove(_ name: String) throws -> Bool {
        let nameBytes = try Self.validate(name: name)
        return try withState {
            let tag = tagLocked(name, nameBytes)
            guard records.removeValue(forKey: tag) != nil else { return false }
            names[tag] = nil
            changes[tag] = .removed
            return true
        }
    }

    func clear() throws {
        try withState {
            for tag in records.keys { changes[tag] = .removed }
            records.removeAll()
            names.removeAll()
        }
    }

    func count() throws -> Int { try withState { records.count } }

    var hasUncommittedChanges: Bool { lock.withLock { !changes.isEmpty || pendingHeader != nil } }

    func keyNames() throws -> [String] {
        try withState {
            try records.map { tag, record in
                if let name = names[tag] { return name }
                let opened = try StoreFormat.open(record, nameTag: tag, storeID: header.storeID, keys: keys)
                guard let name = String(bytes: opened.name, encoding: .utf8) else {
                    throw SecureStorageError.tampered(reason: "key name is not UTF-8")
                }
                names[tag] = name
                return name
            }.sorted()
        }
    }

    func all() throws -> [String: [UInt8]] {
        try withState {
            var out: [String: [UInt8]] = [:]
            for (tag, record) in records {
                let opened = try StoreFormat.open(record, nameTag: tag, storeID: header.storeID, keys: keys)
                guard let name = String(bytes: opened.name, encoding: .utf8) else {
                    throw SecureStorageError.tampered(reason: "key name is not UTF-8")
                }
                out[name] = opened.value
            }
            return out
        }
    }

    // MARK: Commit

    /// Commits the volatile state (see the type's documentation for the merge rule).
    func write() throws {
        try withState { try commitLocked() }
    }

    private func commitLocked() throws {
        try StoreFileLock.withLock(path: location.lockPath) {
            guard let bytes = try DurableFile.readFile(location.filePath) else {
                throw SecureStorageError.storageNotFound(path: location.filePath)
            }
            let disk = try StoreFormat.parse(bytes)
            guard disk.header.storeID == header.storeID else {
                throw SecureStorageError.tampered(reason: "the store file was replaced by a different store")
            }
            try StoreFormat.verifyMAC(disk, keys: keys)
            var merged = records
            var newHeader = pendingHeader ?? header
            if disk.header.generation != header.generation {
                // Another process committed since we loaded: start from its entries, re-apply ours.
                merged = disk.records
                for (tag, change) in changes {
                    switch change {
                    case .set: merged[tag] = records[tag]
                    case .removed: merged[tag] = nil
                    }
                }
                if pendingHeader == nil {
                    newHeader.protectorParameters = disk.header.protectorParameters
                    newHeader.wrappedDataKey = disk.header.wrappedDataKey
                }
            }
            let generation = max(disk.header.generation, header.generation) + 1
            newHeader.generation = generation
            for (tag, change) in changes where change == .set {
                guard let record = merged[tag], record.generation != generation else { continue }
                let opened = try StoreFormat.open(record, nameTag: tag, storeID: header.storeID, keys: keys)
                merged[tag] = .init(
                    generation: generation,
                    sealed: try StoreFormat.seal(
                        name: opened.name, value: opened.value, nameTag: tag, generation: generation, storeID: header.storeID, keys: keys))
            }
            try DurableFile.replace(location.filePath, with: StoreFormat.encode(header: newHeader, records: merged, keys: keys))
            // The file is durable; from here on the commit has happened even if the anchor update fails
            // (open repairs an anchor that is exactly one generation behind).
            header = newHeader
            records = merged
            changes.removeAll()
            pendingHeader = nil
            names = names.filter { merged[$0.key] != nil }
            try anchor?.advance(storeID: header.storeID, generation: generation, key: keys.mac)
        }
    }

    /// Re-wraps the data key for a new fingerprint (and optionally a new protector) and commits. The entries are
    /// not re-encrypted: this is O(1) in the number of entries, and nothing is lost.
    func rebind(to newFingerprint: [UInt8], protector newProtector: (any KeyProtector)?) throws {
        try withState {
            let target = newProtector ?? protector
            let parameters = try target.makeParameters()
            let kek = try target.keyEncryptionKey(parameters: parameters, fingerprint: newFingerprint, storeID: header.storeID)
            var newHeader = header
            newHeader.protectorKind = target.kind
            newHeader.protectorParameters = parameters
            newHeader.wrappedDataKey = try StoreFormat.wrap(
                dataKey: dataKey, kek: kek, storeID: header.storeID, kind: target.kind, parameters: parameters)
            let previous = (pendingHeader, fingerprint, protector)
            pendingHeader = newHeader
            do {
                try commitLocked()
            } catch {
                (pendingHeader, fingerprint, protector) = previous
                throw error
            }
            fingerprint = newFingerprint
            protector = target
        }
    }

    /// Deletes the store file, its anchor and any protector secret, and closes this instance.
    func delete() throws {
        try withState {
            try StoreFileLock.withLock(path: location.lockPath) {
                try DurableFile.remove(location.filePath)
                if let path = location.anchorPath { try DurableFile.remove(path) }
                try DurableFile.syncDirectory(location.directory.path)
            }
            try protector.destroySecret(storeID: header.storeID)
            closed = true
            records.removeAll()
            names.removeAll()
        }
    }

    func close() {
        lock.withLock {
            closed = true
            records.removeAll()
            names.removeAll()
        }
    }

    var generation: UInt64 { lock.withLock { header.generation } }

    var protectionReport: KeyProtectionReport {
        lock.withLock {
            var report = protector.report(parameters: header.protectorParameters)
            report.detectsRollback = location.anchorPath != nil
            return report
        }
    }

    static func exists(_ location: StoreLocation) -> Bool { DurableFile.exists(location.filePath) }

    /// Moves the store file and its anchor aside (``SecureStore/setAside(at:)``), under the store's lock.
    static func setAside(_ location: StoreLocation) throws {
        try location.validate()
        try StoreFileLock.withLock(path: location.lockPath) {
            try DurableFile.move(location.filePath, to: location.setAsidePath)
            if let path = location.anchorPath { try DurableFile.move(path, to: path + StoreLocation.setAsideSuffix) }
            try DurableFile.syncDirectory(location.directory.path)
        }
    }
}
