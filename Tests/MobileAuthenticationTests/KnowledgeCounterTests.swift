import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthenticationCore

/// The PIN and password failure counters under parallel attempts: a brute-force limit must never under-count.
final class KnowledgeCounterTests: XCTestCase {
    var directory: URL!

    override func setUp() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-counter-\(UUID().uuidString)")
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// A PIN verifier for "123456" with a cheap scrypt cost, so the test is about counting, not hashing.
    func enrolledStore() async throws -> KnowledgeVerifierStore {
        let state = try await LocalState.open(platform: SimulatedPlatform(storageDirectory: directory))
        let store = KnowledgeVerifierStore(state: state, factor: .pin)
        let salt = Array(repeating: UInt8(7), count: 16)
        let record = KnowledgeRecord(
            salt: salt, hash: try KnowledgeVerifierStore.hash("123456", salt: salt, cost: 1024), cost: 1024,
            failures: 0, lastFailure: nil)
        var changes = StateChanges()
        try changes.set(record, store.entry("alice"))
        try await state.commit(changes) { _ in }
        return store
    }

    func testParallelWrongAttemptsAreEachCountedOrRefusedByTheCoolDown() async throws {
        let store = try await enrolledStore()
        let now = Date()
        let outcomes = try await withThrowingTaskGroup(of: KnowledgeVerifierStore.Outcome.self) { group in
            for _ in 0..<4 { group.addTask { try await store.verify(username: "alice", secret: "000000", now: now) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let record = try await store.record("alice")
        let failures = try XCTUnwrap(record).failures
        // In any order, the first three wrong PINs are counted (the third starts a 60 s cool-down) and the fourth
        // meets the cool-down, which refuses it without counting: as if they had come one after another.
        XCTAssertEqual(failures, 3, "\(outcomes)")
        XCTAssertEqual(
            outcomes.filter {
                if case .rejected = $0 { return true }
                return false
            }.count, 3, "\(outcomes)")
        XCTAssertEqual(
            outcomes.filter {
                if case .coolingDown = $0 { return true }
                return false
            }.count, 1, "\(outcomes)")
    }

    func testARightPinAfterParallelWrongOnesDoesNotEraseTheirCount() async throws {
        let store = try await enrolledStore()
        let now = Date()
        _ = try await withThrowingTaskGroup(of: KnowledgeVerifierStore.Outcome.self) { group in
            for _ in 0..<2 { group.addTask { try await store.verify(username: "alice", secret: "000000", now: now) } }
            return try await group.reduce(into: [KnowledgeVerifierStore.Outcome]()) { $0.append($1) }
        }
        let record = try await store.record("alice")
        let failures = try XCTUnwrap(record).failures
        XCTAssertEqual(failures, 2)
    }
}
