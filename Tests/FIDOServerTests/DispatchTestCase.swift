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

/// What the dispatch suites share: the device's keys, and the calls to the dispatch, redeem, dispatch-target and
/// Device Service endpoints and the Firebase stand-in. Each suite below is one concept; this class has no tests.
class DispatchTestCase: XCTestCase {
    let signingKey = P256.Signing.PrivateKey()
    let encryptionKey = P256.KeyAgreement.PrivateKey()

    func json(_ value: some Encodable) throws -> Data { try JSONEncoder().encode(value) }

    func createTarget(
        _ loopback: InProcessServer, username: String = "alice", name: String = "phone", dispatcher: String? = nil,
        signatureKey: String? = nil, deviceId: String = "device-1", as caller: String? = nil
    ) async throws -> TestAnswer {
        let body = DispatchTargetWire.Creation(
            username: username, name: name, deviceId: deviceId, dispatcher: dispatcher, target: "fcm-token",
            signatureKey: signatureKey ?? JWK(publicKey: signingKey.publicKey).json,
            encryptionKey: JWK(encryptionKey: encryptionKey.publicKey).json)
        return try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/targets", body: try json(body), contentType: "application/json",
            headers: try await loopback.bearer(caller ?? username))
    }

    func targetID(
        _ loopback: InProcessServer, username: String = "alice", name: String = "phone", signatureKey: String? = nil,
        deviceId: String = "device-1"
    ) async throws -> String {
        let answer = try await createTarget(loopback, username: username, name: name, signatureKey: signatureKey, deviceId: deviceId)
        XCTAssertEqual(answer.status, 201, String(decoding: answer.body, as: UTF8.self))
        return try JSONDecoder().decode(DispatchTargetWire.Created.self, from: answer.body).id
    }

    func dispatch(
        _ loopback: InProcessServer, _ op: UAFOperation, username: String?, dispatcher: String = "link", targetID: String? = nil,
        headers: [(String, String)] = [], policy: String? = nil, transaction: String? = nil
    ) async throws -> TestAnswer {
        struct Body: Encodable {
            var dispatcher: String
            var dispatchTargetId: String?
            var getUafRequest: GetUAFRequest
        }
        struct Context: Encodable {
            var username: String
            var policy: String?
            var transaction: [Transaction]?
        }
        let transactions = transaction.map { [Transaction(contentType: "text/plain", content: Base64URL.encode(Array($0.utf8)))] }
        let context = try username.map { try UAFMessageCodec.encodeObject(Context(username: $0, policy: policy, transaction: transactions)) }
        let path = op == .registration ? "registration" : op == .authentication ? "authentication" : "deregistration"
        return try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/\(path)",
            body: try json(
                Body(
                    dispatcher: dispatcher, dispatchTargetId: targetID,
                    getUafRequest: GetUAFRequest(op: op, context: context))), contentType: "application/json", headers: headers)
    }

    func result(_ answer: TestAnswer) throws -> String {
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        struct Result: Decodable { var dispatchResult: String }
        return try JSONDecoder().decode(Result.self, from: answer.body).dispatchResult
    }

    func token(_ answer: TestAnswer) throws -> String {
        struct Token: Decodable { var token: String }
        return try JSONDecoder().decode(Token.self, from: answer.body).token
    }

    func redeem(_ loopback: InProcessServer, _ token: String, path: String = "registration") async throws -> ReturnUAFRequest {
        let answer = try await loopback.exchange(
            .POST, "/nevisfido/token/redeem/\(path)", body: try json(["token": token]), contentType: "application/json")
        XCTAssertEqual(answer.status, 200)
        return try JSONDecoder().decode(ReturnUAFRequest.self, from: answer.body)
    }

    /// Claims for a target's PATCH, whose body is the JWS: they name the method and the target's path, no body hash.
    func patchClaims(_ target: String, at date: Date, path: String? = nil) -> DeviceSignature.Claims {
        DeviceSignature.Claims(
            dispatchTargetId: target, now: date, method: "PATCH", path: path ?? "/nevisfido/token/dispatch/targets/\(target)", body: nil)
    }

    func modify(
        _ loopback: InProcessServer, id: String, _ change: DispatchTargetWire.Modification, key: P256.Signing.PrivateKey? = nil
    ) async throws -> Int {
        let jws = try DeviceSignature.sign(change, dispatchTargetId: change.dispatchTargetId, key: key ?? signingKey)
        return try await loopback.exchange(
            .PATCH, "/nevisfido/token/dispatch/targets/\(id)", body: Data(jws.utf8),
            contentType: DeviceSignature.joseContentType
        ).status
    }

    func deviceCall(
        _ loopback: InProcessServer, _ method: HTTPMethod = .GET, _ component: String = DeviceServiceWire.credentialsComponent,
        device: String = "device-1", signature: String?
    ) async throws -> TestAnswer {
        try await loopback.exchange(
            method, DeviceServiceWire.basePath + component + "/" + device, body: nil,
            headers: signature.map { [(DeviceSignature.headerName, $0)] } ?? [])
    }

    func devicePath(_ component: String = DeviceServiceWire.credentialsComponent, device: String = "device-1") -> String {
        DeviceServiceWire.basePath + component + "/" + device
    }

    /// A `Device-Signature` naming the request it goes with (by default a GET of device-1's credentials).
    func signature(
        _ target: String, at date: Date, key: P256.Signing.PrivateKey? = nil, _ method: HTTPMethod = .GET, _ path: String? = nil,
        body: Data? = nil
    ) throws -> String {
        let claims = DeviceSignature.Claims(
            dispatchTargetId: target, now: date, method: method.rawValue, path: path ?? devicePath(), body: Array(body ?? Data()))
        return try DeviceSignature.sign(claims, dispatchTargetId: target, key: key ?? signingKey)
    }

    /// A GetUAFRequest to the in-band request endpoint of `op`, authorized by a `Device-Signature` of `target`.
    func deviceSignedRequest(
        _ loopback: InProcessServer, _ op: UAFOperation, username: String, target: String,
        key: P256.Signing.PrivateKey? = nil
    ) async throws -> TestAnswer {
        let path =
            "/nevisfido/uaf/1.1/request/" + (op == .registration ? "registration" : op == .authentication ? "authentication" : "deregistration")
        let body = try json(GetUAFRequest(op: op, context: try UAFMessageCodec.encodeObject(["username": username])))
        return try await loopback.exchange(
            .POST, path, body: body,
            headers: [(DeviceSignature.headerName, try signature(target, at: loopback.clock.now, key: key, .POST, path, body: body))])
    }

    func storeRegistration(_ loopback: InProcessServer, _ username: String, keyID: String, deviceId: String?) async throws {
        try await loopback.server.stores.registrations.insert([
            RegistrationRecord(
                username: username, aaid: "F1D0#1001", keyID: keyID, publicKey: [4, 1, 2, 3], publicKeyEncoding: .eccX962DER,
                signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
                attestationType: .basicSurrogate, createdAt: loopback.clock.now, deviceId: deviceId)
        ])
    }

    /// A server whose push goes to a local Firebase stand-in, with alice's target (push token `fcm-token`) and a
    /// registration so authentication can be dispatched.
    func withFirebase(removeUnregistered: Bool = true, _ body: (InProcessServer, FirebaseStandIn, String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-fcm-\(UUID().uuidString)")
        let firebase = try await FirebaseStandIn.start(directory: directory)
        var configuration = InProcessServer.configuration()
        configuration.dispatch.firebase = firebase.configuration
        configuration.dispatch.firebase?.removeUnregisteredClients = removeUnregistered
        do {
            try await InProcessServer.with(configuration) { loopback in
                let id = try await self.targetID(loopback)
                try await self.storeRegistration(loopback, "alice", keyID: "a-here", deviceId: "device-1")
                try await body(loopback, firebase, id)
            }
        } catch {
            try await firebase.stop()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        try await firebase.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func push(_ loopback: InProcessServer, targetID: String?) async throws -> (result: String, token: String?, response: String?) {
        struct Body: Encodable {
            var dispatcher: String
            var dispatchTargetId: String?
            var dispatchInformation: String
            var getUafRequest: GetUAFRequest
        }
        let information = #"{"notification":{"title":"Confirm payment","body":"Open the app to confirm"},"data":{"shop":"Example"}}"#
        let answer = try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/authentication",
            body: try self.json(
                Body(
                    dispatcher: "firebase-cloud-messaging", dispatchTargetId: targetID, dispatchInformation: information,
                    getUafRequest: GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": "alice"])))),
            contentType: "application/json", headers: try await loopback.bearer("alice"))
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        struct Answer: Decodable {
            struct Information: Decodable { var response: String? }
            var dispatchResult: String
            var token: String?
            var dispatcherInformation: Information?
        }
        let decoded = try JSONDecoder().decode(Answer.self, from: answer.body)
        return (decoded.dispatchResult, decoded.token, decoded.dispatcherInformation?.response)
    }
}
