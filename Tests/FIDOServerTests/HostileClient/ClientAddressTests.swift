import HTTPTypes
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Who the client of a request is: address parsing, networks, IPv6 prefixes and the trusted-proxy walk.
final class ClientAddressTests: XCTestCase {
    func resolver(_ proxies: [String] = [], prefix: Int = 64) -> ClientAddressResolver {
        ClientAddressResolver(.init(trustedProxies: proxies), ipv6PrefixLength: prefix)
    }

    func forwarded(_ value: String) -> HTTPFields { [HTTPField.Name("X-Forwarded-For")!: value] }

    func testAnIPv4PeerIsItsOwnKey() {
        XCTAssertEqual(resolver().clientKey(peer: "192.0.2.1", headers: [:]), "192.0.2.1")
    }

    func testIPv6PeersOfOnePrefixShareAKey() {
        let a = resolver().clientKey(peer: "2001:db8:1:2::1", headers: [:])
        let b = resolver().clientKey(peer: "2001:db8:1:2:ffff:ffff:ffff:fffe", headers: [:])
        let other = resolver().clientKey(peer: "2001:db8:1:3::1", headers: [:])
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, other)
    }

    func testTheIPv6PrefixLengthIsConfigurable() {
        let r = resolver(prefix: 48)
        XCTAssertEqual(r.clientKey(peer: "2001:db8:1:2::1", headers: [:]), r.clientKey(peer: "2001:db8:1:3::1", headers: [:]))
        XCTAssertNotEqual(r.clientKey(peer: "2001:db8:1:2::1", headers: [:]), r.clientKey(peer: "2001:db8:2:2::1", headers: [:]))
    }

    func testAnIPv4MappedIPv6PeerIsItsIPv4Address() {
        XCTAssertEqual(resolver().clientKey(peer: "::ffff:192.0.2.1", headers: [:]), "192.0.2.1")
    }

    func testTheHeaderIsIgnoredFromAnUntrustedPeer() {
        XCTAssertEqual(resolver().clientKey(peer: "192.0.2.1", headers: forwarded("198.51.100.1")), "192.0.2.1")
    }

    func testFromATrustedProxyTheRightmostUntrustedAddressIsTheClient() {
        let r = resolver(["10.0.0.0/8"])
        XCTAssertEqual(r.clientKey(peer: "10.0.0.2", headers: forwarded("203.0.113.5, 198.51.100.1, 10.0.0.9")), "198.51.100.1")
    }

    func testFromATrustedProxyWithoutTheHeaderThePeerIsTheClient() {
        XCTAssertEqual(resolver(["10.0.0.0/8"]).clientKey(peer: "10.0.0.2", headers: [:]), "10.0.0.2")
    }

    func testAnEntryThatIsNoAddressEndsTheWalk() {
        let r = resolver(["10.0.0.0/8"])
        XCTAssertEqual(r.clientKey(peer: "10.0.0.2", headers: forwarded("198.51.100.1, unknown")), "10.0.0.2")
    }

    func testBracketedIPv6AndIPv4WithPortEntriesAreRead() {
        let r = resolver(["10.0.0.0/8"])
        XCTAssertEqual(r.clientKey(peer: "10.0.0.2", headers: forwarded("198.51.100.1:4711")), "198.51.100.1")
        XCTAssertEqual(r.clientKey(peer: "10.0.0.2", headers: forwarded("[2001:db8::1]:443")), r.clientKey(peer: "2001:db8::2", headers: [:]))
    }

    func testNetworksContainTheirAddressesOnly() throws {
        let network = try XCTUnwrap(IPNetwork("10.1.0.0/16"))
        XCTAssertTrue(network.contains(try XCTUnwrap(IPNetwork("10.1.255.3"))))
        XCTAssertFalse(network.contains(try XCTUnwrap(IPNetwork("10.2.0.1"))))
        XCTAssertFalse(network.contains(try XCTUnwrap(IPNetwork("::1"))))
    }

    func testATrustedProxyThatIsNoAddressIsAConfigurationError() {
        for bad in ["proxy.example", "10.0.0.0/33", "10.0.0.1/", "", "010.0.0.1"] {
            XCTAssertThrowsError(try ServerConfiguration.ClientAddress(trustedProxies: [bad]).validate(), bad)
        }
        XCTAssertNoThrow(try ServerConfiguration.ClientAddress(trustedProxies: ["10.0.0.1", "fd00::/8"]).validate())
    }
}
