import Foundation

/// An encrypted, integrity-checked, device-bound key-value store (Swift-native API).
///
/// Changes (`set`, `remove`, `clear`) go to the store's volatile state, where values stay encrypted; they reach
/// the disk only with ``write()`` (or ``transaction(_:)``, which writes for you). Every load verifies the whole
/// file: checksum, store authenticator, per-entry authentication and the rollback anchor.
///
/// The key derivation runs in the actor's executor, never on the caller's (e.g. main) actor.
public actor SecureStore {
    let engine: StoreEngine

    private init(engine: StoreEngine) { self.engine = engine }

    /// Creates a new store. Throws ``SecureStorageError/storageAlreadyExists(path:)`` if one exists.
    public static func create(at location: StoreLocation, fingerprint: String, protector: any KeyProtector) async throws -> SecureStore {
        SecureStore(engine: try StoreEngine.create(location: location, fingerprint: Array(fingerprint.utf8), protector: protector))
    }

    /// Opens an existing store. Throws ``SecureStorageError/storageNotFound(path:)`` if there is none.
    public static func open(at location: StoreLocation, fingerprint: String, protector: any KeyProtector) async throws -> SecureStore {
        SecureStore(engine: try StoreEngine.open(location: location, fingerprint: Array(fingerprint.utf8), protector: protector))
    }

    /// Opens the store, creating it first if no file exists. Any other failure (tampering, wrong fingerprint)
    /// is thrown: an unreadable store is never replaced by an empty one.
    public static func openOrCreate(at location: StoreLocation, fingerprint: String, protector: any KeyProtector) async throws -> SecureStore {
        do {
            return try await open(at: location, fingerprint: fingerprint, protector: protector)
        } catch SecureStorageError.storageNotFound {
            do {
                return try await create(at: location, fingerprint: fingerprint, protector: protector)
            } catch SecureStorageError.storageAlreadyExists {
                return try await open(at: location, fingerprint: fingerprint, protector: protector)
            }
        }
    }

    /// Moves the store at `location` aside, with its rollback anchor, so that a new store can be created there: for
    /// a store this device cannot unlock (``SecureStorageError/fingerprintMismatch``), such as a file restored
    /// from another device's backup whose key secret stayed on that device. The file becomes
    /// `<name>.mauthstore.unreadable`, replacing an earlier one, so at most one set-aside copy is kept. Nothing
    /// to do if there is no store.
    public static func setAside(at location: StoreLocation) throws { try StoreEngine.setAside(location) }

    /// Whether a store file exists at `location`.
    public static func exists(at location: StoreLocation) -> Bool { StoreEngine.exists(location) }

    // MARK: Values

    public func set(_ value: some DataProtocol, for key: String) throws { try engine.set(Array(value), for: key) }
    public func set(_ value: String, for key: String) throws { try engine.set(Array(value.utf8), for: key) }
    /// Stores `value` JSON-encoded.
    public func set<T: Encodable>(encoding value: T, for key: String) throws {
        try engine.set(Array(try JSONEncoder().encode(value)), for: key)
    }

    public func data(for key: String) throws -> Data? { try engine.get(key).map { Data($0) } }
    public func bytes(for key: String) throws -> [UInt8]? { try engine.get(key) }
    public func string(for key: String) throws -> String? {
        guard let bytes = try engine.get(key) else { return nil }
        guard let s = String(bytes: bytes, encoding: .utf8) else { throw SecureStorageError.typeMismatch(key: key) }
        return s
    }
    /// Decodes a value stored with ``set(encoding:for:)``.
    public func value<T: Decodable>(_ type: T.Type, for key: String) throws -> T? {
        guard let bytes = try engine.get(key) else { return nil }
        do { return try JSONDecoder().decode(T.self, from: Data(bytes)) } catch { throw SecureStorageError.typeMismatch(key: key) }
    }

    public func contains(_ key: String) throws -> Bool { try engine.contains(key) }
    @discardableResult public func remove(_ key: String) throws -> Bool { try engine.remove(key) }
    public func clear() throws { try engine.clear() }
    public func keys() throws -> [String] { try engine.keyNames() }
    public func count() throws -> Int { try engine.count() }
    public func all() throws -> [String: Data] { try engine.all().mapValues { Data($0) } }

    // MARK: Persistence

    /// Commits the volatile state durably (atomic replace, fsync, directory fsync, rollback anchor).
    public func write() throws { try engine.write() }

    /// Runs `body` against the store and commits once at the end. If `body` throws, nothing is committed, but
    /// the volatile changes it made stay pending (call ``write()`` or reopen to discard them).
    public func transaction<T: Sendable>(_ body: @Sendable (isolated SecureStore) throws -> T) throws -> T {
        let result = try body(self)
        try engine.write()
        return result
    }

    /// Whether there are changes not yet written.
    public var hasUncommittedChanges: Bool { engine.hasUncommittedChanges }

    /// Moves the store to a new device fingerprint (and optionally a new protector) without losing data.
    public func rebind(to fingerprint: String, protector: (any KeyProtector)? = nil) throws {
        try engine.rebind(to: Array(fingerprint.utf8), protector: protector)
    }

    /// Deletes the store from disk. The instance cannot be used afterwards.
    public func delete() throws { try engine.delete() }

    /// How the data key is protected.
    public var protectionReport: KeyProtectionReport { engine.protectionReport }

    /// The generation of the last commit this instance knows.
    public var generation: UInt64 { engine.generation }
}
