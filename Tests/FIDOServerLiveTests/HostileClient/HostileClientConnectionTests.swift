import FIDOServerTesting
import Foundation
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Connections an anonymous caller holds: a request must arrive whole within the deadline, and at the connection
/// cap the server accepts no more but keeps serving the connections it has.
final class HostileClientConnectionTests: XCTestCase {
    func testABodySentAByteAtATimeIsCutAtTheRequestDeadline() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.idleTimeoutSeconds = 30
        configuration.limits.requestDeadlineSeconds = 2
        try await LoopbackServer.with(configuration) { loopback in
            let connection = try await RawTLSConnection(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            let started = Date()
            try await connection.send(
                "POST /nevisfido/uaf/1.1/request/authentication HTTP/1.1\r\nHost: localhost\r\n"
                    + "Content-Type: application/fido+uaf\r\nContent-Length: 100\r\n\r\n")
            // One byte every 300 ms: each part restarts an idle timeout, never the deadline.
            let cut = await connection.isCut(trickling: { _ in "{" })
            await connection.close()
            XCTAssertTrue(cut, "the connection was still open after 9 s of a trickled body")
            XCTAssertLessThan(Date().timeIntervalSince(started), 5)
        }
    }

    func testAHeadSentAByteAtATimeIsCutAtTheRequestDeadline() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.requestDeadlineSeconds = 2
        try await LoopbackServer.with(configuration) { loopback in
            let connection = try await RawTLSConnection(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            try await connection.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n")
            let cut = await connection.isCut(trickling: { "X-Slow-\($0): 1\r\n" })
            await connection.close()
            XCTAssertTrue(cut, "the connection was still open after 9 s of a trickled head")
        }
    }

    func testAKeepAliveConnectionServesRequestsLongerThanTheDeadline() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.requestDeadlineSeconds = 1
        try await LoopbackServer.with(configuration) { loopback in
            let connection = try await RawTLSConnection(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            // Three prompt requests spread over 1.5 s: the deadline is per request, not per connection.
            for _ in 0..<3 {
                try await connection.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
                try await Task.sleep(for: .milliseconds(500))
            }
            let answers = connection.text.components(separatedBy: "HTTP/1.1 200").count - 1
            XCTAssertEqual(answers, 3, connection.text)
            XCTAssertTrue(connection.channel.isActive)
            await connection.close()
        }
    }

    /// A connection from each of `addresses`, each with a request whose body has not all arrived (`}` ends it):
    /// none is idle.
    static func midRequest(port: Int, trusting pem: String, from addresses: [String]) async throws -> [RawTLSConnection] {
        var busy: [RawTLSConnection] = []
        for address in addresses {
            let connection = try await RawTLSConnection(port: port, trusting: pem, from: address)
            try await connection.send(
                "POST /nevisfido/uaf/1.1/request/authentication HTTP/1.1\r\nHost: localhost\r\n"
                    + "Content-Type: application/fido+uaf\r\nContent-Length: 2\r\n\r\n{")
            busy.append(connection)
        }
        return busy
    }

