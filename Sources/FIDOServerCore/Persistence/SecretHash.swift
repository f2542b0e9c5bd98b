import Crypto
import Foundation
import Primitives
import SQLKit
import UAF

/// How bearer secrets (session tokens, dispatch tokens) are stored: their SHA-256, base64url. A copy of the
/// database then holds nothing anyone can present.
enum SecretHash {
    static func of(_ token: String) -> String { Base64URL.encode(Array(SHA256.hash(data: Data(token.utf8)))) }
}
