/// Every way a secure store can fail. Each case says what happened; the doc comment says what to do next.
///
/// Nothing in this module falls back to weaker protection when one of these occurs: an operation that throws
/// leaves both the file on disk and the in-memory state exactly as they were before the call.
public enum SecureStorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No store file exists at the path. Create it with `SecureStore.create` (or `openOrCreate`).
    case storageNotFound(path: String)
    /// A store already exists where a new one was to be created. Open it instead, or delete it first.
    case storageAlreadyExists(path: String)
    /// The operating system refused to read or write the file (permissions, I/O error, no space).
    case unreadable(path: String, reason: String)
    /// The file is not a store this version understands (truncated, wrong magic, unsupported version).
    case corrupted(reason: String)
    /// An integrity check failed: the file or an entry was modified, reordered, swapped or removed.
    case tampered(reason: String)
    /// The file is older than the last generation this device committed: an old copy was restored.
    case rolledBack(fileGeneration: UInt64, expectedAtLeast: UInt64)
    /// The data key could not be unwrapped with this device fingerprint (and passphrase, if any).
    /// Use the fingerprint the store was created with, or `rebind` from it to a new one.
    case fingerprintMismatch
    /// The requested key protection cannot be used on this machine (e.g. no keychain, invalid cost).
    case keyProtectionUnavailable(reason: String)
    /// A key name was empty, longer than ``SecureStoreLimits/maximumKeyNameBytes`` or contained NUL.
    case invalidKeyName(String)
    /// A value was larger than ``SecureStoreLimits/maximumValueBytes``.
    case valueTooLarge(size: Int, limit: Int)
    /// A stored value is not of the requested type (e.g. `getString` on bytes that are not UTF-8).
    case typeMismatch(key: String)
    /// The store was deleted or closed and can no longer be used.
    case storeClosed
    /// A parameter was out of range (e.g. a storage name containing a path separator).
    case invalidParameter(String)

    public var description: String {
        switch self {
        case .storageNotFound(let path): return "No secure store at \(path); create it first."
        case .storageAlreadyExists(let path): return "A secure store already exists at \(path); open it instead."
        case .unreadable(let path, let reason): return "Cannot access \(path): \(reason)."
        case .corrupted(let reason): return "The store file is corrupted (\(reason)); restore it or delete and recreate."
        case .tampered(let reason): return "The store failed its integrity check (\(reason)); its content cannot be trusted."
        case .rolledBack(let found, let expected):
            return "The store file is generation \(found) but this device committed generation \(expected): an older copy was restored."
        case .fingerprintMismatch: return "The device fingerprint does not unlock this store; use the original fingerprint or rebind."
        case .keyProtectionUnavailable(let reason): return "Key protection unavailable: \(reason)."
        case .invalidKeyName(let name): return "Invalid key name \"\(name)\": it must be 1...1024 UTF-8 bytes without NUL."
        case .valueTooLarge(let size, let limit): return "A value of \(size) bytes exceeds the limit of \(limit) bytes."
        case .typeMismatch(let key): return "The value for \"\(key)\" is not of the requested type."
        case .storeClosed: return "The store was closed or deleted."
        case .invalidParameter(let reason): return "Invalid parameter: \(reason)."
        }
    }
}

/// Documented limits of the format.
public enum SecureStoreLimits {
    /// Longest key name, in UTF-8 bytes.
    public static let maximumKeyNameBytes = 1024
    /// Largest single value, in bytes.
    public static let maximumValueBytes = 16 * 1024 * 1024
    /// Most entries one store holds.
    public static let maximumEntries = 1_000_000
}
