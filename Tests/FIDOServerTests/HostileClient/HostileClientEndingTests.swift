import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import WireJSON
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Operations end: a device that declines or fails reports it and the operation is `failed` at once; one the device
/// abandons is `failed` when its request expires; the relying party can cancel one, after which nothing redeems or
/// answers it.
final class HostileClientEndingTests: XCTestCase {
    struct Status: Decodable {
        struct TokenInformation: Decodable { var tokenResult: String? }
        var status: String
        var uafStatusCode: Int?
        var clientErrorCode: Int?
        var asmStatusCode: Int?
        var tokenInformation: TokenInformation?
    }

    static func status(_ loopback: InProcessServer, _ sessionId: String, path: String = "/nevisfido/status") async throws -> Status {
        let answer = try await loopback.exchange(
            .POST, path, body: try JSONEncoder().encode(["sessionId": sessionId]), contentType: "application/json")
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        return try JSONDecoder().decode(Status.self, from: answer.body)
    }

    static func cancel(_ loopback: InProcessServer, _ sessionId: String) async throws -> Status {
        try await status(loopback, sessionId, path: "/nevisfido/status/cancel")
    }

    /// Registers alice with a software authenticator (so authentication can be dispatched to her) and returns it.
    static func registeredAlice(_ loopback: InProcessServer) async throws -> SoftwareAuthenticator {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        let registered = try await loopback.send(
            "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        XCTAssertEqual(registered.statusCode, 1200)
        return authenticator
    }

    /// An authentication for alice dispatched as a link (no target): its token and session id.
    static func dispatchedLogin(_ loopback: InProcessServer) async throws -> (token: String, sessionId: String) {
        struct Body: Encodable {
            var dispatcher: String
            var getUafRequest: GetUAFRequest
        }
        struct Answer: Decodable {
            var token: String
            var sessionId: String
        }
        let body = Body(
            dispatcher: "link", getUafRequest: GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": "alice"])))
        let answer = try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/authentication", body: try JSONEncoder().encode(body),
            contentType: "application/json")
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        let decoded = try JSONDecoder().decode(Answer.self, from: answer.body)
        return (decoded.token, decoded.sessionId)
    }

    /// An Auth Cloud approval for a registered alice, made with a new access key: the key and the status token.
    static func authCloudApproval(_ loopback: InProcessServer) async throws -> (key: String, statusToken: String) {
        let key = try await loopback.server.stores.accessKeys.create(name: "backend", now: Date()).key
        _ = try await registeredAlice(loopback)
        struct Approval: Decodable { var statusToken: String }
        let approval = try await loopback.exchange(
            .POST, "/api/v1/approval", body: Data(#"{"channel":"app","message":"Pay CHF 10","username":"alice"}"#.utf8),
            contentType: "application/json", headers: [("Authorization", "Bearer \(key)")])
        XCTAssertEqual(approval.status, 200, String(decoding: approval.body, as: UTF8.self))
        return (key, try JSONDecoder().decode(Approval.self, from: approval.body).statusToken)
    }

    static func redeem(_ loopback: InProcessServer, _ token: String) async throws -> ReturnUAFRequest {
        try await loopback.post("/nevisfido/token/redeem/authentication", ["token": token], as: ReturnUAFRequest.self)
    }

    // MARK: The device reports

    func testADeclineTheDeviceReportsFailsTheOperationAtOnce() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registeredAlice(loopback)
            let (token, sessionId) = try await Self.dispatchedLogin(loopback)
            let redeemed = try await Self.redeem(loopback, token)
            let request = try UAFMessageCodec.decode(AuthenticationRequest.self, from: try XCTUnwrap(redeemed.uafRequest))[0]
            // Our contract: the operation's response with no assertions, the client's codes in the context.
            let report = AuthenticationResponse(header: request.header, fcParams: "", assertions: [])
            let body = SendUAFResponse(uafResponse: try UAFMessageCodec.encode([report]), context: #"{"clientErrorCode":3,"asmStatusCode":3}"#)
            let answer = try await loopback.post("/nevisfido/uaf/1.1/authentication", body: try JSONEncoder().encode(body))
            XCTAssertEqual(answer.0, 200)
            XCTAssertNotEqual(try JSONDecoder().decode(ServerResponse.self, from: answer.1).statusCode, 1200)
            let status = try await Self.status(loopback, sessionId)
            XCTAssertEqual(status.status, "failed")
            XCTAssertEqual(status.clientErrorCode, 3)
            XCTAssertEqual(status.asmStatusCode, 3)
        }
    }

    func testARequestNobodyAnswersIsFailedWhenItExpires() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registeredAlice(loopback)
            let (token, sessionId) = try await Self.dispatchedLogin(loopback)
            _ = try await Self.redeem(loopback, token)
            let pending = try await Self.status(loopback, sessionId)
            XCTAssertEqual(pending.status, "clientAuthenticating")
            loopback.clock.advance(TimeInterval(ServerConfiguration().requestLifetimeSeconds) + 1)
            let expired = try await Self.status(loopback, sessionId)
            XCTAssertEqual(expired.status, "failed", "the device abandoned it")
            XCTAssertEqual(expired.uafStatusCode, 1408)
            XCTAssertEqual(expired.tokenInformation?.tokenResult, "tokenRedeemed")
        }
    }

    // MARK: One answer per request

    /// A login's answer for a dispatched login of alice, and its session id: the request stays until one completes.
    static func answeredLogin(_ loopback: InProcessServer) async throws -> (AuthenticationResponse, sessionId: String) {
        var authenticator = try await registeredAlice(loopback)
        let (token, sessionId) = try await dispatchedLogin(loopback)
        let redeemed = try await redeem(loopback, token)
        let request = try UAFMessageCodec.decode(AuthenticationRequest.self, from: try XCTUnwrap(redeemed.uafRequest))[0]
        return (try authenticator.authenticate(request, serverAppID: loopback.server.appID), sessionId)
    }

    func testALoginAnsweredTwiceIsAcceptedOnce() async throws {
        try await InProcessServer.with { loopback in
            let (response, _) = try await Self.answeredLogin(loopback)
            let first = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(first.statusCode, 1200)
            let second = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(second.statusCode, 1491)
            XCTAssertNil(second.additionalTokens, "a replayed answer opened a session")
        }
    }

    /// The answer is read before it is verified and the request removed only when the login is written, so a refusal
    /// must remove it too: the genuine answer, sent after a forged one, finds its request spent.
    func testAForgedLoginAnswerSpendsTheRequestForTheGenuineOne() async throws {
        try await InProcessServer.with { loopback in
            let (genuine, sessionId) = try await Self.answeredLogin(loopback)
            var forged = genuine
            var assertion = try XCTUnwrap(Base64URL.decodeBytes(genuine.assertions[0].assertion))
            assertion[assertion.count - 1] ^= 0x01  // the signature's last byte
            forged.assertions[0].assertion = Base64URL.encode(assertion)
            let refused = try await loopback.send("/nevisfido/uaf/1.1/authentication", forged)
            XCTAssertNotEqual(refused.statusCode, 1200)
            let failed = try await Self.status(loopback, sessionId)
            XCTAssertEqual(failed.status, "failed")
            XCTAssertEqual(failed.uafStatusCode, refused.statusCode)
            let late = try await loopback.send("/nevisfido/uaf/1.1/authentication", genuine)
            XCTAssertEqual(late.statusCode, 1491)
            XCTAssertNil(late.additionalTokens)
            let after = try await Self.status(loopback, sessionId)
            XCTAssertEqual(after.status, "failed", "the late answer rewrote the outcome")
        }
    }

    func testADeclineReportSpendsTheRequest() async throws {
        try await InProcessServer.with { loopback in
            let (genuine, sessionId) = try await Self.answeredLogin(loopback)
            let report = AuthenticationResponse(header: genuine.header, fcParams: "", assertions: [])
            let body = SendUAFResponse(uafResponse: try UAFMessageCodec.encode([report]), context: #"{"clientErrorCode":3}"#)
            let declined = try await loopback.post("/nevisfido/uaf/1.1/authentication", body: try JSONEncoder().encode(body))
            XCTAssertEqual(declined.0, 200)
            let late = try await loopback.send("/nevisfido/uaf/1.1/authentication", genuine)
            XCTAssertEqual(late.statusCode, 1491, "the device declined, then answered after all")
            let status = try await Self.status(loopback, sessionId)
            XCTAssertEqual(status.status, "failed")
            XCTAssertEqual(status.clientErrorCode, 3)
        }
    }

    // MARK: The relying party cancels

    func testACancelledTokenIsNotRedeemedAndTheStatusSaysCancelled() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registeredAlice(loopback)
            let (token, sessionId) = try await Self.dispatchedLogin(loopback)
            let cancelled = try await Self.cancel(loopback, sessionId)
            XCTAssertEqual(cancelled.status, "cancelled")
            let redeemed = try await Self.redeem(loopback, token)
            XCTAssertEqual(redeemed.statusCode, 1408)
            XCTAssertNil(redeemed.uafRequest)
            let after = try await Self.status(loopback, sessionId)
            XCTAssertEqual(after.status, "cancelled", "the late redeem does not rewrite the outcome")
        }
    }

    func testACancelAfterTheRedeemRefusesTheDevicesAnswer() async throws {
        try await InProcessServer.with { loopback in
            let (response, sessionId) = try await Self.answeredLogin(loopback)
            let cancelled = try await Self.cancel(loopback, sessionId)
            XCTAssertEqual(cancelled.status, "cancelled")
            let answer = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(answer.statusCode, 1491)
            XCTAssertNil(answer.additionalTokens, "no session for a cancelled login")
            let after = try await Self.status(loopback, sessionId)
            XCTAssertEqual(after.status, "cancelled")
        }
    }

    func testCancellingAnOperationThatEndedChangesNothing() async throws {
        try await InProcessServer.with { loopback in
            let (response, sessionId) = try await Self.answeredLogin(loopback)
            let answer = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(answer.statusCode, 1200)
            let cancelled = try await Self.cancel(loopback, sessionId)
            XCTAssertEqual(cancelled.status, "succeeded")
            let unknown = try await Self.cancel(loopback, "no-such-session")
            XCTAssertEqual(unknown.status, "unknown")
        }
    }

    func testAnAuthCloudApprovalCanBeCancelledWithTheAccessKey() async throws {
        try await InProcessServer.with { loopback in
            let (key, statusToken) = try await Self.authCloudApproval(loopback)
            let body = try JSONEncoder().encode(["statusToken": statusToken])
            let anonymous = try await loopback.exchange(.POST, "/api/v1/status/cancel", body: body, contentType: "application/json")
            XCTAssertEqual(anonymous.status, 401)
            let cancelled = try await loopback.exchange(
                .POST, "/api/v1/status/cancel", body: body, contentType: "application/json",
                headers: [("Authorization", "Bearer \(key)")])
            XCTAssertEqual(cancelled.status, 200)
            XCTAssertEqual(try JSONDecoder().decode([String: JSONValue].self, from: cancelled.body)["status"]?.string, "cancelled")
            let polled = try await loopback.exchange(.POST, "/api/v1/status", body: body, contentType: "application/json")
            XCTAssertEqual(try JSONDecoder().decode([String: JSONValue].self, from: polled.body)["status"]?.string, "cancelled")
        }
    }

    func testTheFrontEndOfAnAuthCloudApprovalCannotCancelItWithTheSessionIdInItsStatusToken() async throws {
        try await InProcessServer.with { loopback in
            let (_, statusToken) = try await Self.authCloudApproval(loopback)
            // The front end reads the session id out of its status token (a JWT it can decode) ...
            let payload = try XCTUnwrap(Base64URL.decodeBytes(String(statusToken.split(separator: ".")[1])))
            let sessionId = try XCTUnwrap(try JSONDecoder().decode([String: JSONValue].self, from: Data(payload))["sub"]?.string)
            // ... and tries the nevisFIDO cancel, which needs no credential but the session id.
            let refused = try await loopback.exchange(
                .POST, "/nevisfido/status/cancel", body: try JSONEncoder().encode(["sessionId": sessionId]),
                contentType: "application/json")
            XCTAssertEqual(refused.status, 403, String(decoding: refused.body, as: UTF8.self))
            let polled = try await loopback.exchange(
                .POST, "/api/v1/status", body: try JSONEncoder().encode(["statusToken": statusToken]),
                contentType: "application/json")
            XCTAssertEqual(try JSONDecoder().decode([String: JSONValue].self, from: polled.body)["status"]?.string, "pending")
            // A nevisFIDO dispatch keeps its cancel for whoever holds its session id.
            let (_, dispatched) = try await Self.dispatchedLogin(loopback)
            let cancelled = try await Self.cancel(loopback, dispatched)
            XCTAssertEqual(cancelled.status, "cancelled")
        }
    }
}
