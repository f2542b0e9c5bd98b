#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Random bytes from the system CSPRNG, for challenges, KeyIDs, nonces, salts and tokens. One home for the SDK, the
/// server and the test tooling.
///
/// One system call per draw (up to 256 bytes): `getentropy` (getrandom) on Linux, `arc4random_buf` on Apple
/// platforms. `SystemRandomNumberGenerator` makes a getrandom call per 8 bytes, and the server draws random bytes
/// for every challenge, request id and token: that was about 15 calls per login. The source is the same kernel
/// CSPRNG either way; where `getentropy` is missing (a kernel without getrandom) the draw falls back to
/// `SystemRandomNumberGenerator`, which reads `/dev/urandom`, never to anything weaker.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            fill(UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// `getentropy`'s limit per call.
    static let maximumDraw = 256

    /// Fills `buffer` with random bytes.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        #if canImport(Darwin)
        arc4random_buf(base, buffer.count)
        #else
        var offset = 0
        while offset < buffer.count {
            let take = min(maximumDraw, buffer.count - offset)
            if getentropy(base + offset, take) != 0 {
                fillFromGenerator(UnsafeMutableRawBufferPointer(start: base + offset, count: take))
            }
            offset += take
        }
        #endif
    }

    /// The portable path: eight bytes per `SystemRandomNumberGenerator` draw.
    static func fillFromGenerator(_ buffer: UnsafeMutableRawBufferPointer) {
        var generator = SystemRandomNumberGenerator()
        var offset = 0
        while offset < buffer.count {
            var word = generator.next()
            let take = min(8, buffer.count - offset)
            withUnsafeBytes(of: &word) { bytes in
                for index in 0..<take { buffer[offset + index] = bytes[index] }
            }
            offset += take
        }
    }
}
