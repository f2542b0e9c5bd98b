import AsyncHTTPClient
import FIDOServerTesting
import FIDOSimulation
import Foundation
import NIOCore
import NIOPosix
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// `/metrics`, `/health`, request ids and graceful shutdown, over loopback TLS.
final class ObservabilityTests: XCTestCase {
    func metricsText(_ loopback: LoopbackServer) async throws -> String {
        let answer = try await loopback.exchange(.GET, "/metrics", body: nil)
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.contentType, "text/plain; version=0.0.4; charset=utf-8")
        return String(decoding: answer.body, as: UTF8.self)
    }

    /// The value of one series line (`name{labels} value`), or nil when the series is absent.
    func value(_ text: String, _ series: String) -> Double? { ServerMetrics.value(of: series, in: text) }

    func testMetricsCountRequestsByRouteAndStatusAndDecisionsByUAFStatusCode() async throws {
        try await LoopbackServer.with { loopback in
            var authenticator = SoftwareAuthenticator()
            let appID = loopback.server.appID
            let request = try await loopback.registrationRequest(username: "alice")
            let registered = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: appID))
            XCTAssertEqual(registered.statusCode, 1200)
            let (_, auth) = try await loopback.authenticationRequest(username: "alice")
            // One bad signature: counted under 1498, not 1200.
            let forged = try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: appID) { $0.keyID = $0.keyID.reversed() }
            let rejected = try await loopback.send("/nevisfido/uaf/1.1/authentication", forged)
            XCTAssertNotEqual(rejected.statusCode, 1200)
            _ = try await loopback.exchange(.GET, "/no/such/path", body: nil)

            let text = try await metricsText(loopback)
            XCTAssertEqual(value(text, #"mauth_http_requests_total{method="POST",route="/nevisfido/uaf/1.1/registration",status="200"}"#), 1)
            XCTAssertEqual(
                value(text, #"mauth_http_requests_total{method="POST",route="/nevisfido/uaf/1.1/request/authentication",status="200"}"#), 1)
            XCTAssertEqual(
                value(text, #"mauth_http_requests_total{method="GET",route="NotFound",status="404"}"#), 1,
                "an unknown path is one series, whatever the path")
            XCTAssertFalse(text.contains("/no/such/path"))
            XCTAssertEqual(value(text, #"mauth_decisions_total{operation="registration",status_code="1200"}"#), 1, text)
            XCTAssertEqual(value(text, "mauth_decisions_total{operation=\"authentication\",status_code=\"\(rejected.statusCode)\"}"), 1, text)
            XCTAssertEqual(value(text, #"mauth_http_request_duration_seconds_count{method="POST",route="/nevisfido/uaf/1.1/registration"}"#), 1)
            XCTAssertEqual(value(text, "mauth_database_pool_size"), 1)
            XCTAssertEqual(value(text, "mauth_database_operations_in_flight"), 0)
            XCTAssertGreaterThan(value(text, "mauth_database_operation_duration_seconds_count") ?? 0, 3)
            XCTAssertGreaterThan(value(text, "mauth_process_resident_memory_bytes") ?? 0, 1_000_000)
        }
    }

    func testRepeatedRequestsAndDecisionsAddToTheirOneSeries() {
        let metrics = ServerMetrics()
        for _ in 0..<3 { metrics.requestFinished(method: "POST", route: "/r", status: 200, duration: .milliseconds(1)) }
        metrics.requestFinished(method: "POST", route: "/r", status: 400, duration: .milliseconds(1))
        for _ in 0..<2 { metrics.decided(ServerDecision(operation: "authentication", username: nil, statusCode: 1200, detail: "")) }
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        XCTAssertEqual(value(text, #"mauth_http_requests_total{method="POST",route="/r",status="200"}"#), 3, text)
        XCTAssertEqual(value(text, #"mauth_http_requests_total{method="POST",route="/r",status="400"}"#), 1, text)
        XCTAssertEqual(value(text, #"mauth_http_request_duration_seconds_count{method="POST",route="/r"}"#), 4, text)
        XCTAssertEqual(value(text, #"mauth_decisions_total{operation="authentication",status_code="1200"}"#), 2, text)
    }

    func testMetricsCanBeTurnedOff() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.observability.metrics = false
        try await LoopbackServer.with(configuration) { loopback in
            let answer = try await loopback.exchange(.GET, "/metrics", body: nil)
            XCTAssertEqual(answer.status, 404)
        }
    }

    func testASaneRequestIdIsEchoedAndAnyOtherIsReplaced() async throws {
        try await LoopbackServer.with { loopback in
            let kept = try await loopback.exchange(.GET, "/health/live", body: nil, headers: [("X-Request-Id", "lb-7f3a:01.x_y")])
            XCTAssertEqual(kept.headers.first(name: "X-Request-Id"), "lb-7f3a:01.x_y")
            for hostile in ["two words", String(repeating: "a", count: 129), "a\"b", "ünï"] {
                let replaced = try await loopback.exchange(.GET, "/health/live", body: nil, headers: [("X-Request-Id", hostile)])
                let id = try XCTUnwrap(replaced.headers.first(name: "X-Request-Id"))
                XCTAssertNotEqual(id, hostile)
                XCTAssertEqual(id.count, 16, "a fresh id: 12 random bytes, base64url")
            }
            let fresh = try await loopback.exchange(.GET, "/health/live", body: nil)
            XCTAssertEqual(fresh.headers.first(name: "X-Request-Id")?.count, 16)
            let error = try await loopback.exchange(.GET, "/nope", body: nil)
            XCTAssertEqual(error.status, 404)
            XCTAssertNotNil(error.headers.first(name: "X-Request-Id"), "error answers carry the id too")
        }
    }

    func testReadinessChecksTheDatabase() async throws {
        try await LoopbackServer.with { loopback in
            let ready = try await loopback.exchange(.GET, "/health/ready", body: nil)
            XCTAssertEqual(ready.status, 200)
            XCTAssertEqual(String(decoding: ready.body, as: UTF8.self), #"{"checks":{"database":"UP"},"status":"UP"}"#)
            try await loopback.server.stores.database.close()
            let down = try await loopback.exchange(.GET, "/health/ready", body: nil)
            XCTAssertEqual(down.status, 503)
            XCTAssertEqual(String(decoding: down.body, as: UTF8.self), #"{"checks":{"database":"DOWN"},"status":"DOWN"}"#)
            let combined = try await loopback.exchange(.GET, "/health", body: nil)
            XCTAssertEqual(combined.status, 503)
            let live = try await loopback.exchange(.GET, "/health/live", body: nil)
            XCTAssertEqual(live.status, 200, "the process still answers: liveness is not readiness")
        }
    }

    func testReadinessTurns503WhenShutdownBeginsWhileTheInstanceStillServes() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.observability.shutdownDrainSeconds = 2
        let loopback = try await LoopbackServer(configuration: configuration)
        let server = loopback.server
        let stopping = Task { try await server.stop() }
        var ready: (status: Int, body: String) = (0, "")
        let sawNotReady = try await eventually(within: .seconds(2), every: .milliseconds(50)) {
            let answer = try await loopback.exchange(.GET, "/health/ready", body: nil)
            ready = (answer.status, String(decoding: answer.body, as: UTF8.self))
            return ready.status == 503
        }
        XCTAssertTrue(sawNotReady, "readiness still answered \(ready.status) within the 2 s drain")
        XCTAssertTrue(ready.body.contains(#""shutdown":"in progress""#), ready.body)
        // Still serving during the drain window: a real UAF request is answered.
        let (answer, _) = try await loopback.authenticationRequest(username: nil)
        XCTAssertEqual(answer.statusCode, 1200)
        // Closing the client first spares the server's TLS layer its wait for the client's close_notify.
        try await loopback.client.shutdown()
        try await stopping.value
    }

    /// Whether a TCP connection to `port` on loopback is accepted (the listener is open).
    static func acceptsConnections(port: Int) async -> Bool {
        guard
            let channel = try? await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(host: "127.0.0.1", port: port).get()
        else { return false }
        try? await channel.close()
        return true
    }

    func testGracefulShutdownFinishesARequestUnderWay() async throws {
        let loopback = try await LoopbackServer()
        let body = Array(try LoopbackServer.registrationBody("alice"))
        let (chunks, feed) = AsyncStream<ByteBuffer>.makeStream()
        var request = HTTPClientRequest(url: loopback.server.baseURL.absoluteString + "/nevisfido/uaf/1.1/request/registration")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/fido+uaf;charset=UTF-8")
        for (name, value) in try await loopback.bearer("alice") { request.headers.add(name: name, value: value) }
        request.body = .stream(chunks, length: .known(Int64(body.count)))
        // The head and half the body go out; the handler is now waiting for the rest.
        feed.yield(ByteBuffer(bytes: body[..<(body.count / 2)]))
        let client = loopback.client
        let inFlight = Task { () -> (Int, String) in
            let response = try await client.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), String(buffer: bytes))
        }
        let server = loopback.server
        let underWay = try await eventually { server.metrics.value(of: "mauth_http_requests_in_flight") == 1 }
        XCTAssertTrue(underWay, "the request never reached the server")
        let stopping = Task { try await server.stop() }
        // Shutdown is under way once the listener is closed: no new connection is taken, the one in progress goes on.
        let stoppedAccepting = try await eventually { await !Self.acceptsConnections(port: server.port) }
        XCTAssertTrue(stoppedAccepting, "the server still accepted connections after stop()")
        feed.yield(ByteBuffer(bytes: body[(body.count / 2)...]))
        feed.finish()
        let (status, text) = try await inFlight.value
        XCTAssertEqual(status, 200, text)
        XCTAssertTrue(text.contains(#""statusCode":1200"#), text)
        try await loopback.client.shutdown()
        try await stopping.value
    }
}
