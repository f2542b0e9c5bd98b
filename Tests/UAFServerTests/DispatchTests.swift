import Crypto
import Foundation
import JOSE
import NIOHTTP1
import DevelopmentStandIns
import NevisProtocol
import Primitives
import UAF
import UAFServerTesting
import XCTest
@testable import UAFServer
@testable import UAFServerCore

/// The dispatch token, redeem and dispatch target endpoints over loopback TLS: each refusal, one changed input each.
final class DispatchTests: XCTestCase {
    let signingKey = P256.Signing.PrivateKey()
    let encryptionKey = P256.KeyAgreement.PrivateKey()

    private func json(_ value: some Encodable) throws -> Data { try JSONEncoder().encode(value) }

    private func createTarget(_ loopback: InProcessServer, username: String = "alice", name: String = "phone", dispatcher: String? = nil,
                              signatureKey: String? = nil, deviceId: String = "device-1", as caller: String? = nil) async throws -> TestAnswer {
        let body = DispatchTargetWire.Creation(username: username, name: name, deviceId: deviceId, dispatcher: dispatcher, target: "fcm-token",
                                               signatureKey: signatureKey ?? JWK(publicKey: signingKey.publicKey).json,
                                               encryptionKey: JWK(encryptionKey: encryptionKey.publicKey).json)
        return try await loopback.exchange(.POST, "/nevisfido/token/dispatch/targets", body: try json(body), contentType: "application/json",
                                           headers: try await loopback.bearer(caller ?? username))
    }

    private func targetID(_ loopback: InProcessServer, username: String = "alice", name: String = "phone", signatureKey: String? = nil,
                          deviceId: String = "device-1") async throws -> String {
        let answer = try await createTarget(loopback, username: username, name: name, signatureKey: signatureKey, deviceId: deviceId)
        XCTAssertEqual(answer.status, 201, String(decoding: answer.body, as: UTF8.self))
        return try JSONDecoder().decode(DispatchTargetWire.Created.self, from: answer.body).id
    }

    private func dispatch(_ loopback: InProcessServer, _ op: UAFOperation, username: String?, dispatcher: String = "link", targetID: String? = nil,
                          headers: [(String, String)] = [], policy: String? = nil, transaction: String? = nil) async throws -> TestAnswer {
        struct Body: Encodable { var dispatcher: String; var dispatchTargetId: String?; var getUafRequest: GetUAFRequest }
        struct Context: Encodable { var username: String; var policy: String?; var transaction: [Transaction]? }
        let transactions = transaction.map { [Transaction(contentType: "text/plain", content: Base64URL.encode(Array($0.utf8)))] }
        let context = try username.map { try UAFMessageCodec.encodeObject(Context(username: $0, policy: policy, transaction: transactions)) }
        let path = op == .registration ? "registration" : op == .authentication ? "authentication" : "deregistration"
        return try await loopback.exchange(.POST, "/nevisfido/token/dispatch/\(path)", body: try json(Body(dispatcher: dispatcher, dispatchTargetId: targetID,
                                           getUafRequest: GetUAFRequest(op: op, context: context))), contentType: "application/json", headers: headers)
    }

    private func result(_ answer: TestAnswer) throws -> String {
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        struct Result: Decodable { var dispatchResult: String }
        return try JSONDecoder().decode(Result.self, from: answer.body).dispatchResult
    }

    private func token(_ answer: TestAnswer) throws -> String {
        struct Token: Decodable { var token: String }
        return try JSONDecoder().decode(Token.self, from: answer.body).token
    }

    private func redeem(_ loopback: InProcessServer, _ token: String, path: String = "registration") async throws -> ReturnUAFRequest {
        let answer = try await loopback.exchange(.POST, "/nevisfido/token/redeem/\(path)", body: try json(["token": token]), contentType: "application/json")
        XCTAssertEqual(answer.status, 200)
        return try JSONDecoder().decode(ReturnUAFRequest.self, from: answer.body)
    }

    /// Claims for a target's PATCH, whose body is the JWS: they name the method and the target's path, no body hash.
    private func patchClaims(_ target: String, at date: Date, path: String? = nil) -> DeviceSignature.Claims {
        DeviceSignature.Claims(dispatchTargetId: target, now: date, method: "PATCH", path: path ?? "/nevisfido/token/dispatch/targets/\(target)", body: nil)
    }

