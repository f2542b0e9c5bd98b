import Crypto
import Foundation
import Primitives
import SQLKit
import UAF

/// Identifiers and secrets whose text sorts by creation time: the time (milliseconds since 1970) as 12 lowercase hex
/// digits, then `bytes` random bytes as base64url (all their secrecy; the time is not secret).
///
/// Why: the rows a login adds (its session, its request and status record) are found by these keys, so with purely
/// random keys each new row, and each expired row a purge deletes, lands on its own page of each index, and every
/// commit writes those pages again. With a table of an hour's sessions that made a purge of ten seconds' expired rows
/// hold SQLite's one writer for seconds (measured). Keys that sort by time put the rows of one moment on the same few
/// pages, at the end of the index where they are added and at its start where they expire.
enum OrderedToken {
    static let prefixLength = 12

    static func make(_ bytes: Int, now: Date) -> String { prefix(now) + RandomToken.make(bytes) }

    /// The time part: 12 hex digits (up to the year 10889), zero-padded so that the text sorts as the number does.
    static func prefix(_ now: Date) -> String {
        let milliseconds = UInt64(clamping: max(0, now.epochMillis)) & 0xFFFF_FFFF_FFFF
        let digits = String(milliseconds, radix: 16)
        return String(repeating: "0", count: prefixLength - digits.count) + digits
    }

    /// How a log line names `token`: eight characters of its random part and an ellipsis. The first eight characters
    /// of an ordered token are its time, the same for every token of the same minute, so two sessions opened in a
    /// minute would read as one; eight random characters tell them apart and leave 144 of 192 bits unsaid. A text that
    /// is not an ordered token is named by its first eight characters.
    static func label(_ token: String) -> String {
        let start = prefix(of: token) == nil ? token.startIndex : token.index(token.startIndex, offsetBy: prefixLength)
        return "\(token[start...].prefix(8))…"
    }

    /// The time part of `token`, if it starts with one.
    static func prefix(of token: String) -> Substring? {
        let head = token.utf8.prefix(prefixLength)
        guard head.count == prefixLength, token.utf8.count > prefixLength,
            head.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
        else { return nil }
        return token.prefix(prefixLength)
    }
}
