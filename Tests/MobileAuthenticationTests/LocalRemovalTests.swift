import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// Removing registrations from the device applies to the state as it is when the removal commits, not to the
/// snapshot the removal started from.
final class LocalRemovalTests: XCTestCase {
    struct NoServer: ClientTransport {
        func send(_ request: HTTPRequest) async throws(TransportFailure) -> HTTPExchange { throw .network(SDKMessage("no server in this test")) }
        func shutdown() async {}
    }

    func testARemovalKeepsACounterAnotherCommitAdvancedMeanwhile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-removal-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let platform = SimulatedPlatform(storageDirectory: directory)
        let state = try await LocalState.open(platform: platform)
        let server = Server(baseUrl: URL(string: "https://login.example")!)
        func registration(_ username: String, _ keyID: String) -> LocalRegistration {
            LocalRegistration(
                username: username, server: server, aaid: "F1D0#1001", keyID: keyID, keyAlias: "key-\(keyID)", signCounter: 1,
                signatureAlgorithm: nil, options: nil, createdAt: Date())
        }
        let alice = registration("alice", "a")
        let bob = registration("bob", "b")
        try await state.commit(StateChanges()) { $0.registrations = [alice, bob] }
        let configuration = Configuration(baseUrl: server.baseUrl)
        let core = ClientCore(configuration: configuration, platform: platform, transport: NoServer(), state: state, snapshot: await state.snapshot)
        // Bob's login commits a counter the client's synchronous mirror has not seen yet, as while it is committing.
        try await state.commit(StateChanges()) { data in data.registrations[1].signCounter = 7 }

        try await LocalRemoval(core: core).remove([alice])

        let after = await state.snapshot
        XCTAssertEqual(after.registrations.map(\.keyID), ["b"])
        XCTAssertEqual(after.registrations.first?.signCounter, 7, "the removal wrote back Bob's counter from before his login")
    }
}