    func testAtTheCapWithEveryConnectionMidRequestANewcomerIsRefusedAndTheOthersServed() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.maximumConnections = 3
        configuration.limits.requestDeadlineSeconds = 10
        try await LoopbackServer.with(configuration) { loopback in
            let port = loopback.server.port
            let pem = loopback.server.certificatePEM
            // Three connections from three addresses, each with a request whose body has not all arrived: none is idle.
            let busy = try await Self.midRequest(port: port, trusting: pem, from: (2...4).map { "127.0.0.\($0)" })
            let underWay = try await eventually { loopback.server.metrics.value(of: "mauth_http_requests_in_flight") == 3 }
            XCTAssertTrue(underWay, "the three requests never reached the server")
            let refused = try? await RawTLSConnection(port: port, trusting: pem, from: "127.0.0.5")
            if let refused {
                try? await refused.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
                let refusedClosed = await refused.closed(within: 2)
                XCTAssertTrue(refusedClosed, "a connection past the cap was kept open")
                let refusedAnswer = await refused.statusLine(within: 0.1)
                XCTAssertNil(refusedAnswer, "a connection past the cap was served")
                await refused.close()
            }
            let exposition = String(decoding: loopback.server.metrics.exposition(), as: UTF8.self)
            XCTAssertTrue(exposition.contains("mauth_connections_refused_total 1"), exposition)
            // The connections the server holds are still served: each request's body ends and is answered.
            for connection in busy {
                let status = try await connection.answer("}", count: 1)
                XCTAssertNotNil(status, "a held connection was not answered")
                XCTAssertNotEqual(status, 0)
            }
            for connection in busy { await connection.close() }
        }
    }

    /// Before, three connections of one address and one of another, each mid-request, filled a cap of four, and a
    /// third address was closed on arrival. Now the address over its fair share (4 / 3 addresses = 1) gives up one.
    func testAtTheCapAnAddressOverItsFairShareGivesUpABusyConnection() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.maximumConnections = 4
        configuration.limits.requestDeadlineSeconds = 10
        try await LoopbackServer.with(configuration) { loopback in
            let port = loopback.server.port
            let pem = loopback.server.certificatePEM
            let busy = try await Self.midRequest(port: port, trusting: pem, from: ["127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3"])
            let underWay = try await eventually { loopback.server.metrics.value(of: "mauth_http_requests_in_flight") == 4 }
            XCTAssertTrue(underWay, "the four requests never reached the server")
            let newcomer = try await RawTLSConnection(port: port, trusting: pem, from: "127.0.0.4")
            let answered = try await newcomer.answer("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 1)
            XCTAssertEqual(answered, 200, "the newcomer below its share was not served")
            await newcomer.close()
            let exposition = String(decoding: loopback.server.metrics.exposition(), as: UTF8.self)
            XCTAssertTrue(exposition.contains("mauth_connections_evicted_total 1"), exposition)
            XCTAssertTrue(
                exposition.contains("mauth_connections_refused_total 0") || !exposition.contains("mauth_connections_refused_total"), exposition)
            // The address at its share keeps its connection: its request is answered.
            let kept = try await busy[3].answer("}", count: 1)
            XCTAssertNotNil(kept, "the connection of the address at its share was taken")
            for connection in busy { await connection.close() }
        }
    }

    func testTheConnectionCapStaysBelowTheDescriptorLimit() {
        let budget = ConnectionBudget(soft: 1024, hard: 4096, configured: 4096)
        XCTAssertEqual(budget.maximumConnections, 1024 - ConnectionBudget.reserve)
        XCTAssertTrue(budget.wasLowered)
        let roomy = ConnectionBudget(soft: 1_048_576, hard: 1_048_576, configured: 4096)
        XCTAssertEqual(roomy.maximumConnections, 4096)
        XCTAssertFalse(roomy.wasLowered)
        XCTAssertEqual(ConnectionBudget(soft: 100, hard: 100, configured: 4096).maximumConnections, 1)
    }

    func testStartingTheServerRaisesTheSoftDescriptorLimitToTheHardLimit() async throws {
        let before = try XCTUnwrap(ConnectionBudget.descriptorLimit())
        try await LoopbackServer.with { _ in
            let after = try XCTUnwrap(ConnectionBudget.descriptorLimit())
            XCTAssertEqual(after.soft, before.hard)
        }
    }

    // MARK: No address holds every connection

    func testAConnectionThatNeverSendsAByteIsClosedAtTheHandshakeDeadline() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.idleTimeoutSeconds = 30
        try await LoopbackServer.with(configuration) { loopback in
            let started = Date()
            let silent = try await RawTLSConnection(port: loopback.server.port, trusting: nil, from: "127.0.0.2")
            let closed = await silent.closed(within: 13)
            XCTAssertTrue(closed, "a connection that sent nothing was still open after 13 s")
            XCTAssertLessThan(Date().timeIntervalSince(started), 13)
            await silent.close()
        }
    }

    func testAtTheCapANewClientTakesThePlaceOfAnIdleConnectionOfTheBusiestAddress() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.maximumConnections = 6
        try await LoopbackServer.with(configuration) { loopback in
            let port = loopback.server.port
            let pem = loopback.server.certificatePEM
            // One address fills every place with connections that never send a byte.
            var held: [RawTLSConnection] = []
            for _ in 0..<6 { held.append(try await RawTLSConnection(port: port, trusting: nil, from: "127.0.0.2")) }
            let full = try await eventually { loopback.server.metrics.value(of: "mauth_connections_open") == 6 }
            XCTAssertTrue(full, "the six connections were never all held")
            // Another client opens three connections, each served in the place of one of them.
            var clients: [RawTLSConnection] = []
            for _ in 0..<3 {
                let client = try await RawTLSConnection(port: port, trusting: pem, from: "127.0.0.3")
                let status = try await client.answer("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 1)
                XCTAssertEqual(status, 200, "a new client was not served while one address held every connection")
                clients.append(client)
            }
            var closed = 0
            for connection in held where await connection.closed(within: 1) { closed += 1 }
            XCTAssertEqual(closed, 3, "one idle connection of the busiest address gives way to each newcomer")
            let exposition = String(decoding: loopback.server.metrics.exposition(), as: UTF8.self)
            XCTAssertTrue(exposition.contains("mauth_connections_evicted_total 3"), exposition)
            for connection in held + clients { await connection.close() }
            let released = try await eventually { loopback.server.metrics.value(of: "mauth_connections_open") == 0 }
            XCTAssertTrue(released, "closed connections are still counted as held")
        }
    }

    func testOneAddressHoldsAtMostItsShareWhileOtherAddressesAreServed() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.maximumConnections = 50
        configuration.limits.maximumConnectionsPerAddress = 4
        try await LoopbackServer.with(configuration) { loopback in
            let port = loopback.server.port
            let pem = loopback.server.certificatePEM
            var held: [RawTLSConnection] = []
            for _ in 0..<10 { held.append(try await RawTLSConnection(port: port, trusting: nil, from: "127.0.0.2")) }
            // All ten have arrived once six have given way.
            let arrived = try await eventually { loopback.server.metrics.value(of: "mauth_connections_evicted_total") == 6 }
            XCTAssertTrue(arrived, "the ten connections never all arrived")
            var open = 0
            for connection in held where await !connection.closed(within: 0.05) { open += 1 }
            XCTAssertEqual(open, 4, "one address held more than its share")
            var clients: [RawTLSConnection] = []
            for _ in 0..<4 {
                let client = try await RawTLSConnection(port: port, trusting: pem, from: "127.0.0.3")
                let status = try await client.answer("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 1)
                XCTAssertEqual(status, 200)
                clients.append(client)
            }
            for connection in held + clients { await connection.close() }
        }
    }

    func testATrustedProxyIsHeldToTheGlobalCapOnly() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.maximumConnectionsPerAddress = 2
        configuration.clientAddress = .init(trustedProxies: ["127.0.0.2"])
        try await LoopbackServer.with(configuration) { loopback in
            var proxied: [RawTLSConnection] = []
            for _ in 0..<4 {
                let connection = try await RawTLSConnection(port: loopback.server.port, trusting: loopback.server.certificatePEM, from: "127.0.0.2")
                let status = try await connection.answer("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n", count: 1)
                XCTAssertEqual(status, 200)
                proxied.append(connection)
            }
            for connection in proxied {
                let closed = await connection.closed(within: 0.05)
                XCTAssertFalse(closed, "a trusted proxy's connection was closed for its address's share")
            }
            for connection in proxied { await connection.close() }
        }
    }

    func testAHandshakeTrickledFromAcceptIsCutAtTheHandshakeDeadline() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.handshakeDeadlineSeconds = 1
        configuration.limits.requestDeadlineSeconds = 30
        try await LoopbackServer.with(configuration) { loopback in
            let started = Date()
            let connection = try await RawTLSConnection(port: loopback.server.port, trusting: nil, from: "127.0.0.2")
            // The first bytes of a TLS record header, then one byte every 300 ms: a handshake that never ends.
            let cut = await connection.isCut(trickling: { _ in "\u{16}" }, rounds: 10)
            XCTAssertTrue(cut, "the connection was still open after 3 s of a trickled handshake")
            XCTAssertLessThan(Date().timeIntervalSince(started), 2.5)
            await connection.close()
        }
    }
}
