import Foundation

/// A facade in the shape of the commercial Secure Storage SDK, for apps that port from it.
///
/// `putString`/`putBytes`/`remove`/`clear` change the volatile storage only; ``write()`` persists it. Unlike the
/// commercial SDK, a fingerprint change does not lose the store (see ``rebind(newFingerprint:)``), key names are
/// not readable in the file, and every failure is a typed ``SecureStorageError``.
public final class SecureStorageSDK: @unchecked Sendable {
    private let engine: StoreEngine

    /// Opens the storage `storageName` in `directory`, creating it if it does not exist.
    /// - Parameters:
    ///   - storageName: the storage's name (one file per name).
    ///   - fingerprint: device-dependent data that binds the storage to this device.
    ///   - iterationCount: the cost of the memory-hard KDF (scrypt N; rounded up to a power of two, ≥ 1024).
    ///   - directory: where the file lives (the app's private directory).
    public init(storageName: String, fingerprint: String, iterationCount: Int, directory: URL) throws {
        let location = StoreLocation(directory: directory, name: storageName)
        let protector = try SoftwareKeyProtector(iterationCount: iterationCount)
        do {
            engine = try StoreEngine.open(location: location, fingerprint: Array(fingerprint.utf8), protector: protector)
        } catch SecureStorageError.storageNotFound {
            engine = try StoreEngine.create(location: location, fingerprint: Array(fingerprint.utf8), protector: protector)
        }
    }

    public func putString(forKey key: String, value: String) throws { try engine.set(Array(value.utf8), for: key) }
    public func putBytes(forKey key: String, value: [UInt8]) throws { try engine.set(value, for: key) }
    public func getString(forKey key: String) throws -> String? {
        guard let bytes = try engine.get(key) else { return nil }
        guard let s = String(bytes: bytes, encoding: .utf8) else { throw SecureStorageError.typeMismatch(key: key) }
        return s
    }
    public func getBytes(forKey key: String) throws -> [UInt8]? { try engine.get(key) }
    public func contains(key: String) throws -> Bool { try engine.contains(key) }
    public func remove(forKey key: String) throws { try engine.remove(key) }
    public func getAll() throws -> [String: [UInt8]] { try engine.all() }
    public func clear() throws { try engine.clear() }
    public func size() throws -> Int { try engine.count() }
    /// Persists the volatile storage.
    public func write() throws { try engine.write() }
    /// Deletes the storage file.
    public func delete() throws { try engine.delete() }
    /// Moves the storage to a new fingerprint without losing data.
    public func rebind(newFingerprint: String) throws { try engine.rebind(to: Array(newFingerprint.utf8), protector: nil) }
    /// How the storage key is protected.
    public var protectionReport: KeyProtectionReport { engine.protectionReport }
    /// Whether secure hardware protects the storage key.
    public var isProtectedBySecureHardware: Bool { engine.protectionReport.isHardwareBacked }
}
