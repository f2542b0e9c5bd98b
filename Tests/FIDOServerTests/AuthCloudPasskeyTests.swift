import FIDOServerTesting
import FIDOSimulation
import Foundation
import NIOHTTP1
import NevisProtocol
import Primitives
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The Auth Cloud API's `fido2` channel in process: a relying party's backend enrolls a passkey and asks for a
/// passkey approval with its access key, the software passkey authenticator answers as the page's browser would, and
/// the status token reads the ceremony. Each refusal changes one member of an accepted request.
final class AuthCloudPasskeyTests: XCTestCase {
    static let origin = PasskeyRouteTests.origin

    struct Enrolled: Decodable {
        struct Enrollment: Decodable {
            var transactionId: String
            var statusToken: String
            var fido2Options: FIDO2API.CreationOptions?
            var appLinkUri: String?
        }
        var userId: String
        var status: String
        var enrollment: Enrollment?
    }

    struct Approval: Decodable {
        var transactionId: String
        var statusToken: String
        var userId: String?
        var channel: String
        var dispatchResult: String?
        var fido2Options: FIDO2API.RequestOptions?
    }

    struct Status: Decodable {
        var transactionId: String
        var status: String
        var userId: String?
        var username: String?
        var token: String?
    }

    struct User: Decodable {
        struct Authenticator: Decodable {
            var authenticatorId: String
            var name: String?
            var authenticatorType: String
            var type: String?
            var state: String
            var lastUsedAt: String?
            var uaf: [AuthCloudService.Authenticator.UAFKey]?
            var fido2: FIDO2API.PasskeyDescription?
        }
        var userId: String
        var username: String
        var status: String
        var authenticators: [Authenticator]
    }

    /// An in-process server with passkeys (or without, `fido2: false`) and an access key.
    func with(fido2: Bool = true, _ body: (InProcessServer, _ key: String) async throws -> Void) async throws {
        var configuration = PasskeyRouteTests.configuration()
        if !fido2 { configuration.fido2 = nil }
        try await InProcessServer.with(configuration) { server in
            let key = try await server.server.stores.accessKeys.create(name: "backend", now: server.clock.now).key
            try await body(server, key)
        }
    }

    func call(_ server: InProcessServer, _ method: HTTPMethod, _ path: String, _ body: [String: Any]? = nil, key: String?) async throws -> TestAnswer
    {
        var headers = [("Accept", "application/json")]
        if let key { headers.append(("Authorization", "Bearer \(key)")) }
        return try await server.exchange(
            method, path, body: try body.map { try JSONSerialization.data(withJSONObject: $0) }, contentType: "application/json", headers: headers)
    }

    func text(_ answer: TestAnswer) -> String { String(decoding: answer.body, as: UTF8.self) }

    func enroll(_ server: InProcessServer, key: String, _ body: [String: Any]) async throws -> Enrolled {
        let answer = try await call(server, .POST, "/api/v1/users/enroll", body, key: key)
        XCTAssertEqual(answer.status, 200, text(answer))
        return try JSONDecoder().decode(Enrolled.self, from: answer.body)
    }

    func approve(_ server: InProcessServer, key: String, _ body: [String: Any]) async throws -> Approval {
        let answer = try await call(server, .POST, "/api/v1/approval", body, key: key)
        XCTAssertEqual(answer.status, 200, text(answer))
        return try JSONDecoder().decode(Approval.self, from: answer.body)
    }

    func status(_ server: InProcessServer, _ token: String) async throws -> Status {
        let answer = try await call(server, .POST, "/api/v1/status", ["statusToken": token], key: nil)
        XCTAssertEqual(answer.status, 200, text(answer))
        return try JSONDecoder().decode(Status.self, from: answer.body)
    }

    func user(_ server: InProcessServer, key: String, username: String) async throws -> User {
        let answer = try await call(server, .GET, "/api/v1/users?username=\(username)", key: key)
        XCTAssertEqual(answer.status, 200, text(answer))
        return try JSONDecoder().decode(User.self, from: answer.body)
    }

