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

/// Push through Firebase Cloud Messaging (a local stand-in): the payload, the access token, unregistered tokens.
final class FirebaseDispatchTests: DispatchTestCase {
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
            let pending = try await self.deviceCall(
                loopback, .GET, DeviceServiceWire.operationsComponent,
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
