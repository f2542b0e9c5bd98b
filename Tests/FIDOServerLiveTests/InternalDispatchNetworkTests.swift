import Crypto
import FIDOServerTesting
import Foundation
import JOSE
import NevisProtocol
import Primitives
import UAF
import WireJSON
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// nevisAuth's calls in a nevisFIDO deployment, from inside the bank's network and without a credential: the target
/// listing and a push dispatch, in the exact shape it sends. Allowed only from `authorization.internalDispatchNetworks`
/// (the TCP peer; loopback here), and nothing else is: such a caller acts for no user.
final class InternalDispatchNetworkTests: XCTestCase {
    static func configuration(_ networks: [String]) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        configuration.authorization = .init(internalDispatchNetworks: networks)
        return configuration
    }

    /// Alice's phone's dispatch target, made by the relying party's backend; its id.
    static func enrolAlice(_ server: LoopbackServer) async throws -> String {
        let key = P256.Signing.PrivateKey()
        let body = DispatchTargetWire.Creation(
            username: "alice", name: "Alice's phone", deviceId: "alice-phone", dispatcher: nil, target: "fcm-alice",
            signatureKey: JWK(publicKey: key.publicKey).json,
            encryptionKey: JWK(encryptionKey: P256.KeyAgreement.PrivateKey().publicKey).json)
        let created = try await server.exchange(
            .POST, "/nevisfido/token/dispatch/targets", body: try JSONEncoder().encode(body),
            contentType: "application/json", headers: try await server.bearer("alice"))
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        return try JSONDecoder().decode(DispatchTargetWire.Created.self, from: created.body).id
    }

    /// nevisAuth's target listing: `GET /nevisfido/token/dispatch/targets?username=alice`, no credential.
    static func list(_ server: LoopbackServer) async throws -> TestAnswer {
        try await server.exchange(.GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, contentType: "application/json", headers: [])
    }

    /// nevisAuth's push: `POST /nevisfido/token/dispatch/authentication` naming the target, with the notification and a
    /// transaction, no credential.
    static func push(_ server: LoopbackServer, to target: String) async throws -> TestAnswer {
        struct Body: Encodable {
            var dispatcher: String
            var dispatchTargetId: String
            var dispatchInformation: String
            var getUafRequest: GetUAFRequest
        }
        struct Context: Encodable {
            var username: String
            var transaction: [Transaction]
        }
        let context = Context(
            username: "alice", transaction: [Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay CHF 10".utf8)))])
        let body = Body(
            dispatcher: "link", dispatchTargetId: target, dispatchInformation: #"{"notification":{"title":"Confirm your payment"}}"#,
            getUafRequest: GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(context)))
        return try await server.exchange(
            .POST, "/nevisfido/token/dispatch/authentication", body: try JSONEncoder().encode(body),
            contentType: "application/json", headers: [])
    }

    static func result(_ answer: TestAnswer) throws -> String? {
        try JSONDecoder().decode([String: JSONValue].self, from: answer.body)["dispatchResult"]?.string
    }

    func testNevisAuthsListingAndPushAre401WithoutTheSetting() async throws {
        try await LoopbackServer.with(Self.configuration([])) { server in
            let target = try await Self.enrolAlice(server)
            let listed = try await Self.list(server)
            XCTAssertEqual(listed.status, 401)
            let pushed = try await Self.push(server, to: target)
            XCTAssertEqual(pushed.status, 401)
        }
    }

    func testNevisAuthsListingAndPushFromAnInternalNetworkNeedNoCredential() async throws {
        try await LoopbackServer.with(Self.configuration(["127.0.0.0/8", "::1"])) { server in
            let target = try await Self.enrolAlice(server)
            let listed = try await Self.list(server)
            XCTAssertEqual(listed.status, 200, String(decoding: listed.body, as: UTF8.self))
            XCTAssertTrue(String(decoding: listed.body, as: UTF8.self).contains(target))
            let pushed = try await Self.push(server, to: target)
            XCTAssertEqual(pushed.status, 200, String(decoding: pushed.body, as: UTF8.self))
            XCTAssertEqual(try Self.result(pushed), "dispatched")
        }
    }

    func testAPeerOutsideTheInternalNetworksIsStillRefused() async throws {
        try await LoopbackServer.with(Self.configuration(["10.20.0.0/24"])) { server in
            let target = try await Self.enrolAlice(server)
            let listed = try await Self.list(server)
            XCTAssertEqual(listed.status, 401)
            let pushed = try await Self.push(server, to: target)
            XCTAssertEqual(pushed.status, 401)
        }
    }

    func testAnInternalCallerActsForNoUser() async throws {
        try await LoopbackServer.with(Self.configuration(["127.0.0.0/8", "::1"])) { server in
            let target = try await Self.enrolAlice(server)
            // No registration for anyone, in band or dispatched.
            let register = try await server.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration", body: try LoopbackServer.registrationBody("alice"),
                contentType: "application/json", headers: [])
            XCTAssertEqual(register.status, 403)
            struct Dispatch: Encodable {
                var dispatcher: String
                var getUafRequest: GetUAFRequest
            }
            let enrol = try await server.exchange(
                .POST, "/nevisfido/token/dispatch/registration",
                body: try JSONEncoder().encode(
                    Dispatch(
                        dispatcher: "link",
                        getUafRequest: GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": "alice"])))),
                contentType: "application/json", headers: [])
            XCTAssertEqual(enrol.status, 403)
            // No removing what a user holds, no operator's endpoints.
            let removed = try await server.exchange(
                .DELETE, "/nevisfido/token/dispatch/targets/\(target)", body: nil, contentType: "application/json", headers: [])
            XCTAssertEqual(removed.status, 404)
            let kept = try await server.server.stores.dispatchTargets.target(id: target)
            XCTAssertNotNil(kept)
            let admin = try await server.exchange(
                .GET, "/nevisfido/admin/user?username=alice", body: nil, contentType: "application/json", headers: [])
            XCTAssertEqual(admin.status, 403)
            // A credential it presents is checked as any other: a forged one is refused, not read as the network.
            let forged = try await server.exchange(
                .GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, contentType: "application/json",
                headers: [("Authorization", "Bearer forged")])
            XCTAssertEqual(forged.status, 401)
        }
    }

    func testANetworkThatHoldsATrustedProxyIsRefusedAtStart() throws {
        var configuration = Self.configuration(["10.0.0.0/8"])
        configuration.clientAddress.trustedProxies = ["10.1.2.3"]
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertTrue("\(error)".contains("holds the proxy 10.1.2.3"), "\(error)")
        }
        var proxied = Self.configuration(["10.1.2.3"])
        proxied.authorization.trustedProxy = .init(header: "X-User", addresses: ["10.1.2.3"])
        XCTAssertThrowsError(try proxied.validate())
    }

    func testAnInternalNetworkThatIsNotAnAddressIsRefusedAtStart() {
        XCTAssertThrowsError(try Self.configuration(["nevisauth.bank.internal"]).validate()) { error in
            XCTAssertTrue("\(error)".contains("authorization.internalDispatchNetworks: nevisauth.bank.internal is not an IP address"), "\(error)")
        }
    }
}
