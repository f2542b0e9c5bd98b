/// Random bytes from the system CSPRNG (`SystemRandomNumberGenerator`: getrandom / arc4random), for challenges,
/// KeyIDs, nonces, salts and tokens. One home for the SDK, the server and the test tooling.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
