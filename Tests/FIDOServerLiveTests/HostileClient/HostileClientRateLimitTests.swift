import FIDOServerTesting
import Foundation
import NIOHTTP1
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// One client's budget of requests: it covers every route a caller can reach (refused credentials and unknown paths
/// too), and a client is who a trusted proxy says it is, never what an untrusted caller claims.
final class HostileClientRateLimitTests: XCTestCase {
    static func limited(_ requests: Int, clientAddress: ServerConfiguration.ClientAddress = .init()) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        configuration.limits.requestsPerMinutePerAddress = requests
        configuration.clientAddress = clientAddress
        return configuration
    }

    /// The statuses of `count` requests, in order.
    static func statuses(
        _ loopback: LoopbackServer, _ count: Int, path: String, method: HTTPMethod = .POST, body: Data? = Data("{}".utf8),
        headers: [(String, String)] = []
    ) async throws -> [Int] {
        var statuses: [Int] = []
        for _ in 0..<count {
            statuses.append(try await loopback.exchange(method, path, body: body, headers: headers).status)
        }
        return statuses
    }

    /// Whether the answers are `allowed` answers followed only by 429 (allowing for the minute window rolling over
    /// once during the test: then the count starts again).
    static func assertLimited(_ statuses: [Int], allowed: Int, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(statuses.contains(429), "never limited: \(statuses)", file: file, line: line)
        XCTAssertEqual(statuses.prefix(allowed).filter { $0 == 429 }.count, 0, "\(statuses)", file: file, line: line)
    }

    func testRefusedCredentialsOnProtectedRoutesCountAgainstTheBudget() async throws {
        try await LoopbackServer.with(Self.limited(3)) { loopback in
            let statuses = try await Self.statuses(
                loopback, 6, path: "/nevisfido/uaf/1.1/request/registration",
                body: try LoopbackServer.registrationBody("alice"), headers: [("Authorization", "Bearer forged")])
            XCTAssertEqual(statuses.first, 401)
            Self.assertLimited(statuses, allowed: 3)
        }
    }

    func testAuthCloudAndUnknownPathsCountAgainstTheBudget() async throws {
        try await LoopbackServer.with(Self.limited(3)) { loopback in
            var statuses = try await Self.statuses(loopback, 2, path: "/api/v1/users/nobody", method: .GET, body: nil)
            statuses += try await Self.statuses(loopback, 4, path: "/no/such/path", method: .GET, body: nil)
            XCTAssertEqual(statuses.first, 401)
            Self.assertLimited(statuses, allowed: 3)
        }
    }

    func testAnonymousPasskeyOptionsCountAgainstTheBudgetAndStoreNothingPastIt() async throws {
        var configuration = Self.limited(3)
        configuration.fido2 = .init(rpId: "bank.example", origins: ["https://bank.example"])
        try await LoopbackServer.with(configuration) { loopback in
            let statuses = try await Self.statuses(
                loopback, 6, path: "/nevisfido/fido2/assertion/options",
                body: Data(#"{"username":"alice"}"#.utf8), headers: [("Content-Type", "application/json")])
            XCTAssertEqual(statuses.first, 200)
            Self.assertLimited(statuses, allowed: 3)
            // A refused call stores nothing: one ceremony per accepted call.
            let stored = try await loopback.server.stores.passkeyCeremonies.purge(expiredBefore: .distantFuture)
            XCTAssertEqual(stored, statuses.filter { $0 == 200 }.count)
        }
    }

    func testHealthAndFacetsAreNeverLimited() async throws {
        try await LoopbackServer.with(Self.limited(1)) { loopback in
            var statuses = try await Self.statuses(loopback, 3, path: "/health/live", method: .GET, body: nil)
            statuses += try await Self.statuses(loopback, 3, path: "/nevisfido/uaf/1.1/facets", method: .GET, body: nil)
            XCTAssertEqual(statuses, [200, 200, 200, 200, 200, 200])
        }
    }

    func testBehindATrustedProxyEachClientHasItsOwnBudget() async throws {
        try await LoopbackServer.with(Self.limited(2, clientAddress: .init(trustedProxies: ["127.0.0.0/8"]))) { loopback in
            let first = try await Self.statuses(
                loopback, 3, path: "/no/such/path", method: .GET, body: nil,
                headers: [("X-Forwarded-For", "198.51.100.7")])
            Self.assertLimited(first, allowed: 2)
            let second = try await Self.statuses(
                loopback, 2, path: "/no/such/path", method: .GET, body: nil,
                headers: [("X-Forwarded-For", "198.51.100.8")])
            XCTAssertEqual(second, [404, 404])
        }
    }

    func testAForwardedAddressFromAnUntrustedPeerIsIgnored() async throws {
        try await LoopbackServer.with(Self.limited(2)) { loopback in
            var statuses: [Int] = []
            for index in 0..<4 {
                statuses += try await Self.statuses(
                    loopback, 1, path: "/no/such/path", method: .GET, body: nil,
                    headers: [("X-Forwarded-For", "198.51.100.\(index)")])
            }
            Self.assertLimited(statuses, allowed: 2)
        }
    }

    func testAClientCannotPickItsBudgetByPrependingAddresses() async throws {
        try await LoopbackServer.with(Self.limited(2, clientAddress: .init(trustedProxies: ["127.0.0.1"]))) { loopback in
            var statuses: [Int] = []
            for index in 0..<4 {
                // The proxy appends the peer it saw (198.51.100.9); what the client wrote before it proves nothing.
                statuses += try await Self.statuses(
                    loopback, 1, path: "/no/such/path", method: .GET, body: nil,
                    headers: [("X-Forwarded-For", "203.0.113.\(index), 198.51.100.9")])
            }
            Self.assertLimited(statuses, allowed: 2)
        }
    }

    /// The statuses of `count` requests naming `accept`, each on a connection of its own (the server closes one
    /// whose request it refused before reading the body).
    static func acceptStatuses(_ loopback: LoopbackServer, _ count: Int, accept: String) async throws -> [Int] {
        var statuses: [Int] = []
        for _ in 0..<count {
            let connection = try await RawTLSConnection(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            let status = try await connection.answer(
                "POST /nevisfido/uaf/1.1/request/authentication HTTP/1.1\r\nHost: localhost\r\n"
                    + "Accept: \(accept)\r\nContent-Type: application/fido+uaf\r\nContent-Length: 2\r\n\r\n{}",
                count: 1)
            statuses.append(status ?? 0)
            await connection.close()
        }
        return statuses
    }

    func testARequestRefusedForItsAcceptHeaderCountsAgainstTheBudget() async throws {
        try await LoopbackServer.with(Self.limited(3)) { loopback in
            let statuses = try await Self.acceptStatuses(loopback, 6, accept: "text/html")
            XCTAssertEqual(statuses.first, 406)
            Self.assertLimited(statuses, allowed: 3)
        }
    }

    func testAnAcceptHeaderLongerThanTheCapIsDisregardedNotParsed() async throws {
        try await LoopbackServer.with(Self.limited(100)) { loopback in
            // 2 KB of ranges that name no JSON: read, they would refuse the request; past the cap they are not read.
            let long = Array(repeating: "text/html;q=0.9", count: 128).joined(separator: ", ")
            XCTAssertGreaterThan(long.utf8.count, 1024)
            let statuses = try await Self.acceptStatuses(loopback, 1, accept: long)
            XCTAssertEqual(statuses.count, 1)
            XCTAssertNotEqual(statuses.first, 406, "the long header was parsed")
            XCTAssertNotEqual(statuses.first, 0, "no answer")
        }
    }
}
