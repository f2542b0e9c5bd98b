import FIDOServerCore
import Foundation
import HTTPTypes

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Decides who the client of a request is (`ServerConfiguration.ClientAddress`).
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
        client(peer: peer, hops: header.map { headers[values: $0] } ?? [])?.clientKey(ipv6PrefixLength: ipv6PrefixLength)
    }

    /// The client as ``clientKey(peer:headers:)`` finds it, from the peer and the values of the configured header.
    func client(peer: String?, hops values: [String]) -> IPNetwork? {
        guard let peer, var client = IPNetwork(peer) else { return nil }
        if isTrustedProxy(client), header != nil {
            let hops = values.flatMap { $0.split(separator: ",") }
            for hop in hops.reversed() {
                guard let address = IPNetwork(Self.address(of: hop)) else { break }
                client = address
                if !isTrustedProxy(address) { break }
            }
        }
        return client
    }

    /// The address of one header entry: trimmed, without an IPv6 entry's brackets or an IPv4 entry's port.
    static func address(of hop: Substring) -> String {
        let entry = hop.trimmingCharacters(in: .whitespaces)
        if entry.hasPrefix("["), let close = entry.firstIndex(of: "]") { return String(entry[entry.index(after: entry.startIndex)..<close]) }
        if entry.filter({ $0 == ":" }).count == 1, let colon = entry.firstIndex(of: ":") { return String(entry[..<colon]) }
        return entry
    }
}
