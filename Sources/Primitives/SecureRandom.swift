/// Random bytes from the system CSPRNG (`SystemRandomNumberGenerator`: getrandom / arc4random), for challenges,
/// KeyIDs, nonces, salts and tokens. One home for the SDK, the server and the test tooling.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        var generator = SystemRandomNumberGenerator()
        // Eight bytes per draw, not one: each draw is a getrandom call, which the server makes for every challenge,
        // request id and token (one byte per call cost 4 % of its CPU under load).
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var offset = 0
            while offset < count {
                var word = generator.next()
                let take = min(8, count - offset)
                withUnsafeBytes(of: &word) { bytes in
                    for index in 0..<take { buffer[offset + index] = bytes[index] }
                }
                offset += take
            }
            initialized = count
        }
    }
}
