import Crypto
import FIDOServerTesting
import Foundation
import JOSE
import NIOHTTP1
import NevisProtocol
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// What a bank with Nevis apps in the field turns on (`dispatch.acceptUnboundDeviceSignatures`): device signatures in
/// the exact shape a Nevis SDK sends (`dispatchTargetId`, `requestId`, `creationTimeInEpochMillis`, nothing that
/// names the request), accepted for the Device Service, the pending operations and a target's rename; everything
/// else a device signature must be stays as it was.
final class NevisCompatibilityTests: XCTestCase {
    typealias Phone = HostileClientDeviceTests.Phone

    /// A server with `acceptUnbound` as configured, and Alice's phone enrolled on it.
    func withPhone(acceptUnbound: Bool = true, _ body: (InProcessServer, Phone) async throws -> Void) async throws {
        var configuration = InProcessServer.configuration()
        configuration.dispatch.acceptUnboundDeviceSignatures = acceptUnbound
        try await InProcessServer.with(configuration) { server in
            var phone = Phone(deviceId: "nevis-device")
            try await HostileClientDeviceTests.enrol(&phone, server)
            try await body(server, phone)
        }
    }

    /// The payload a Nevis SDK signs: the three members, nothing else.
    func nevisClaims(_ phone: Phone, _ server: InProcessServer, requestId: String = UUID().uuidString) -> DeviceSignature.Claims {
        DeviceSignature.Claims(dispatchTargetId: phone.target, requestId: requestId, creationTimeInEpochMillis: server.clock.now.epochMillis)
    }

    func get(_ server: InProcessServer, _ path: String, signature: String) async throws -> Int {
        try await server.exchange(.GET, path, body: nil, contentType: "application/json", headers: [(DeviceSignature.headerName, signature)]).status
    }

    var credentials: String { DeviceServiceWire.basePath + DeviceServiceWire.credentialsComponent + "/nevis-device" }
    var operations: String { DeviceServiceWire.basePath + DeviceServiceWire.operationsComponent + "/nevis-device" }

    func rename(_ server: InProcessServer, _ phone: Phone, _ claims: DeviceSignature.Claims) async throws -> Int {
        let change = DispatchTargetWire.Modification(claims: claims, name: "Alice's new phone")
        let jws = try DeviceSignature.sign(change, dispatchTargetId: phone.target, key: phone.key)
        return try await server.exchange(
            .PATCH, "/nevisfido/token/dispatch/targets/\(phone.target)", body: Data(jws.utf8),
            contentType: DeviceSignature.joseContentType
        ).status
    }

    func testTheNevisSDKsSignaturesAreRefusedByDefault() async throws {
        try await withPhone(acceptUnbound: false) { server, phone in
            let read = try await get(server, credentials, signature: try HostileClientDeviceTests.signature(phone, nevisClaims(phone, server)))
            XCTAssertEqual(read, 401)
            let pending = try await get(server, operations, signature: try HostileClientDeviceTests.signature(phone, nevisClaims(phone, server)))
            XCTAssertEqual(pending, 401)
            let renamed = try await rename(server, phone, nevisClaims(phone, server))
            XCTAssertEqual(renamed, 401)
        }
    }

    func testTheNevisSDKsSignaturesAreAcceptedWhenTheOperatorAllowsThem() async throws {
        try await withPhone { server, phone in
            let read = try await get(server, credentials, signature: try HostileClientDeviceTests.signature(phone, nevisClaims(phone, server)))
            XCTAssertEqual(read, 200)
            let pending = try await get(server, operations, signature: try HostileClientDeviceTests.signature(phone, nevisClaims(phone, server)))
            XCTAssertEqual(pending, 200)
            let renamed = try await rename(server, phone, nevisClaims(phone, server))
            XCTAssertEqual(renamed, 204)
            let target = try await server.server.stores.dispatchTargets.target(id: phone.target)
            XCTAssertEqual(target?.name, "Alice's new phone")
        }
    }

    func testAnUnboundSignatureIsStillAcceptedOnce() async throws {
        try await withPhone { server, phone in
            let signature = try HostileClientDeviceTests.signature(phone, nevisClaims(phone, server, requestId: "nevis-once"))
            let first = try await get(server, credentials, signature: signature)
            XCTAssertEqual(first, 200)
            let replay = try await get(server, operations, signature: signature)
            XCTAssertEqual(replay, 401)
        }
    }

    func testAnUnboundSignatureIsStillHeldToItsClockSkew() async throws {
        try await withPhone { server, phone in
            var claims = nevisClaims(phone, server)
            claims.creationTimeInEpochMillis -= 301_000
            let stale = try await get(server, credentials, signature: try HostileClientDeviceTests.signature(phone, claims))
            XCTAssertEqual(stale, 401)
        }
    }

    func testABoundSignatureMustStillMatchItsRequest() async throws {
        try await withPhone { server, phone in
            let forOperations = DeviceSignature.Claims(
                dispatchTargetId: phone.target, now: server.clock.now, method: "GET", path: operations, body: [])
            let elsewhere = try await get(server, credentials, signature: try HostileClientDeviceTests.signature(phone, forOperations))
            XCTAssertEqual(elsewhere, 401)
        }
    }

    func testAPartlyBoundSignatureIsHeldToEveryMember() async throws {
        try await withPhone { server, phone in
            var claims = nevisClaims(phone, server)
            claims.htm = "GET"  // names the method, not the path: not the Nevis shape, so the path is required too
            let partial = try await get(server, credentials, signature: try HostileClientDeviceTests.signature(phone, claims))
            XCTAssertEqual(partial, 401)
        }
    }

    func testAnUnboundSignatureReachesOnlyItsOwnDevice() async throws {
        try await withPhone { server, phone in
            var other = Phone(deviceId: "other-device")
            try await HostileClientDeviceTests.enrol(&other, server, username: "bob")
            let signature = try HostileClientDeviceTests.signature(phone, nevisClaims(phone, server))
            let foreign = try await get(
                server, DeviceServiceWire.basePath + DeviceServiceWire.credentialsComponent + "/other-device", signature: signature)
            XCTAssertNotEqual(foreign, 200)
        }
    }
}
