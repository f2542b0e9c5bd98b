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

/// The Device Service: what a device may read and change of its own, signed with its key, and nothing else.
final class DeviceServiceTests: DispatchTestCase {
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
            let value = try await self.deviceCall(loopback, signature: try self.signature(id, at: loopback.clock.now, key: P256.Signing.PrivateKey()))
                .status
            XCTAssertEqual(value, 401)
        }
    }

    func testAnotherDevicesValidSignatureDoesNotReadThisDevice() async throws {
        try await InProcessServer.with { loopback in
            _ = try await self.targetID(loopback)
            let otherKey = P256.Signing.PrivateKey()
            let other = try await self.targetID(
                loopback, username: "mallory", signatureKey: JWK(publicKey: otherKey.publicKey).json, deviceId: "device-2")
            let value = try await self.deviceCall(
                loopback, device: "device-1", signature: try self.signature(other, at: loopback.clock.now, key: otherKey)
            ).status
            XCTAssertEqual(value, 401)
        }
    }

    func testADeviceSignedPatchRenamesEveryTargetOfTheDevice() async throws {
        try await InProcessServer.with { loopback in
            let alice = try await self.targetID(loopback)
            let bob = try await self.targetID(loopback, username: "bob")
            let change = DeviceServiceWire.Modification(
                claims: DeviceSignature.Claims(
                    dispatchTargetId: alice, now: loopback.clock.now, method: "PATCH",
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
            let redeemed = try self.token(
                try await self.dispatch(loopback, .authentication, username: "alice", targetID: id, headers: try await loopback.bearer("alice")))
            _ = try await self.redeem(loopback, redeemed, path: "authentication")
            _ = try await self.dispatch(loopback, .authentication, username: "alice", targetID: id, headers: try await loopback.bearer("alice"))
            loopback.clock.advance(200)
            let pending = try self.token(
                try await self.dispatch(loopback, .authentication, username: "alice", targetID: id, headers: try await loopback.bearer("alice")))
            loopback.clock.advance(200)  // the second dispatch is now past its 300 s
            let answer = try await self.deviceCall(
                loopback, .GET, DeviceServiceWire.operationsComponent,
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
            _ = try self.token(
                try await self.dispatch(
                    loopback, .authentication, username: "alice", targetID: id,
                    headers: try await loopback.bearer("alice"), transaction: text))
            loopback.clock.advance(1)
            _ = try self.token(
                try await self.dispatch(loopback, .deregistration, username: "alice", targetID: id, headers: try await loopback.bearer("alice")))
            let answer = try await self.deviceCall(
                loopback, .GET, DeviceServiceWire.operationsComponent,
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
            OperationHeader(
                op: .registration, exts: values.map { Extension(id: DeviceServiceWire.deviceIDExtension, data: $0, failIfUnknown: false) })
        }
        XCTAssertNil(try RegistrationService.deviceID(OperationHeader(op: .registration)))
        XCTAssertEqual(try RegistrationService.deviceID(header(["device-1"])), "device-1")
        XCTAssertThrowsError(try RegistrationService.deviceID(header([""])))
        XCTAssertThrowsError(try RegistrationService.deviceID(header([String(repeating: "d", count: 129)])))
        XCTAssertThrowsError(try RegistrationService.deviceID(header(["dev\nice"])))
        XCTAssertThrowsError(try RegistrationService.deviceID(header(["a", "b"])))
    }
}
