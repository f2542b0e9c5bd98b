#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPTypes

/// An IPv4 or IPv6 address as its bytes (4 or 16), with a prefix length: one address (the full length) or a network.
struct IPNetwork: Sendable, Equatable {
    let bytes: [UInt8]
    let prefixLength: Int

    /// `a.b.c.d`, an IPv6 address, or either with `/prefix`. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is its
    /// IPv4 address, so one client is one budget whichever socket family it arrived on.
    init?(_ text: String) {
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
            self.bytes = Array(bytes.suffix(4)); self.prefixLength = max(0, prefixLength - 96)
        } else {
            self.bytes = bytes; self.prefixLength = prefixLength
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
    func contains(_ address: IPNetwork) -> Bool {
        guard address.bytes.count == bytes.count else { return false }
        return Self.masked(address.bytes, prefixLength) == Self.masked(bytes, prefixLength)
    }

    static func masked(_ bytes: [UInt8], _ length: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, length - index * 8))
            return kept == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - kept))
        }
    }

    /// The budget key of a client at this address: an IPv4 address as itself, an IPv6 address as its first
    /// `ipv6PrefixLength` bits (hex) with the length, so every address of one subscriber's prefix shares one budget.
    func clientKey(ipv6PrefixLength: Int) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        let prefix = Self.masked(bytes, ipv6PrefixLength).prefix((ipv6PrefixLength + 7) / 8)
        return prefix.map { String($0, radix: 16) }.joined(separator: ":") + "/\(ipv6PrefixLength)"
    }
}

/// Decides who the client of a request is (``ServerConfiguration/ClientAddress``).
struct ClientAddressResolver: Sendable {
    let header: HTTPField.Name?
    let proxies: [IPNetwork]
    let ipv6PrefixLength: Int

    init(_ configuration: ServerConfiguration.ClientAddress, ipv6PrefixLength: Int) {
        header = HTTPField.Name(configuration.header)
        proxies = configuration.trustedProxies.compactMap(IPNetwork.init)
        self.ipv6PrefixLength = ipv6PrefixLength
    }

    func isTrustedProxy(_ address: IPNetwork) -> Bool { proxies.contains { $0.contains(address) } }

    /// The client's budget key: the peer's, unless the peer is a trusted proxy, in which case the rightmost address
    /// of the header that is not itself a trusted proxy (the one the nearest trusted proxy saw). Entries to its
    /// left were written by the client and prove nothing. An entry that is not an address ends the walk at the hop
    /// before it. Nil when there is no peer (in-process tests).
    func clientKey(peer: String?, headers: HTTPFields) -> String? {
        guard let peer, var client = IPNetwork(peer) else { return nil }
        if isTrustedProxy(client), let header {
            let hops = headers[values: header].flatMap { $0.split(separator: ",") }
            for hop in hops.reversed() {
                guard let address = IPNetwork(Self.address(of: hop)) else { break }
                client = address
                if !isTrustedProxy(address) { break }
            }
        }
        return client.clientKey(ipv6PrefixLength: ipv6PrefixLength)
    }

    /// The address of one header entry: trimmed, without an IPv6 entry's brackets or an IPv4 entry's port.
    static func address(of hop: Substring) -> String {
        let entry = hop.trimmingCharacters(in: .whitespaces)
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") { return String(entry[entry.index(after: entry.startIndex)..<close]) }
        if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") { return String(entry[..<colon]) }
        return entry
    }
}
