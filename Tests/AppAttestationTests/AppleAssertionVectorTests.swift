import AppAttestation
import Crypto
import Foundation
import XCTest

/// Apple's assertion steps (2–5) on real assertions, with the key their attestation stored.
final class AppleAssertionVectorTests: XCTestCase {
    func verify(
        _ vector: AppAttestVector, object: [UInt8]? = nil, clientDataHash: [UInt8]? = nil, key: AttestedAppKey? = nil, storedCounter: UInt32 = 0,
        verifier: AppleAppAttest? = nil
    ) async -> AppAttestError.Reason? {
        await refusal { () throws(AppAttestError) in
            try (verifier ?? AppleAppAttest(for: vector)).verifyAssertion(
                object ?? vector.object, clientDataHash: clientDataHash ?? vector.clientDataHash, key: key ?? vector.storedKey,
                storedCounter: storedCounter)
        }
    }

    func testEveryAssertionVerifiesWithItsAttestedKeyAndCountsOne() throws {
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            XCTAssertEqual(vector.clientDataHash(of: vector.clientData), vector.clientDataHash, name)
            let counter = try AppleAppAttest(for: vector).verifyAssertion(
                vector.object, clientDataHash: vector.clientDataHash, key: vector.storedKey, storedCounter: 0)
            XCTAssertEqual(counter, 1, name)
            XCTAssertEqual(Int(counter), vector.expected["newStoredCounter"] as? Int, name)
        }
    }

    /// The assertion's key is the one its paired attestation verified to (read from that vector, not this one).
    func testTheStoredKeyIsWhatThePairedAttestationVerifiesTo() async throws {
        for (assertion, attestation) in [
            ("assertion-2020-kayak", "attestation-2020-kayak"), ("assertion-2020-ios14_2-dev", "attestation-2020-ios14_2-dev"),
        ] {
            let paired = try AppAttestVector.load(attestation)
            let key = try await AppleAppAttest(for: paired).verifyAttestation(
                paired.object, keyID: paired.keyID, clientDataHash: paired.clientDataHash, at: paired.time)
            let vector = try AppAttestVector.load(assertion)
            let reason = await verify(vector, key: key)
            XCTAssertNil(reason, assertion)
        }
    }

    func testAnAssertionOverOtherClientDataIsRefused() async throws {
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            let other = hex(try XCTUnwrap(vector.mutation("wrong-client-data")?["value_hex"] as? String))
            let reason = await verify(vector, clientDataHash: vector.clientDataHash(of: other))
            XCTAssertEqual(reason, .signatureInvalid, name)
        }
    }

    func testAnAssertionForAnotherAppIDIsRefused() async throws {
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            let wrong = try XCTUnwrap(vector.mutation("wrong-app-id")?["value"] as? String)
            let stored = vector.storedKey
            let key = AttestedAppKey(
                keyID: stored.keyID, publicKey: stored.publicKey, appID: wrong, environment: stored.environment, counter: 0, receipt: [])
            let reason = await verify(vector, key: key, verifier: AppleAppAttest(for: vector, appID: wrong))
            XCTAssertEqual(reason, .appIDNotAccepted, name)
        }
    }

    func testAnAssertionOfAnAppNoLongerAcceptedIsRefused() async throws {
        let vector = try AppAttestVector.load("assertion-2020-kayak")
        let reason = await verify(vector, verifier: AppleAppAttest(for: vector, appID: "8YE23NZS57.com.kayak.other"))
        XCTAssertEqual(reason, .appIDNotAccepted)
    }

    func testAReplayedAssertionIsRefused() async throws {
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            let stored = try XCTUnwrap(UInt32(exactly: vector.mutation("replayed-counter")?["value"] as? Int ?? -1))
            let reason = await verify(vector, storedCounter: stored)
            XCTAssertEqual(reason, .counterNotIncreased(stored: 1, received: 1), name)
        }
    }

    func testAnAssertionWhoseCounterWentBackIsRefused() async throws {
        let vector = try AppAttestVector.load("assertion-2020-kayak")
        let reason = await verify(vector, storedCounter: 7)
        XCTAssertEqual(reason, .counterNotIncreased(stored: 7, received: 1))
    }

    func testAnAssertionCheckedWithAnotherKeyIsRefused() async throws {
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            let other = try AppAttestVector.load(
                try XCTUnwrap(vector.mutation("wrong-public-key")?["value_fromVector"] as? String).replacingOccurrences(of: ".json", with: ""))
            let stored = vector.storedKey
            let key = AttestedAppKey(
                keyID: stored.keyID, publicKey: other.publicKey, appID: stored.appID, environment: stored.environment, counter: 0, receipt: [])
            let reason = await verify(vector, key: key)
            XCTAssertEqual(reason, .signatureInvalid, name)
        }
    }

    func testAnAssertionWithTamperedAuthenticatorDataIsRefused() async throws {
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            let offset = try XCTUnwrap(vector.mutation("tampered-authenticator-data")?["offset"] as? Int)
            var object = vector.object
            XCTAssertEqual(object[offset], 1, name)
            object[offset] = 2
            let reason = await verify(vector, object: object)
            XCTAssertEqual(reason, .signatureInvalid, name)
        }
    }
}
