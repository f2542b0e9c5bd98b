import Crypto
import FIDOServerTesting
import Foundation
import JOSE
import NIOHTTP1
import NevisProtocol
import UAF
import WireJSON
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// A device signature acts for its own device only, and for the one request it names: a captured `Device-Signature`
/// reaches no other endpoint, body or device; dispatching to a device needs a credential for its user, a few times
/// a minute at most.
final class HostileClientDeviceTests: XCTestCase {
    /// Alice's two phones: each has its own key pair and a dispatch target with its device id.
    struct Phone {
        let deviceId: String
        let key = P256.Signing.PrivateKey()
        var target = ""
    }

    static func json(_ value: some Encodable) throws -> Data { try JSONEncoder().encode(value) }

    /// Creates the phone's target for `username` (with a push token and an encryption key) and a registration made
    /// on it, as the relying party's backend would.
    static func enrol(_ phone: inout Phone, _ loopback: InProcessServer, username: String = "alice") async throws {
        let body = DispatchTargetWire.Creation(
            username: username, name: "phone \(phone.deviceId)", deviceId: phone.deviceId, dispatcher: nil,
            target: "fcm-\(phone.deviceId)", signatureKey: JWK(publicKey: phone.key.publicKey).json,
            encryptionKey: JWK(encryptionKey: P256.KeyAgreement.PrivateKey().publicKey).json)
        let created = try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/targets", body: try json(body), contentType: "application/json",
            headers: try await loopback.bearer(username))
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        phone.target = try JSONDecoder().decode(DispatchTargetWire.Created.self, from: created.body).id
        try await loopback.server.stores.registrations.insert([
            RegistrationRecord(
                username: username, aaid: "F1D0#1001", keyID: "key-\(phone.deviceId)", publicKey: [4, 1, 2, 3], publicKeyEncoding: .eccX962DER,
                signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
                attestationType: .basicSurrogate, createdAt: loopback.clock.now, deviceId: phone.deviceId)
        ])
    }

    /// A `Device-Signature` of `phone` for `claims` (built by the caller, so a test can bind it to another request).
    static func signature(_ phone: Phone, _ claims: DeviceSignature.Claims) throws -> String {
        try DeviceSignature.sign(claims, dispatchTargetId: phone.target, key: phone.key)
    }

    /// Sends `method path` with `body`, signed by `phone` for exactly that request unless `signedFor` names another.
    static func signed(
        _ loopback: InProcessServer, _ phone: Phone, _ method: HTTPMethod, _ path: String, body: Data? = nil,
        signedFor: (method: String, path: String, body: Data?)? = nil
    ) async throws -> TestAnswer {
        let named = signedFor ?? (method.rawValue, path, body)
        let claims = DeviceSignature.Claims(
            dispatchTargetId: phone.target, now: loopback.clock.now, method: named.method,
            path: named.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? named.path,
            body: Array(named.body ?? Data()))
        return try await loopback.exchange(
            method, path, body: body, contentType: "application/json",
            headers: [(DeviceSignature.headerName, try signature(phone, claims))])
    }

    static func deregistrationBody(keyIDs: [String]? = nil) throws -> Data {
        struct Context: Encodable {
            var username: String
            var keyIDs: [String]?
        }
        return try json(GetUAFRequest(op: .deregistration, context: try UAFMessageCodec.encodeObject(Context(username: "alice", keyIDs: keyIDs))))
    }

    static let deregistrationPath = "/nevisfido/uaf/1.1/request/deregistration"
    static func credentialsPath(_ phone: Phone) -> String {
        DeviceServiceWire.basePath + DeviceServiceWire.credentialsComponent + "/" + phone.deviceId
    }

    static func withPhones(_ body: (InProcessServer, Phone, Phone) async throws -> Void) async throws {
        try await InProcessServer.with { loopback in
            var first = Phone(deviceId: "device-1")
            var second = Phone(deviceId: "device-2")
            try await enrol(&first, loopback)
            try await enrol(&second, loopback)
            try await body(loopback, first, second)
        }
    }

    func keys(_ loopback: InProcessServer) async throws -> [String] {
        try await loopback.server.stores.registrations.registrations(username: "alice").map(\.keyID).sorted()
    }

    // MARK: The signature names its request

    func testASignatureForOneEndpointIsRefusedOnAnother() async throws {
        try await Self.withPhones { loopback, phone, _ in
            let read = (method: "GET", path: Self.credentialsPath(phone), body: Data?.none)
            let delete = try await Self.signed(loopback, phone, .DELETE, Self.credentialsPath(phone), signedFor: read)
            XCTAssertEqual(delete.status, 401)
            let deregister = try await Self.signed(
                loopback, phone, .POST, Self.deregistrationPath, body: try Self.deregistrationBody(), signedFor: read)
            XCTAssertEqual(deregister.status, 401)
            let remaining = try await self.keys(loopback)
            XCTAssertEqual(remaining, ["key-device-1", "key-device-2"])
        }
    }

    func testASignatureForOneBodyIsRefusedWithAnother() async throws {
        try await Self.withPhones { loopback, phone, _ in
            let one = (method: "POST", path: Self.deregistrationPath, body: Optional(try Self.deregistrationBody(keyIDs: ["key-elsewhere"])))
            let all = try await Self.signed(loopback, phone, .POST, Self.deregistrationPath, body: try Self.deregistrationBody(), signedFor: one)
            XCTAssertEqual(all.status, 401)
            let remaining = try await self.keys(loopback)
            XCTAssertEqual(remaining, ["key-device-1", "key-device-2"])
        }
    }

    func testASignatureThatNamesNoRequestIsRefused() async throws {
        try await Self.withPhones { loopback, phone, _ in
            let unbound = DeviceSignature.Claims(
                dispatchTargetId: phone.target, requestId: UUID().uuidString,
                creationTimeInEpochMillis: loopback.clock.now.epochMillis)
            let answer = try await loopback.exchange(
                .GET, Self.credentialsPath(phone), body: nil,
                headers: [(DeviceSignature.headerName, try Self.signature(phone, unbound))])
            XCTAssertEqual(answer.status, 401)
        }
    }

    func testASignatureForThePathTheDeviceUsedIsAcceptedUnderTheAppAlias() async throws {
        try await Self.withPhones { loopback, phone, _ in
            let alias = "/_app/devices/credentials/" + phone.deviceId
            let answer = try await Self.signed(loopback, phone, .GET, alias)
            XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
            let unaliased = try await Self.signed(loopback, phone, .GET, alias, signedFor: ("GET", Self.credentialsPath(phone), nil))
            XCTAssertEqual(unaliased.status, 401, "the signature names the path the device sent")
        }
    }

    // MARK: The signature acts for its own device

    func testADeviceSignatureListsOnlyItsOwnDevicesTargets() async throws {
        try await Self.withPhones { loopback, phone, other in
            let answer = try await Self.signed(loopback, phone, .GET, "/nevisfido/token/dispatch/targets?username=alice")
            XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
            struct Listing: Decodable {
                struct Entry: Decodable { var id: String }
                var dispatchTargets: [Entry]
            }
            let ids = try JSONDecoder().decode(Listing.self, from: answer.body).dispatchTargets.map(\.id)
            XCTAssertEqual(ids, [phone.target])
            XCTAssertFalse(ids.contains(other.target))
        }
    }

    func testADeviceSignatureDeletesNoTargetOfAnotherDevice() async throws {
        try await Self.withPhones { loopback, phone, other in
            let answer = try await Self.signed(loopback, phone, .DELETE, "/nevisfido/token/dispatch/targets/\(other.target)")
            XCTAssertEqual(answer.status, 404)
            let kept = try await loopback.server.stores.dispatchTargets.target(id: other.target)
            XCTAssertNotNil(kept)
            let own = try await Self.signed(loopback, phone, .DELETE, "/nevisfido/token/dispatch/targets/\(phone.target)")
            XCTAssertEqual(own.status, 204)
        }
    }

    func testADeregistrationDispatchedByADeviceSignatureRemovesOnlyThatDevicesKeys() async throws {
        try await Self.withPhones { loopback, phone, _ in
            struct Body: Encodable {
                var dispatcher: String
                var getUafRequest: GetUAFRequest
            }
            let body = try Self.json(
                Body(
                    dispatcher: "link",
                    getUafRequest: GetUAFRequest(
                        op: .deregistration,
                        context: try UAFMessageCodec.encodeObject(["username": "alice"]))))
            let dispatched = try await Self.signed(loopback, phone, .POST, "/nevisfido/token/dispatch/deregistration", body: body)
            XCTAssertEqual(dispatched.status, 200, String(decoding: dispatched.body, as: UTF8.self))
            let token = try JSONDecoder().decode([String: JSONValue].self, from: dispatched.body)["token"]?.string
            let redeemed = try await loopback.exchange(
                .POST, "/nevisfido/token/redeem/deregistration", body: try Self.json(["token": try XCTUnwrap(token)]),
                contentType: "application/json")
            XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: redeemed.body).statusCode, 1200)
            let remaining = try await self.keys(loopback)
            XCTAssertEqual(remaining, ["key-device-2"], "the other phone keeps its key")
        }
    }

    // MARK: Dispatch to a device

    static func dispatch(_ loopback: InProcessServer, to target: String, headers: [(String, String)]) async throws -> TestAnswer {
        struct Body: Encodable {
            var dispatcher: String
            var dispatchTargetId: String
            var dispatchInformation: String
            var getUafRequest: GetUAFRequest
        }
        let body = Body(
            dispatcher: "link", dispatchTargetId: target, dispatchInformation: #"{"notification":{"title":"Your account is locked"}}"#,
            getUafRequest: GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": "alice"])))
        return try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/authentication", body: try json(body), contentType: "application/json",
            headers: headers)
    }

    static func result(_ answer: TestAnswer) throws -> String? {
        try JSONDecoder().decode([String: JSONValue].self, from: answer.body)["dispatchResult"]?.string
    }

    func testADispatchToATargetWithoutCredentialsIsRefused() async throws {
        try await Self.withPhones { loopback, phone, _ in
            let answer = try await Self.dispatch(loopback, to: phone.target, headers: [])
            XCTAssertEqual(answer.status, 401, String(decoding: answer.body, as: UTF8.self))
        }
    }

    func testADispatchToATargetWithAnotherUsersCredentialIsNotFound() async throws {
        try await Self.withPhones { loopback, phone, _ in
            let answer = try await Self.dispatch(loopback, to: phone.target, headers: try await loopback.bearer("mallory"))
            XCTAssertEqual(try Self.result(answer), "dispatchTargetNotFound")
            let alice = try await Self.dispatch(loopback, to: phone.target, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(try Self.result(alice), "dispatched")
        }
    }

    func testTheDispatchesToATargetWithinAMinuteAreLimited() async throws {
        try await Self.withPhones { loopback, phone, other in
            let alice = try await loopback.bearer("alice")
            for _ in 0..<ServerConfiguration.Limits().dispatchesPerTargetPerMinute {
                let answer = try await Self.dispatch(loopback, to: phone.target, headers: alice)
                XCTAssertEqual(try Self.result(answer), "dispatched")
            }
            let refused = try await Self.dispatch(loopback, to: phone.target, headers: alice)
            XCTAssertEqual(refused.status, 429)
            XCTAssertEqual(refused.headers.first(name: "Retry-After"), "60")
            let elsewhere = try await Self.dispatch(loopback, to: other.target, headers: alice)
            XCTAssertEqual(try Self.result(elsewhere), "dispatched", "another target has its own budget")
            loopback.clock.advance(61)
            let later = try await Self.dispatch(loopback, to: phone.target, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(try Self.result(later), "dispatched")
        }
    }
}