    /// The result token's claims, verified with the server's key as the relying party's backend would.
    func resultClaims(_ server: InProcessServer, _ token: String?) async throws -> AuthCloudService.ResultClaims {
        let token = try XCTUnwrap(token)
        let claims = await server.server.tokenIssuer.verify(token, as: AuthCloudService.ResultClaims.self, now: server.clock.now)
        return try XCTUnwrap(claims)
    }

    /// Enrolls `username` by the API and answers the options with `authenticator`, as the page would.
    @discardableResult
    func enrollPasskey(
        _ server: InProcessServer, key: String, _ username: String, _ authenticator: inout SoftwarePasskeyAuthenticator
    ) async throws
        -> Enrolled
    {
        let enrolled = try await enroll(server, key: key, ["username": username, "channel": "fido2"])
        let options = try XCTUnwrap(enrolled.enrollment?.fido2Options)
        let answer = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&authenticator, for: options))
        XCTAssertEqual(answer.status, 200, text(answer))
        return enrolled
    }

    func refusal(_ answer: TestAnswer) throws -> (status: Int, error: String) {
        struct Body: Decodable { var error: String }
        return (answer.status, try JSONDecoder().decode(Body.self, from: answer.body).error)
    }

    // MARK: Enrollment

    func testAPasskeyEnrollmentOnAServerWithoutPasskeysIsRefusedAndCreatesNobody() async throws {
        try await with(fido2: false) { server, key in
            let answer = try await call(server, .POST, "/api/v1/users/enroll", ["username": "alice", "channel": "fido2"], key: key)
            XCTAssertEqual(try refusal(answer).status, 409)
            XCTAssertEqual(try refusal(answer).error, "fido2_unavailable")
            let lookup = try await call(server, .GET, "/api/v1/users?username=alice", key: key)
            XCTAssertEqual(lookup.status, 404)
        }
    }

    func testAPasskeyEnrollmentTheOptionsRefuseCreatesNobody() async throws {
        try await with { server, key in
            let answer = try await call(
                server, .POST, "/api/v1/users/enroll", ["username": "alice", "channel": "fido2", "fido2Options": ["attestation": "notarized"]],
                key: key)
            XCTAssertEqual(answer.status, 400, text(answer))
            let lookup = try await call(server, .GET, "/api/v1/users?username=alice", key: key)
            XCTAssertEqual(lookup.status, 404, "a refused enrollment leaves no user behind")
        }
    }

    func testADisplayNameOfMoreThan64BytesIsRefused() async throws {
        try await with { server, key in
            let accepted = try await enroll(
                server, key: key, ["username": "alice", "channel": "fido2", "displayName": String(repeating: "é", count: 32)])
            XCTAssertEqual(accepted.enrollment?.fido2Options?.user.displayName, String(repeating: "é", count: 32))
            let answer = try await call(
                server, .POST, "/api/v1/users/enroll",
                ["username": "alice", "channel": "fido2", "displayName": String(repeating: "é", count: 32) + "a"],
                key: key)
            XCTAssertEqual(try refusal(answer).status, 400)
        }
    }

    func testADisplayNameWithAControlCharacterIsRefused() async throws {
        try await with { server, key in
            let answer = try await call(
                server, .POST, "/api/v1/users/enroll", ["username": "alice", "channel": "fido2", "displayName": "Alice\u{202E}"], key: key)
            XCTAssertEqual(answer.status, 400, text(answer))
        }
    }

    func testPasskeyMembersOnTheAppChannelAreRefused() async throws {
        try await with { server, key in
            for body: [String: Any] in [
                ["username": "alice", "displayName": "Alice"], ["username": "alice", "channel": "app", "fido2Options": [:] as [String: Any]],
            ] {
                let answer = try await call(server, .POST, "/api/v1/users/enroll", body, key: key)
                XCTAssertEqual(answer.status, 400, text(answer))
            }
        }
    }

    func testAnEnrollmentWithoutTheAccessKeyIsRefused() async throws {
        try await with { server, _ in
            let answer = try await call(server, .POST, "/api/v1/users/enroll", ["username": "alice", "channel": "fido2"], key: nil)
            XCTAssertEqual(answer.status, 401)
        }
    }

    func testAPasskeyEnrollmentSucceedsWithAResultTokenNamingTheNewPasskey() async throws {
        try await with { server, key in
            let enrolled = try await enroll(
                server, key: key,
                [
                    "username": "alice", "channel": "fido2", "displayName": "Alice Example",
                    "fido2Options": [
                        "authenticatorSelection": ["userVerification": "required", "residentKey": "required"], "hints": ["client-device"],
                    ],
                ])
            XCTAssertEqual(enrolled.status, "new")
            let enrollment = try XCTUnwrap(enrolled.enrollment)
            XCTAssertNil(enrollment.appLinkUri, "a passkey enrollment has no app link")
            let options = try XCTUnwrap(enrollment.fido2Options)
            XCTAssertEqual(options.fido2SessionId, enrollment.transactionId)
            XCTAssertEqual(options.rp.id, "bank.example")
            XCTAssertEqual(options.user.name, "alice")
            XCTAssertEqual(options.authenticatorSelection.residentKey, "required")
            XCTAssertEqual(options.hints, ["client-device"])
            let pending = try await status(server, enrollment.statusToken)
            XCTAssertEqual(pending.status, "pending")
            XCTAssertNil(pending.token)

            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let answer = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&phone, for: options))
            XCTAssertEqual(answer.status, 200, text(answer))

            let done = try await status(server, enrollment.statusToken)
            XCTAssertEqual(done.status, "succeeded")
            XCTAssertEqual(done.userId, enrolled.userId)
            let claims = try await resultClaims(server, done.token)
            XCTAssertEqual(claims.sub, enrolled.userId)
            XCTAssertEqual(claims.op, "enroll")
            XCTAssertEqual(claims.channel, "fido2")
            XCTAssertEqual(claims.keyid, Base64URL.encode(phone.credentials[0].id))
            XCTAssertNil(claims.aaid)
            XCTAssertEqual(claims.transaction_id, enrollment.transactionId)
        }
    }

    // MARK: The user's authenticators

    func testPasskeysAreListedAsFido2AuthenticatorsBesideTheApp() async throws {
        try await with { server, key in
            var synced = SoftwarePasskeyAuthenticator(origin: Self.origin)
            var bound = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false)
            try await enrollPasskey(server, key: key, "alice", &synced)
            try await enrollPasskey(server, key: key, "alice", &bound)
            _ = try await server.signInWithPasskey(&synced, username: "alice")
            let alice = try await user(server, key: key, username: "alice")
            XCTAssertEqual(alice.status, "active", "a user with passkeys only is active")
            XCTAssertEqual(alice.authenticators.map(\.authenticatorType), ["fido2", "fido2"])
            let first = try XCTUnwrap(alice.authenticators.first { $0.authenticatorId == Base64URL.encode(synced.credentials[0].id) })
            XCTAssertEqual(first.type, "synced")
            XCTAssertEqual(first.state, "active")
            XCTAssertNotNil(first.lastUsedAt)
            XCTAssertNil(first.uaf)
            XCTAssertEqual(first.fido2?.credentialId, first.authenticatorId)
            XCTAssertEqual(first.fido2?.backupEligible, true)
            let second = try XCTUnwrap(alice.authenticators.first { $0.authenticatorId == Base64URL.encode(bound.credentials[0].id) })
            XCTAssertEqual(second.type, "device-bound")
            XCTAssertNil(second.lastUsedAt, "never used")
        }
    }

    func testAUserWithPasskeysRegisteredInBandIsFoundByUsername() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "bob")
            let bob = try await user(server, key: key, username: "bob")
            XCTAssertEqual(bob.authenticators.map(\.authenticatorType), ["fido2"])
        }
    }

    // MARK: Approval

    func testAPasskeyApprovalSignsInAndItsResultTokenNamesThePasskey() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let enrolled = try await enrollPasskey(server, key: key, "alice", &phone)
            let approval = try await approve(
                server, key: key, ["username": "alice", "channel": "fido2", "fido2Options": ["userVerification": "required"]])
            XCTAssertEqual(approval.channel, "fido2")
            XCTAssertNil(approval.dispatchResult, "nothing is dispatched")
            let options = try XCTUnwrap(approval.fido2Options)
            XCTAssertEqual(options.allowCredentials.map(\.id), [Base64URL.encode(phone.credentials[0].id)])
            let pendingStatus = try await status(server, approval.statusToken).status
            XCTAssertEqual(pendingStatus, "pending")

            let answer = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: options))
            XCTAssertEqual(answer.status, 200, text(answer))
            let done = try await status(server, approval.statusToken)
            XCTAssertEqual(done.status, "succeeded")
            let claims = try await resultClaims(server, done.token)
            XCTAssertEqual(claims.sub, enrolled.userId)
            XCTAssertEqual(claims.op, "approval")
            XCTAssertEqual(claims.channel, "fido2")
            XCTAssertEqual(claims.keyid, Base64URL.encode(phone.credentials[0].id))
        }
    }

    func testAnApprovalWithoutAUserLearnsHerFromThePasskey() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let enrolled = try await enrollPasskey(server, key: key, "alice", &phone)
            let approval = try await approve(server, key: key, ["channel": "fido2"])
            let options = try XCTUnwrap(approval.fido2Options)
            XCTAssertEqual(options.allowCredentials, [], "any discoverable passkey: autofill")
            let pending = try await status(server, approval.statusToken)
            XCTAssertNil(pending.username)
            let answer = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: options))
            XCTAssertEqual(answer.status, 200, text(answer))
            let done = try await status(server, approval.statusToken)
            XCTAssertEqual(done.status, "succeeded")
            XCTAssertEqual(done.username, "alice")
            XCTAssertEqual(done.userId, enrolled.userId)
            let claims = try await resultClaims(server, done.token)
            XCTAssertEqual(claims.username, "alice")
        }
    }

    func testAnApprovalForOnePasskeyRefusesHerOtherPasskey() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            var laptop = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            try await enrollPasskey(server, key: key, "alice", &laptop)
            let phoneID = Base64URL.encode(phone.credentials[0].id)
            let approval = try await approve(server, key: key, ["username": "alice", "channel": "fido2", "authenticatorId": phoneID])
            var options = try XCTUnwrap(approval.fido2Options)
            XCTAssertEqual(options.allowCredentials.map(\.id), [phoneID])
            // Her laptop answers the same challenge: a passkey of hers, but not the one asked for.
            options.allowCredentials = []
            let answer = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&laptop, for: options))
            XCTAssertEqual(answer.status, 400, text(answer))
            let failedStatus = try await status(server, approval.statusToken).status
            XCTAssertEqual(failedStatus, "failed")
        }
    }

    func testAnAuthenticatorIdThatIsNotHerPasskeyIsRefused() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            var other = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            try await enrollPasskey(server, key: key, "bob", &other)
            let answer = try await call(
                server, .POST, "/api/v1/approval",
                ["username": "alice", "channel": "fido2", "authenticatorId": Base64URL.encode(other.credentials[0].id)], key: key)
            XCTAssertEqual(try refusal(answer).status, 404)
            XCTAssertEqual(try refusal(answer).error, "no_authenticator")
        }
    }

    func testAnApprovalForAUserWithoutPasskeysIsRefused() async throws {
        try await with { server, key in
            // Enrolled by the API, but the page never answered: she has no passkey.
            _ = try await enroll(server, key: key, ["username": "alice", "channel": "fido2"])
            let answer = try await call(server, .POST, "/api/v1/approval", ["username": "alice", "channel": "fido2"], key: key)
            XCTAssertEqual(try refusal(answer).status, 404)
            XCTAssertEqual(try refusal(answer).error, "no_authenticator")
        }
    }

    func testAnApprovalForAnUnknownUserIsRefused() async throws {
        try await with { server, key in
            let answer = try await call(server, .POST, "/api/v1/approval", ["username": "nobody", "channel": "fido2"], key: key)
            XCTAssertEqual(try refusal(answer).error, "user_not_found")
        }
    }

    func testWhatAPasskeyCannotDoIsRefusedOnTheFido2Channel() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            let refused: [[String: Any]] = [
                ["message": "Pay CHF 1"], ["prompt": true], ["notificationMessage": "Sign in"], ["authenticatorId": "*"],
                ["fido2Options": ["attestation": "direct"]], ["fido2Options": ["authenticatorSelection": ["residentKey": "required"]]],
                ["fido2Options": ["userVerification": "sometimes"]], ["fido2Options": ["hints": ["carrier-pigeon"]]],
            ]
            for change in refused {
                let body = ["username": "alice", "channel": "fido2"].merging(change) { $1 }
                let answer = try await call(server, .POST, "/api/v1/approval", body, key: key)
                XCTAssertEqual(answer.status, 400, "\(change): \(text(answer))")
            }
            let pushWithOptions = try await call(
                server, .POST, "/api/v1/approval", ["username": "alice", "channel": "push", "fido2Options": ["hints": ["hybrid"]]], key: key)
            XCTAssertEqual(pushWithOptions.status, 400, text(pushWithOptions))
        }
    }

    func testAPasskeyApprovalOnAServerWithoutPasskeysIsRefused() async throws {
        try await with(fido2: false) { server, key in
            let answer = try await call(server, .POST, "/api/v1/approval", ["channel": "fido2"], key: key)
            XCTAssertEqual(try refusal(answer).status, 409)
            XCTAssertEqual(try refusal(answer).error, "fido2_unavailable")
        }
    }

    // MARK: Status

    func testACancelledPasskeyApprovalCannotBeAnswered() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            let approval = try await approve(server, key: key, ["username": "alice", "channel": "fido2"])
            let cancelled = try await call(server, .POST, "/api/v1/status/cancel", ["statusToken": approval.statusToken], key: key)
            XCTAssertEqual(cancelled.status, 200, text(cancelled))
            XCTAssertEqual(try JSONDecoder().decode(Status.self, from: cancelled.body).status, "cancelled")
            let options = try XCTUnwrap(approval.fido2Options)
            let answer = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: options))
            XCTAssertEqual(answer.status, 400, text(answer))
            let cancelledStatus = try await status(server, approval.statusToken).status
            XCTAssertEqual(cancelledStatus, "cancelled")
            let ceremony = try await server.passkeyStatus(approval.transactionId)
            XCTAssertEqual(ceremony.status, .failed)
            XCTAssertEqual(ceremony.errorMessage, PasskeyCeremonyStore.cancelledOutcome)
        }
    }

    func testCancellingAnAnsweredPasskeyApprovalKeepsItsOutcome() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            let approval = try await approve(server, key: key, ["username": "alice", "channel": "fido2"])
            _ = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: try XCTUnwrap(approval.fido2Options)))
            let cancelled = try await call(server, .POST, "/api/v1/status/cancel", ["statusToken": approval.statusToken], key: key)
            XCTAssertEqual(try JSONDecoder().decode(Status.self, from: cancelled.body).status, "succeeded")
        }
    }

    func testAnUnansweredPasskeyApprovalFailsWhenItExpires() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            let approval = try await approve(server, key: key, ["username": "alice", "channel": "fido2"])
            server.clock.advance(TimeInterval(PasskeyRouteTests.configuration().fido2!.timeoutSeconds) + 1)
            let failedStatus = try await status(server, approval.statusToken).status
            XCTAssertEqual(failedStatus, "failed")
        }
    }

    func testARefusedPasskeyAnswerFailsTheStatus() async throws {
        try await with { server, key in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await enrollPasskey(server, key: key, "alice", &phone)
            let approval = try await approve(server, key: key, ["username": "alice", "channel": "fido2"])
            var credential = try InProcessServer.assertion(&phone, for: try XCTUnwrap(approval.fido2Options))
            credential.response.signature = Base64URL.encode([UInt8](repeating: 1, count: 64))
            let answer = try await server.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(answer.status, 400)
            let failed = try await status(server, approval.statusToken)
            XCTAssertEqual(failed.status, "failed")
            XCTAssertNil(failed.token)
        }
    }
}
