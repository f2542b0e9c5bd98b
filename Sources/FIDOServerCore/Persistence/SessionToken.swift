import Crypto
import Foundation
import Primitives
import SQLKit
import UAF

/// Session tokens (the cookie value): an ``OrderedToken`` with 256 random bits, stored as its time part followed by
/// the ``SecretHash`` of the whole token, so the sessions' primary key sorts by time as well (see ``OrderedToken``) and
/// a copy of the database still holds nothing anyone can present. A token without a time part (issued before tokens
/// had one: 43 characters, where these have 55) is stored and looked up as its hash alone, as it was.
enum SessionToken {
    static let randomBytes = 32
    /// The time part, then the random bytes as unpadded base64url (4 characters per 3 bytes, rounded up): 12 + 43.
    static let length = OrderedToken.prefixLength + (randomBytes * 4 + 2) / 3

    static func make(now: Date) -> String { OrderedToken.make(randomBytes, now: now) }

    static func storedKey(_ token: String) -> String {
        guard token.utf8.count == length, let prefix = OrderedToken.prefix(of: token) else { return SecretHash.of(token) }
        return prefix + SecretHash.of(token)
    }
}
