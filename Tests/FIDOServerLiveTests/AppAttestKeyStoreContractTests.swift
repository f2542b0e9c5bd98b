import AppAttestation
import Foundation
import XCTest

@testable import FIDOServerCore

/// The App Attest key store's contract, on SQLite and on PostgreSQL: a key reads back whole, attesting it again keeps
/// the counter it reached, and of many operations raising the counter to one value one wins.
extension StoreContractTests {
    /// A key with a fresh key ID: PostgreSQL's database outlives a run.
    func appKey(_ seed: UInt8, counter: UInt32 = 0) -> AttestedAppKey {
        AttestedAppKey(
            keyID: (0..<32).map { _ in UInt8.random(in: 0...255) }, publicKey: [0x04] + [UInt8](repeating: seed &+ 1, count: 64),
            appID: "ABCDE12345.ch.nevis.mauth.virtualdevice", environment: .development, counter: counter, receipt: [0x30, 0x80, seed])
    }

    func testAnAppAttestKeyRoundTripsEveryField() async throws {
        try await onEveryEngine { stores in
            let key = appKey(1)
            try await stores.appAttestKeys.attested(key, now: Date(epochMillis: 1_790_000_000_000))
            let read = try await stores.appAttestKeys.key(id: key.keyID)
            XCTAssertEqual(read, key)
            let unknown = try await stores.appAttestKeys.key(id: appKey(9).keyID)
            XCTAssertNil(unknown)
        }
    }

    func testAnAppAttestKeyAttestedAgainKeepsItsCounter() async throws {
        try await onEveryEngine { stores in
            let key = appKey(2)
            let now = Date(epochMillis: 1_790_000_000_000)
            try await stores.appAttestKeys.attested(key, now: now)
            let raised = try await stores.appAttestKeys.advance(keyID: key.keyID, to: 7, now: now)
            XCTAssertTrue(raised)
            try await stores.appAttestKeys.attested(key, now: now.addingTimeInterval(60))
            let read = try await stores.appAttestKeys.key(id: key.keyID)
            XCTAssertEqual(read?.counter, 7)
        }
    }

    func testAnAppAttestCounterRisesOnceUnderConcurrencyAndNeverFalls() async throws {
        try await onEveryEngine { stores in
            let key = appKey(3)
            let now = Date(epochMillis: 1_790_000_000_000)
            try await stores.appAttestKeys.attested(key, now: now)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { try await stores.appAttestKeys.advance(keyID: key.keyID, to: 4, now: now) } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            XCTAssertEqual(wins, 1)
            let lower = try await stores.appAttestKeys.advance(keyID: key.keyID, to: 2, now: now)
            XCTAssertFalse(lower)
            let read = try await stores.appAttestKeys.key(id: key.keyID)
            XCTAssertEqual(read?.counter, 4)
        }
    }
}
