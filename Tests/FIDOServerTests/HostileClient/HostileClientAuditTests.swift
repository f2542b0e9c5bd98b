import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import JOSE
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The audit trail under a hostile caller: what a request carries never forges a line, a field or a terminal's
/// screen, and no credential a user holds buys unbounded rows.
final class HostileClientAuditTests: XCTestCase {
    typealias Devices = HostileClientDeviceTests

    /// The stored events after the trail wrote its queue.
    static func stored(_ loopback: InProcessServer) async throws -> [AuditEvent] {
        await loopback.server.audit?.flush()
        return try await loopback.server.stores.audit.events(limit: 1000)
    }

    /// Whether any text field of `event` holds a control character (C0, DEL, C1) or a bidirectional override or
    /// isolate: what may not reach a line or a terminal (checked here on its own, not with the server's rule).
    static func hasUnsafeText(_ event: AuditEvent) -> Bool {
        [event.detail, event.username ?? "", event.principal ?? "", event.operation, event.requestID ?? "", event.clientAddress ?? ""]
            .contains { text in
                text.unicodeScalars.contains { scalar in
                    scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
                        || (0x2066...0x2069).contains(scalar.value)
                }
            }
    }

    func testAnAlgorithmHeaderWithANewlineCannotForgeAnAuditLine() async throws {
        try await Devices.withPhones { loopback, phone, _ in
            // No signature is needed: `alg` is read before anything is verified, and the target id is no secret.
            let forged = "ES256\n2026-11-26T10:00:00.000Z info mauth.audit: admin user erase for bob: 200 erased\u{1B}[2J\u{202E}"
            let header = Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: ["alg": forged, "kid": phone.target])))
            let claims = DeviceSignature.Claims(
                dispatchTargetId: phone.target, now: loopback.clock.now, method: "GET",
                path: Devices.credentialsPath(phone), body: nil)
            let payload = Base64URL.encode(Array(try JSONEncoder().encode(claims)))
            let answer = try await loopback.exchange(
                .GET, Devices.credentialsPath(phone), body: nil,
                headers: [(DeviceSignature.headerName, "\(header).\(payload).\(Base64URL.encode(Array(repeating: 1, count: 64)))")])
            XCTAssertEqual(answer.status, 401)
            let events = try await Self.stored(loopback)
            let refusal = try XCTUnwrap(events.first { $0.detail.contains("unsupported algorithm") }, "\(events.map(\.detail))")
            XCTAssertFalse(Self.hasUnsafeText(refusal), refusal.detail)
            XCTAssertTrue(refusal.detail.contains(#"ES256\u{0A}2026"#), refusal.detail)
        }
    }

    func testSignedMethodAndPathWithControlCharactersReachTheTrailEscaped() async throws {
        try await Devices.withPhones { loopback, phone, _ in
            let path = Devices.credentialsPath(phone)
            for (method, signedPath) in [("GET\u{1B}]0;pwned\u{07}", path), ("GET", path + "\r\nforged: 1\u{2066}")] {
                let claims = DeviceSignature.Claims(
                    dispatchTargetId: phone.target, now: loopback.clock.now, method: method, path: signedPath, body: nil)
                let answer = try await loopback.exchange(
                    .GET, path, body: nil,
                    headers: [(DeviceSignature.headerName, try Devices.signature(phone, claims))])
                XCTAssertEqual(answer.status, 401)
            }
            let refusals = try await Self.stored(loopback).filter { $0.detail.contains("signed for") }
            XCTAssertEqual(refusals.count, 2, "\(refusals.map(\.detail))")
            for refusal in refusals { XCTAssertFalse(Self.hasUnsafeText(refusal), refusal.detail) }
        }
    }

    func testAUsersSessionWritesAtMostTheBudgetOfRowsAMinute() async throws {
        var configuration = InProcessServer.configuration()
        configuration.observability.auditAnonymousEventsPerMinute = 3
        try await InProcessServer.with(configuration) { loopback in
            // At the start of a minute, so every refusal falls into one.
            loopback.clock.advance(60 - loopback.clock.now.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) + 1)
            // Alice signs in once; then her session's token asks ten times for what the server refuses (an unknown policy).
            var authenticator = SoftwareAuthenticator()
            let request = try await loopback.registrationRequest(username: "alice")
            _ = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.appID))
            let (_, auth) = try await loopback.authenticationRequest(username: "alice")
            let answer = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/authentication",
                body: try JSONEncoder().encode(
                    SendUAFResponse(
                        uafResponse: try UAFMessageCodec.encode([try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.appID)]))))
            let session = try XCTUnwrap(
                try JSONDecoder().decode(ServerResponse.self, from: answer.body).additionalTokens?.first { $0.type == .jwt }?.value)
            let body = try JSONEncoder().encode(
                GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": "alice", "policy": "no-such-policy"])))
            for _ in 0..<10 {
                let refused = try await loopback.exchange(
                    .POST, "/nevisfido/uaf/1.1/request/authentication", body: body, headers: [("Authorization", "Bearer \(session)")])
                XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: refused.body).statusCode, 1400)
            }
            let rows = try await Self.stored(loopback).filter { $0.principal == "session:alice" && $0.operation != "audit budget" }
            XCTAssertEqual(rows.count, 3, "rows of alice's session: \(rows.map(\.detail))")
            // When the minute ends, one row says how many were left out.
            loopback.clock.advance(61)
            let summary = try await Self.stored(loopback).filter { $0.operation == "audit budget" }
            XCTAssertEqual(summary.map(\.principal), ["session:alice"])
            XCTAssertTrue(summary.first?.detail.hasPrefix("7 further decision(s)") ?? false, "\(summary.map(\.detail))")
        }
    }
}
