import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the operating system refused something, in words a person can act on: a file or folder that could not be
/// read, written or made (Foundation's own text reads `Error Domain=NSCocoaErrorDomain Code=516 "A file with the
/// same name already exists." UserInfo={…}`), or a socket call's `errno`.
public enum SystemErrorText {
    /// The reason of `error`: the operating system's, where Foundation carries one, else Foundation's code in words.
    public static func reason(_ error: any Error) -> String {
        let error = error as NSError
        // On Linux the underlying error is kept as a Swift error, not bridged: read it as one.
        let underlying = (error.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
        let posix =
            error.domain == NSPOSIXErrorDomain
            ? error.code
            : underlying.flatMap { $0.domain == NSPOSIXErrorDomain ? $0.code : nil }
        if let posix { return reason(errno: Int32(posix)) }
        guard error.domain == NSCocoaErrorDomain else { return error.localizedDescription }
        switch error.code {
        case NSFileNoSuchFileError, NSFileReadNoSuchFileError: return "no such file"
        case NSFileWriteFileExistsError: return "a file of that name is in the way"
        case NSFileReadNoPermissionError, NSFileWriteNoPermissionError: return "permission denied"
        case NSFileWriteOutOfSpaceError: return "the disk is full"
        case NSFileWriteVolumeReadOnlyError: return "the file system is read-only"
        default: return error.localizedDescription
        }
    }

    /// The reason an `errno` stands for: the common file cases in plain words, any other as the system says it.
    public static func reason(errno code: Int32) -> String {
        switch code {
        case EEXIST: return "a file of that name is in the way"
        case ENOTDIR: return "a part of the path is a file, not a folder"
        case ENOENT: return "no such file"
        case EACCES, EPERM: return "permission denied"
        case ENOSPC: return "the disk is full"
        case EROFS: return "the file system is read-only"
        default: return String(cString: strerror(code)).lowercased()
        }
    }

    /// Why a connection to `place` ("127.0.0.1:5432"; nil: the place the reader just named) failed, from the socket
    /// call's `errno`: the words every client of ours uses (the SDK, `mauth load`, the server's database), where the
    /// socket layer's own text reads "connection reset (error set): Connection refused) (errno: 111)".
    public static func connectionReason(errno code: Int32, place: String?) -> String {
        let subject = place ?? "it"
        switch code {
        case ECONNREFUSED: return "nothing answers \(place.map { "at \($0)" } ?? "there") (connection refused)"
        case ETIMEDOUT: return "\(subject) did not answer in time"
        case ECONNRESET, EPIPE: return "\(subject) cut the connection off"
        case ENETUNREACH, EHOSTUNREACH: return "the network cannot reach \(place ?? "it")"
        default: return (place.map { "\($0): " } ?? "") + reason(errno: code)
        }
    }
}