    private func modify(_ loopback: InProcessServer, id: String, _ change: DispatchTargetWire.Modification, key: P256.Signing.PrivateKey? = nil) async throws -> Int {
        let jws = try DeviceSignature.sign(change, dispatchTargetId: change.dispatchTargetId, key: key ?? signingKey)
        return try await loopback.exchange(.PATCH, "/nevisfido/token/dispatch/targets/\(id)", body: Data(jws.utf8),
                                           contentType: DeviceSignature.joseContentType).status
    }

    // MARK: Dispatch tokens

    func testRegistrationDispatchNeedsCredentialsThatMayActForTheUser() async throws {
        try await InProcessServer.with { loopback in
            let value1 = try await self.dispatch(loopback, .registration, username: "alice").status
            XCTAssertEqual(value1, 401)
            let value2 = try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("mallory")).status
            XCTAssertEqual(value2, 403)
            let value3 = try self.result(try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("alice")))
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
            let value4 = try self.result(try await self.dispatch(loopback, .registration, username: "alice", dispatcher: "carrier-pigeon", headers: bearer))
            XCTAssertEqual(value4, "dispatcherNotFound")
            let value5 = try self.result(try await self.dispatch(loopback, .registration, username: "alice", dispatcher: "firebase-cloud-messaging", headers: bearer))
            XCTAssertEqual(value5, "dispatcherNotFound")
        }
    }

    func testAnotherUsersDispatchTargetIsNotFound() async throws {
        try await InProcessServer.with { loopback in
            let bobs = try await self.targetID(loopback, username: "bob")
            let answer = try await self.dispatch(loopback, .registration, username: "alice", targetID: bobs, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(try self.result(answer), "dispatchTargetNotFound")
        }
    }

    func testTheRelyingPartysAuthenticationDispatchForAUserWithoutAuthenticatorsIsUserNotFound() async throws {
        try await InProcessServer.with { loopback in
            let value6 = try self.result(try await self.dispatch(loopback, .authentication, username: "nobody", headers: try await loopback.bearer("nobody")))
            XCTAssertEqual(value6, "userNotFound")
        }
    }

    func testATokenIsRedeemedOnceAndOnlyAtItsOwnOperation() async throws {
        try await InProcessServer.with { loopback in
            let token = try self.token(try await self.dispatch(loopback, .registration, username: "alice", headers: try await loopback.bearer("alice")))
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
            let answer = try await self.dispatch(loopback, .registration, username: "alice", targetID: id, headers: try await loopback.bearer("alice"))
            struct Answer: Decodable { struct Info: Decodable { var response: String }; var token: String; var dispatcherInformation: Info }
            let decoded = try JSONDecoder().decode(Answer.self, from: answer.body)
            let envelope = try DispatchPayload.parse(base64URL: decoded.dispatcherInformation.response)
            XCTAssertEqual(try envelope.open { self.encryptionKey }.token, decoded.token)
            XCTAssertThrowsError(try envelope.open { P256.KeyAgreement.PrivateKey() })
        }
    }

    // MARK: Dispatch targets

    func testCreatingATargetValidatesItsNameKeysAndDispatcher() async throws {
        try await InProcessServer.with { loopback in
            let value11 = try await self.createTarget(loopback).status
            XCTAssertEqual(value11, 201)
            let value12 = try await self.createTarget(loopback).status
            XCTAssertEqual(value12, 422, "the name is taken")
            let value13 = try await self.createTarget(loopback, name: "tablet", dispatcher: "smoke-signal").status
            XCTAssertEqual(value13, 422)
            let value14 = try await self.createTarget(loopback, name: "tablet", signatureKey: #"{"kty":"RSA"}"#).status
            XCTAssertEqual(value14, 400)
            let value15 = try await self.createTarget(loopback, name: "", ).status
            XCTAssertEqual(value15, 400)
            let value16 = try await self.createTarget(loopback, name: "tablet", as: "mallory").status
            XCTAssertEqual(value16, 403)
        }
    }

    func testListingTargetsIsForTheUserOnlyAnd404WhenThereAreNone() async throws {
        try await InProcessServer.with { loopback in
            let value17 = try await loopback.exchange(.GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: try await loopback.bearer("alice")).status
            XCTAssertEqual(value17, 404)
            _ = try await self.targetID(loopback)
            let listed = try await loopback.exchange(.GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(listed.status, 200)
            XCTAssertTrue(String(decoding: listed.body, as: UTF8.self).contains("\"name\":\"phone\""))
            let value18 = try await loopback.exchange(.GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: try await loopback.bearer("mallory")).status
            XCTAssertEqual(value18, 403)
        }
    }

    func testADeviceSignedModificationChangesTheTargetOnce() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let change = DispatchTargetWire.Modification(claims: self.patchClaims(id, at: loopback.clock.now), name: "renamed")
            let value19 = try await self.modify(loopback, id: id, change)
            XCTAssertEqual(value19, 204)
            let value20 = try await loopback.server.stores.dispatchTargets.target(id: id)?.name
            XCTAssertEqual(value20, "renamed")
            let value21 = try await self.modify(loopback, id: id, change)
            XCTAssertEqual(value21, 401, "the same request id again is a replay")
        }
    }

    func testAModificationSignedByAnotherKeyIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let change = DispatchTargetWire.Modification(claims: self.patchClaims(id, at: loopback.clock.now), name: "x")
            let value22 = try await self.modify(loopback, id: id, change, key: P256.Signing.PrivateKey())
            XCTAssertEqual(value22, 401)
        }
    }

    func testAStaleModificationIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let change = DispatchTargetWire.Modification(claims: self.patchClaims(id, at: loopback.clock.now.addingTimeInterval(-301)), name: "x")
            let value23 = try await self.modify(loopback, id: id, change)
            XCTAssertEqual(value23, 401)
        }
    }

    func testAModificationNamingAnotherTargetThanItsPathIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let other = try await self.targetID(loopback, name: "tablet")
            let change = DispatchTargetWire.Modification(claims: self.patchClaims(other, at: loopback.clock.now), name: "x")
            let value24 = try await self.modify(loopback, id: id, change)
            XCTAssertEqual(value24, 401)
        }
    }

    func testRenamingToATakenNameIs422() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            _ = try await self.targetID(loopback, name: "tablet")
            let change = DispatchTargetWire.Modification(claims: self.patchClaims(id, at: loopback.clock.now), name: "tablet")
            let value25 = try await self.modify(loopback, id: id, change)
            XCTAssertEqual(value25, 422)
        }
    }

    func testOnlyTheUserDeletesTheirTarget() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let value26 = try await loopback.exchange(.DELETE, "/nevisfido/token/dispatch/targets/\(id)", body: nil, headers: try await loopback.bearer("mallory")).status
            XCTAssertEqual(value26, 404)
            let value27 = try await loopback.exchange(.DELETE, "/nevisfido/token/dispatch/targets/\(id)", body: nil, headers: try await loopback.bearer("alice")).status
            XCTAssertEqual(value27, 204)
            let value28 = try await loopback.server.stores.dispatchTargets.target(id: id)
            XCTAssertNil(value28)
        }
    }

    // MARK: Device Service

    private func deviceCall(_ loopback: InProcessServer, _ method: HTTPMethod = .GET, _ component: String = DeviceServiceWire.credentialsComponent,
                            device: String = "device-1", signature: String?) async throws -> TestAnswer {
        try await loopback.exchange(method, DeviceServiceWire.basePath + component + "/" + device, body: nil,
                                    headers: signature.map { [(DeviceSignature.headerName, $0)] } ?? [])
    }

    private func devicePath(_ component: String = DeviceServiceWire.credentialsComponent, device: String = "device-1") -> String {
        DeviceServiceWire.basePath + component + "/" + device
    }

    /// A `Device-Signature` naming the request it goes with (by default a GET of device-1's credentials).
    private func signature(_ target: String, at date: Date, key: P256.Signing.PrivateKey? = nil, _ method: HTTPMethod = .GET, _ path: String? = nil,
                           body: Data? = nil) throws -> String {
        let claims = DeviceSignature.Claims(dispatchTargetId: target, now: date, method: method.rawValue, path: path ?? devicePath(), body: Array(body ?? Data()))
        return try DeviceSignature.sign(claims, dispatchTargetId: target, key: key ?? signingKey)
    }

    /// A GetUAFRequest to the in-band request endpoint of `op`, authorized by a `Device-Signature` of `target`.
    private func deviceSignedRequest(_ loopback: InProcessServer, _ op: UAFOperation, username: String, target: String,
                                     key: P256.Signing.PrivateKey? = nil) async throws -> TestAnswer {
        let path = "/nevisfido/uaf/1.1/request/" + (op == .registration ? "registration" : op == .authentication ? "authentication" : "deregistration")
        let body = try json(GetUAFRequest(op: op, context: try UAFMessageCodec.encodeObject(["username": username])))
        return try await loopback.exchange(.POST, path, body: body,
                                           headers: [(DeviceSignature.headerName, try signature(target, at: loopback.clock.now, key: key, .POST, path, body: body))])
    }

    private func storeRegistration(_ loopback: InProcessServer, _ username: String, keyID: String, deviceId: String?) async throws {
        try await loopback.server.stores.registrations.insert([RegistrationRecord(
            username: username, aaid: "F1D0#1001", keyID: keyID, publicKey: [4, 1, 2, 3], publicKeyEncoding: .eccX962DER,
            signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
            attestationType: .basicSurrogate, createdAt: loopback.clock.now, deviceId: deviceId)])
    }

    func testTheDeviceServiceListsTheDevicesTargetsAndOnlyTheCredentialsItRegistered() async throws {
        try await InProcessServer.with { loopback in
            let alice = try await self.targetID(loopback)
            let bob = try await self.targetID(loopback, username: "bob")
            try await self.storeRegistration(loopback, "alice", keyID: "a-here", deviceId: "device-1")
            try await self.storeRegistration(loopback, "alice", keyID: "a-elsewhere", deviceId: "device-2")
            try await self.storeRegistration(loopback, "bob", keyID: "b-here", deviceId: "device-1")
            // A credential labelled with this device by a user who has no target on it is not shown.
            try await self.storeRegistration(loopback, "mallory", keyID: "m-label", deviceId: "device-1")
            let answer = try await self.deviceCall(loopback, signature: try self.signature(alice, at: loopback.clock.now))
            XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
            let listing = try JSONDecoder().decode(DeviceServiceWire.Credentials.self, from: answer.body)
            XCTAssertEqual(Set(listing.dispatchTargets.map(\.id)), [alice, bob])
            XCTAssertEqual(Set(listing.credentials.map(\.keyId)), ["a-here", "b-here"])
        }
    }

    func testTheDeviceServiceWithoutADeviceSignatureIs401() async throws {
        try await InProcessServer.with { loopback in
            _ = try await self.targetID(loopback)
            let value = try await self.deviceCall(loopback, signature: nil).status
            XCTAssertEqual(value, 401)
        }
    }

    func testAReplayedDeviceServiceRequestIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let jws = try self.signature(id, at: loopback.clock.now)
            let first = try await self.deviceCall(loopback, signature: jws).status
            XCTAssertEqual(first, 200)
            let again = try await self.deviceCall(loopback, signature: jws).status
            XCTAssertEqual(again, 401, "the same request id again is a replay")
        }
    }

    func testAStaleDeviceServiceRequestIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let value = try await self.deviceCall(loopback, signature: try self.signature(id, at: loopback.clock.now.addingTimeInterval(-301))).status
            XCTAssertEqual(value, 401)
            let future = try await self.deviceCall(loopback, signature: try self.signature(id, at: loopback.clock.now.addingTimeInterval(301))).status
            XCTAssertEqual(future, 401)
        }
    }

    func testADeviceServiceRequestSignedByAnotherKeyIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let value = try await self.deviceCall(loopback, signature: try self.signature(id, at: loopback.clock.now, key: P256.Signing.PrivateKey())).status
            XCTAssertEqual(value, 401)
        }
    }

    func testAnotherDevicesValidSignatureDoesNotReadThisDevice() async throws {
        try await InProcessServer.with { loopback in
            _ = try await self.targetID(loopback)
            let otherKey = P256.Signing.PrivateKey()
            let other = try await self.targetID(loopback, username: "mallory", signatureKey: JWK(publicKey: otherKey.publicKey).json, deviceId: "device-2")
            let value = try await self.deviceCall(loopback, device: "device-1", signature: try self.signature(other, at: loopback.clock.now, key: otherKey)).status
            XCTAssertEqual(value, 401)
        }
    }

    func testADeviceSignedPatchRenamesEveryTargetOfTheDevice() async throws {
        try await InProcessServer.with { loopback in
            let alice = try await self.targetID(loopback)
            let bob = try await self.targetID(loopback, username: "bob")
            let change = DeviceServiceWire.Modification(claims: DeviceSignature.Claims(dispatchTargetId: alice, now: loopback.clock.now, method: "PATCH",
                                                                                       path: self.devicePath(), body: []),
                                                        name: "new name", disablePushNotifications: true)
            let jws = try DeviceSignature.sign(change, dispatchTargetId: alice, key: self.signingKey)
            let value = try await self.deviceCall(loopback, .PATCH, signature: jws).status
            XCTAssertEqual(value, 204)
            for id in [alice, bob] {
                let target = try await loopback.server.stores.dispatchTargets.target(id: id)
                XCTAssertEqual(target?.name, "new name")
                XCTAssertNil(target?.target)
            }
        }
    }

    func testADeviceSignedDeleteRemovesTheDevicesTargetsAndCredentialsOnly() async throws {
        try await InProcessServer.with { loopback in
            let alice = try await self.targetID(loopback)
            try await self.storeRegistration(loopback, "alice", keyID: "a-here", deviceId: "device-1")
            try await self.storeRegistration(loopback, "alice", keyID: "a-elsewhere", deviceId: "device-2")
            let value = try await self.deviceCall(loopback, .DELETE, signature: try self.signature(alice, at: loopback.clock.now, .DELETE)).status
            XCTAssertEqual(value, 204)
            let remaining = try await loopback.server.stores.registrations.registrations(username: "alice").map(\.keyID)
            XCTAssertEqual(remaining, ["a-elsewhere"])
            let target = try await loopback.server.stores.dispatchTargets.target(id: alice)
            XCTAssertNil(target)
        }
    }

    func testPendingOperationsAreTheUnredeemedUnexpiredDispatchesToTheDevice() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            try await self.storeRegistration(loopback, "alice", keyID: "a-here", deviceId: "device-1")
            let redeemed = try self.token(try await self.dispatch(loopback, .authentication, username: "alice", targetID: id, headers: try await loopback.bearer("alice")))
            _ = try await self.redeem(loopback, redeemed, path: "authentication")
            _ = try await self.dispatch(loopback, .authentication, username: "alice", targetID: id, headers: try await loopback.bearer("alice"))
            loopback.clock.advance(200)
            let pending = try self.token(try await self.dispatch(loopback, .authentication, username: "alice", targetID: id, headers: try await loopback.bearer("alice")))
            loopback.clock.advance(200) // the second dispatch is now past its 300 s
            let answer = try await self.deviceCall(loopback, .GET, DeviceServiceWire.operationsComponent,
                                                   signature: try self.signature(id, at: loopback.clock.now, .GET, self.devicePath(DeviceServiceWire.operationsComponent)))
            XCTAssertEqual(answer.status, 200)
            let operations = try JSONDecoder().decode(DeviceServiceWire.PendingOperations.self, from: answer.body).operations
            XCTAssertEqual(operations.count, 1)
            let content = try DispatchPayload.parse(json: try XCTUnwrap(operations.first?.payload)).open { self.encryptionKey }
            XCTAssertEqual(content.token, pending)
            XCTAssertEqual(operations.first?.dispatcher, "link")
        }
    }

    func testPendingOperationsSayWhomAndWhatTheyAreFor() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            try await self.storeRegistration(loopback, "alice", keyID: "a-here", deviceId: "device-1")
            let text = "<html>Transfer <b>EUR 10.00</b><br>to Example Shop</html>"
            _ = try self.token(try await self.dispatch(loopback, .authentication, username: "alice", targetID: id,
                                                       headers: try await loopback.bearer("alice"), transaction: text))
            loopback.clock.advance(1)
            _ = try self.token(try await self.dispatch(loopback, .deregistration, username: "alice", targetID: id, headers: try await loopback.bearer("alice")))
            let answer = try await self.deviceCall(loopback, .GET, DeviceServiceWire.operationsComponent,
                                                   signature: try self.signature(id, at: loopback.clock.now, .GET, self.devicePath(DeviceServiceWire.operationsComponent)))
            XCTAssertEqual(answer.status, 200)
            let operations = try JSONDecoder().decode(DeviceServiceWire.PendingOperations.self, from: answer.body).operations
            XCTAssertEqual(operations.map(\.operation), ["Auth", "Dereg"])
            XCTAssertEqual(operations.map(\.username), ["alice", "alice"])
            XCTAssertEqual(operations.map(\.transactionText), [text, nil], "the text exactly as dispatched, markup and all")
        }
    }

    func testADeviceSignatureMayDeregisterThatDevicesCredentialsButNeverRegister() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            try await self.storeRegistration(loopback, "alice", keyID: "a-here", deviceId: "device-1")
            try await self.storeRegistration(loopback, "alice", keyID: "a-elsewhere", deviceId: "device-2")
            let registration = try await self.deviceSignedRequest(loopback, .registration, username: "alice", target: id)
            XCTAssertEqual(registration.status, 403, "a device in someone's hands must not enrol new credentials")
            let deregistration = try await self.deviceSignedRequest(loopback, .deregistration, username: "alice", target: id)
            XCTAssertEqual(deregistration.status, 200)
            let remaining = try await loopback.server.stores.registrations.registrations(username: "alice").map(\.keyID)
            XCTAssertEqual(remaining, ["a-elsewhere"], "only what this device registered")
        }
    }

    func testAnInvalidDeviceSignatureOnAProtectedEndpointIs401NotAFallThrough() async throws {
        try await InProcessServer.with { loopback in
            let id = try await self.targetID(loopback)
            let answer = try await self.deviceSignedRequest(loopback, .deregistration, username: "alice", target: id, key: P256.Signing.PrivateKey())
            XCTAssertEqual(answer.status, 401)
        }
    }

    func testTheRegistrationDeviceIDExtensionIsValidated() throws {
        func header(_ values: [String]) -> OperationHeader {
            OperationHeader(op: .registration, exts: values.map { Extension(id: DeviceServiceWire.deviceIDExtension, data: $0, failIfUnknown: false) })
        }
        XCTAssertNil(try RegistrationService.deviceID(OperationHeader(op: .registration)))
        XCTAssertEqual(try RegistrationService.deviceID(header(["device-1"])), "device-1")
        XCTAssertThrowsError(try RegistrationService.deviceID(header([""])))
        XCTAssertThrowsError(try RegistrationService.deviceID(header([String(repeating: "d", count: 129)])))
        XCTAssertThrowsError(try RegistrationService.deviceID(header(["dev\nice"])))
        XCTAssertThrowsError(try RegistrationService.deviceID(header(["a", "b"])))
    }

    // MARK: Firebase Cloud Messaging

    /// A server whose push goes to a local Firebase stand-in, with alice's target (push token `fcm-token`) and a
    /// registration so authentication can be dispatched.
    private func withFirebase(removeUnregistered: Bool = true, _ body: (InProcessServer, FirebaseStandIn, String) async throws -> Void) async throws {
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
            try await firebase.stop(); try? FileManager.default.removeItem(at: directory); throw error
        }
        try await firebase.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func push(_ loopback: InProcessServer, targetID: String?) async throws -> (result: String, token: String?, response: String?) {
        struct Body: Encodable { var dispatcher: String; var dispatchTargetId: String?; var dispatchInformation: String; var getUafRequest: GetUAFRequest }
        let information = #"{"notification":{"title":"Confirm payment","body":"Open the app to confirm"},"data":{"shop":"Example"}}"#
        let answer = try await loopback.exchange(.POST, "/nevisfido/token/dispatch/authentication", body: try self.json(Body(
            dispatcher: "firebase-cloud-messaging", dispatchTargetId: targetID, dispatchInformation: information,
            getUafRequest: GetUAFRequest(op: .authentication, context: try UAFMessageCodec.encodeObject(["username": "alice"])))),
            contentType: "application/json", headers: try await loopback.bearer("alice"))
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        struct Answer: Decodable { struct Information: Decodable { var response: String? }; var dispatchResult: String; var token: String?; var dispatcherInformation: Information? }
        let decoded = try JSONDecoder().decode(Answer.self, from: answer.body)
        return (decoded.dispatchResult, decoded.token, decoded.dispatcherInformation?.response)
    }

    func testAPushCarriesThePayloadEncryptedInTheDataMapAndTheAccessTokenIsCached() async throws {
        try await withFirebase { loopback, firebase, id in
            let first = try await self.push(loopback, targetID: id)
            XCTAssertEqual(first.result, "dispatched")
            XCTAssertEqual(first.response, "projects/\(firebase.projectID)/messages/1")
            let second = try await self.push(loopback, targetID: id)
            XCTAssertEqual(second.result, "dispatched")
            XCTAssertEqual(firebase.tokenExchanges, 1, "the access token is reused until it expires")
            let message = try XCTUnwrap(firebase.messages.first)
            XCTAssertEqual(message.registrationToken, "fcm-token")
            XCTAssertEqual(message.title, "Confirm payment")
            XCTAssertEqual(message.data["nma_data_content_type"], "application/jose", "push is always encrypted")
            // The data map, turned back into JSON, is a payload only this device's key opens.
            let json = String(decoding: try JSONEncoder().encode(message.data), as: UTF8.self)
            let content = try DispatchPayload.parse(json: json).open { self.encryptionKey }
            XCTAssertEqual(content.token, first.token)
            XCTAssertEqual(content.data, #"{"shop":"Example"}"#)
        }
    }

    func testAnUnregisteredPushTokenIsADispatchErrorAndIsRemovedFromTheTarget() async throws {
        try await withFirebase { loopback, firebase, id in
            firebase.markUnregistered("fcm-token")
            let answer = try await self.push(loopback, targetID: id)
            XCTAssertEqual(answer.result, "dispatchError")
            let target = try await loopback.server.stores.dispatchTargets.target(id: id)
            XCTAssertNil(target?.target)
        }
    }

    func testAnUnregisteredPushTokenIsKeptWhenRemovalIsOff() async throws {
        try await withFirebase(removeUnregistered: false) { loopback, firebase, id in
            firebase.markUnregistered("fcm-token")
            let answer = try await self.push(loopback, targetID: id)
            XCTAssertEqual(answer.result, "dispatchError")
            let target = try await loopback.server.stores.dispatchTargets.target(id: id)
            XCTAssertEqual(target?.target, "fcm-token")
        }
    }

    func testARefusedServiceAccountIsADispatchErrorAndTheOperationStaysPending() async throws {
        try await withFirebase { loopback, firebase, id in
            firebase.refuseAssertions()
            let answer = try await self.push(loopback, targetID: id)
            XCTAssertEqual(answer.result, "dispatchError")
            XCTAssertNotNil(answer.token, "the operation can still be fetched by the device")
            let pending = try await self.deviceCall(loopback, .GET, DeviceServiceWire.operationsComponent,
                                                   signature: try self.signature(id, at: loopback.clock.now, .GET, self.devicePath(DeviceServiceWire.operationsComponent)))
            let operations = try JSONDecoder().decode(DeviceServiceWire.PendingOperations.self, from: pending.body).operations
            XCTAssertEqual(operations.map(\.dispatcher), ["firebase-cloud-messaging"])
        }
    }

    func testPushWithoutATargetOrWithPushDisabledIsDispatchTargetNotFound() async throws {
        try await withFirebase { loopback, firebase, id in
            let untargeted = try await self.push(loopback, targetID: nil)
            XCTAssertEqual(untargeted.result, "dispatchTargetNotFound")
            _ = try await loopback.server.stores.dispatchTargets.update(id: id, name: "phone", target: nil, now: loopback.clock.now)
            let disabled = try await self.push(loopback, targetID: id)
            XCTAssertEqual(disabled.result, "dispatchTargetNotFound")
            XCTAssertEqual(firebase.messages.count, 0)
        }
    }

    func testFirebaseConfigurationIsCheckedAtStart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-fcm-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = InProcessServer.configuration()
        configuration.dispatch.firebase = .init(serviceAccountPath: directory.appendingPathComponent("missing.json").path)
        XCTAssertThrowsError(try configuration.validate())
        let notAnAccount = directory.appendingPathComponent("account.json")
        try Data(#"{"type":"authorized_user","project_id":"p","private_key":"x","client_email":"e"}"#.utf8).write(to: notAnAccount)
        configuration.dispatch.firebase = .init(serviceAccountPath: notAnAccount.path)
        XCTAssertThrowsError(try configuration.validate())
        configuration.dispatch.firebase = .init(serviceAccountPath: notAnAccount.path, endpointBaseURL: "http://fcm.example")
        XCTAssertThrowsError(try configuration.validate(), "push never goes over plain HTTP")
    }
}
