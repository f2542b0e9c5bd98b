import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16), with a prefix length: one address (the full length) or a network.
package struct IPNetwork: Sendable, Equatable {
    let bytes: [UInt8]
    package let prefixLength: Int

    /// `a.b.c.d`, an IPv6 address, or either with `/prefix`. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is its
    /// IPv4 address, so one client is one budget whichever socket family it arrived on.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.parse(String(parts[0])) else { return nil }
        var length = address.count * 8
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...length).contains(given) else { return nil }
            length = given
        }
        self.init(bytes: address, prefixLength: length)
    }

    private init(bytes: [UInt8], prefixLength: Int) {
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
        if bytes.count == 16, Array(bytes.prefix(12)) == mapped {
            self.bytes = Array(bytes.suffix(4))
            self.prefixLength = max(0, prefixLength - 96)
        } else {
            self.bytes = bytes
            self.prefixLength = prefixLength
        }
    }

    /// The 4 or 16 bytes of an address in text, or nil. `inet_pton` is the C library's strict parser: no host names,
    /// no zone ids, no leading zeros that mean octal.
    private static func parse(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Whether `address` lies in this network (an address of the other family never does).
    package func contains(_ address: IPNetwork) -> Bool {
        guard address.bytes.count == bytes.count else { return false }
        return Self.masked(address.bytes, prefixLength) == Self.masked(bytes, prefixLength)
    }

    static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, length - index * 8))
            return kept == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - kept))
        }
    }

    /// The address as text (IPv4 dotted, IPv6 in its RFC 5952 short form), without the prefix length.
    package var address: String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        var raw = in6_addr()
        withUnsafeMutableBytes(of: &raw) { $0.copyBytes(from: bytes) }
        guard inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil else {
            return bytes.map { String($0, radix: 16) }.joined(separator: ":")
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The budget key of a client at this address: an IPv4 address as itself, an IPv6 address as its first
    /// `ipv6PrefixLength` bits (hex) with the length, so every address of one subscriber's prefix shares one budget.
    package func clientKey(ipv6PrefixLength: Int) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        let prefix = Self.masked(bytes, ipv6PrefixLength).prefix((ipv6PrefixLength + 7) / 8)
        return prefix.map { String($0, radix: 16) }.joined(separator: ":") + "/\(ipv6PrefixLength)"
    }
}
