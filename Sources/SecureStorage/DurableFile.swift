import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// File-system primitives with the durability guarantees the store promises.
enum DurableFile {
    static func errnoText() -> String { String(cString: strerror(errno)) }

    /// Reads the whole file, or returns nil if it does not exist.
    static func readFile(_ path: String) throws -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw SecureStorageError.unreadable(path: path, reason: errnoText())
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw SecureStorageError.unreadable(path: path, reason: errnoText()) }
        let size = Int(st.st_size)
        var buffer = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = buffer.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress! + done, size - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SecureStorageError.unreadable(path: path, reason: errnoText())
            }
            if n == 0 { break }
            done += n
        }
        return Array(buffer[0..<done])
    }

    /// Replaces `path` atomically and durably: a new temporary file in the same directory
    /// (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), written in full, flushed, renamed over the old file, then the
    /// directory is flushed. The old file is never truncated, so a crash or a full disk at any point leaves
    /// either the old or the new content.
    static func replace(_ path: String, with bytes: [UInt8]) throws {
        let dir = (path as NSString).deletingLastPathComponent
        let tmp = "\(path).tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SecureStorageError.unreadable(path: tmp, reason: errnoText()) }
        var ok = false
        defer {
            if !ok {
                close(fd)
                unlink(tmp)
            }
        }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw SecureStorageError.unreadable(path: tmp, reason: errnoText())
            }
            done += n
        }
        try flush(fd, path: tmp)
        guard close(fd) == 0 else { throw SecureStorageError.unreadable(path: tmp, reason: errnoText()) }
        ok = true
        guard rename(tmp, path) == 0 else {
            let reason = errnoText()
            unlink(tmp)
            throw SecureStorageError.unreadable(path: path, reason: reason)
        }
        try syncDirectory(dir.isEmpty ? "." : dir)
    }

    static func flush(_ fd: Int32, path: String) throws {
        #if canImport(Darwin)
        // Darwin's fsync does not flush the drive's cache; F_FULLFSYNC does.
        if fcntl(fd, F_FULLFSYNC) == 0 { return }
        #endif
        guard fsync(fd) == 0 else { throw SecureStorageError.unreadable(path: path, reason: errnoText()) }
    }

    static func syncDirectory(_ dir: String) throws {
        let fd = open(dir, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SecureStorageError.unreadable(path: dir, reason: errnoText()) }
        defer { close(fd) }
        _ = fsync(fd)  // some file systems refuse fsync on a directory; the rename is still atomic there
    }

    static func remove(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw SecureStorageError.unreadable(path: path, reason: errnoText())
        }
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Renames `path` to `target` (replacing it), atomically; nothing to do if `path` does not exist.
    static func move(_ path: String, to target: String) throws {
        if rename(path, target) != 0 && errno != ENOENT {
            throw SecureStorageError.unreadable(path: path, reason: errnoText())
        }
    }

    /// Removes temporary files that a writer killed mid-commit left behind for `path`. Call it only while
    /// holding the store's lock: every writer creates its temporary file under that lock.
    static func removeStaleTemporaries(of path: String) {
        let url = URL(fileURLWithPath: path)
        let prefix = url.lastPathComponent + ".tmp-"
        let dir = url.deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            unlink(dir.appendingPathComponent(name).path)
        }
    }
}

/// An exclusive advisory lock (`flock`) on a sidecar lock file, held only for the duration of a
/// read-modify-write, so that two processes never interleave their commits.
final class StoreFileLock {
    private let fd: Int32

    init(path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SecureStorageError.unreadable(path: path, reason: DurableFile.errnoText()) }
        while flock(fd, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let reason = DurableFile.errnoText()
            close(fd)
            throw SecureStorageError.unreadable(path: path, reason: "cannot lock: \(reason)")
        }
        self.fd = fd
    }

    deinit {
        _ = flock(fd, LOCK_UN)
        close(fd)
    }

    static func withLock<T>(path: String, _ body: () throws -> T) throws -> T {
        let lock = try StoreFileLock(path: path)
        defer { withExtendedLifetime(lock) {} }
        return try body()
    }
}
