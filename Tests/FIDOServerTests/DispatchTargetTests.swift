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

/// Dispatch targets: creation, listing, device-signed modification and deletion, each refusal one changed input.
final class DispatchTargetTests: DispatchTestCase {
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

    func testATargetsDeviceIdFollowsTheRegistrationsDeviceIdRule() async throws {
        try await InProcessServer.with { loopback in
            // The device id a target names is linked onto a Nevis SDK's keys: held to the rule the extension is.
            for (index, bad) in ["", "phone\u{1B}[2J", "phone\nforged line", String(repeating: "d", count: 129)].enumerated() {
                let status = try await self.createTarget(loopback, name: "phone \(index)", deviceId: bad).status
                XCTAssertEqual(status, 400, bad.debugDescription)
            }
            let accepted = try await self.createTarget(loopback, deviceId: String(repeating: "d", count: 128)).status
            XCTAssertEqual(accepted, 201)
        }
    }

    func testListingTargetsIsForTheUserOnlyAnd404WhenThereAreNone() async throws {
        try await InProcessServer.with { loopback in
            let value17 = try await loopback.exchange(
                .GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: try await loopback.bearer("alice")
            ).status
            XCTAssertEqual(value17, 404)
            _ = try await self.targetID(loopback)
            let listed = try await loopback.exchange(
                .GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(listed.status, 200)
            XCTAssertTrue(String(decoding: listed.body, as: UTF8.self).contains("\"name\":\"phone\""))
            let value18 = try await loopback.exchange(
                .GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: try await loopback.bearer("mallory")
            ).status
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
            let value26 = try await loopback.exchange(
                .DELETE, "/nevisfido/token/dispatch/targets/\(id)", body: nil, headers: try await loopback.bearer("mallory")
            ).status
            XCTAssertEqual(value26, 404)
            let value27 = try await loopback.exchange(
                .DELETE, "/nevisfido/token/dispatch/targets/\(id)", body: nil, headers: try await loopback.bearer("alice")
            ).status
            XCTAssertEqual(value27, 204)
            let value28 = try await loopback.server.stores.dispatchTargets.target(id: id)
            XCTAssertNil(value28)
        }
    }
}
