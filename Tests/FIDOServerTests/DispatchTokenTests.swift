import Crypto
import DevelopmentStandIns
import FIDOServerTesting
import Foundation
import JOSE
import NIOHTTP1
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Dispatch tokens and their redemption, over the in-process router: each refusal, one changed input each.
final class DispatchTokenTests: DispatchTestCase {
    func testRegistrationDispatchNeedsCredentialsThatMayActForTheUser() async throws {
        try await InProcessServer.with { loopback in
            let value1 = try await self.dispatch(loopback, .registration, username: "alice").status
            XCTAssertEqual(value1, 401)
            let value2 = try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("mallory")).status
            XCTAssertEqual(value2, 403)
            let value3 = try self.result(
                try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("alice")))
            XCTAssertEqual(value3, "dispatched")
        }
    }

    func testADispatchNamingAPolicyThatIsNotConfiguredIsRefusedAtOnce() async throws {
        var configuration = InProcessServer.configuration()
        configuration.policies = ["strong": .init(registration: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1002"])]]))]
        try await InProcessServer.with(configuration) { loopback in
            let bearer = try await loopback.bearer("alice")
            let refused = try await self.dispatch(loopback, .registration, username: "alice", headers: bearer, policy: "stronger")
            XCTAssertEqual(refused.status, 400, String(decoding: refused.body, as: UTF8.self))
            let dispatched = try await self.dispatch(loopback, .registration, username: "alice", headers: bearer, policy: "strong")
            let redeemed = try await self.redeem(loopback, try self.token(dispatched))
            let request = try UAFMessageCodec.decode(RegistrationRequest.self, from: try XCTUnwrap(redeemed.uafRequest))[0]
            XCTAssertEqual(request.policy.accepted, [[MatchCriteria(aaid: ["F1D0#1002"])]], "the redeemed request carries the named policy")
        }
    }

    func testAnUnknownDispatcherAndPushWithoutFirebaseAreDispatcherNotFound() async throws {
        try await InProcessServer.with { loopback in
            let bearer = try await loopback.bearer("alice")
            let value4 = try self.result(
                try await self.dispatch(loopback, .registration, username: "alice", dispatcher: "carrier-pigeon", headers: bearer))
            XCTAssertEqual(value4, "dispatcherNotFound")
            let value5 = try self.result(
                try await self.dispatch(loopback, .registration, username: "alice", dispatcher: "firebase-cloud-messaging", headers: bearer))
            XCTAssertEqual(value5, "dispatcherNotFound")
        }
    }

    func testAnotherUsersDispatchTargetIsNotFound() async throws {
        try await InProcessServer.with { loopback in
            let bobs = try await self.targetID(loopback, username: "bob")
            let answer = try await self.dispatch(
                loopback, .registration, username: "alice", targetID: bobs, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(try self.result(answer), "dispatchTargetNotFound")
        }
    }

    func testTheRelyingPartysAuthenticationDispatchForAUserWithoutAuthenticatorsIsUserNotFound() async throws {
        try await InProcessServer.with { loopback in
            let value6 = try self.result(
                try await self.dispatch(loopback, .authentication, username: "nobody", headers: try await loopback.bearer("nobody")))
            XCTAssertEqual(value6, "userNotFound")
        }
    }

    func testATokenIsRedeemedOnceAndOnlyAtItsOwnOperation() async throws {
        try await InProcessServer.with { loopback in
            let token = try self.token(
                try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("alice")))
            let value7 = try await self.redeem(loopback, token, path: "authentication").statusCode
            XCTAssertEqual(value7, 1401, "a registration token is not an authentication token")
            let first = try await self.redeem(loopback, token)
            XCTAssertEqual(first.statusCode, 1200)
            XCTAssertEqual(try UAFMessageCodec.decode(RegistrationRequest.self, from: try XCTUnwrap(first.uafRequest))[0].username, "alice")
            let value8 = try await self.redeem(loopback, token).statusCode
            XCTAssertEqual(value8, 1401, "already redeemed")
            let value9 = try await self.redeem(loopback, "never-issued").statusCode
            XCTAssertEqual(value9, 1401, "unknown answers like redeemed")
        }
    }

    func testAnExpiredTokenIs1408AndItsStatusFailedTimedOut() async throws {
        try await InProcessServer.with { loopback in
            let answer = try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("alice"))
            struct Session: Decodable { var sessionId: String }
            let session = try JSONDecoder().decode(Session.self, from: answer.body).sessionId
            loopback.clock.advance(301)
            let value10 = try await self.redeem(loopback, try self.token(answer)).statusCode
            XCTAssertEqual(value10, 1408)
            let record = try await loopback.server.stores.status.record(sessionId: session, now: loopback.clock.now)
            XCTAssertEqual(record?.status, .failed)
            XCTAssertEqual(record?.tokenInformation?.tokenResult, .tokenTimedOut)
        }
    }

    func testAnEncryptedPayloadNeedsTheTargetsKeyToRead() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let answer = try await self.dispatch(
                loopback, .registration, username: "alice", targetID: id, headers: try await loopback.bearer("alice"))
            struct Answer: Decodable {
                struct Info: Decodable { var response: String }
                var token: String
                var dispatcherInformation: Info
            }
            let decoded = try JSONDecoder().decode(Answer.self, from: answer.body)
            let envelope = try DispatchPayload.parse(base64URL: decoded.dispatcherInformation.response)
            XCTAssertEqual(try envelope.open { self.encryptionKey }.token, decoded.token)
            XCTAssertThrowsError(try envelope.open { P256.KeyAgreement.PrivateKey() })
        }
    }
}
