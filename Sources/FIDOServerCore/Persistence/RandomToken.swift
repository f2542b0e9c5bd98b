import Crypto
import Foundation
import Primitives
import SQLKit
import UAF

/// Random identifiers and secrets: base64url of `bytes` bytes from the system CSPRNG.
enum RandomToken {
    static func make(_ bytes: Int) -> String { Base64URL.encode(SecureRandom.bytes(bytes)) }
}
