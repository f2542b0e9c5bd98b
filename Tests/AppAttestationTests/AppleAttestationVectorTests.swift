import AppAttestation
import Crypto
import Foundation
import SwiftASN1
import X509
import XCTest

/// Apple's attestation steps (1–9) on real attestation objects: each verifies at its time, and each one-field change
/// the vectors list is refused at its own step.
final class AppleAttestationVectorTests: XCTestCase {
    func verify(
        _ vector: AppAttestVector, object: [UInt8]? = nil, keyID: [UInt8]? = nil, clientDataHash: [UInt8]? = nil, at time: Date? = nil,
        verifier: AppleAppAttest? = nil
    ) async -> AppAttestError.Reason? {
        await refusal { () async throws(AppAttestError) in
            try await (verifier ?? AppleAppAttest(for: vector)).verifyAttestation(
                object ?? vector.object, keyID: keyID ?? vector.keyID, clientDataHash: clientDataHash ?? vector.clientDataHash,
                at: time ?? vector.time)
        }
    }

    func testEveryAttestationVerifiesAtItsTimeWithItsKeyAndCounterZero() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            XCTAssertEqual(vector.clientDataHash(of: vector.clientData), vector.clientDataHash, name)
            let key = try await AppleAppAttest(for: vector).verifyAttestation(
                vector.object, keyID: vector.keyID, clientDataHash: vector.clientDataHash, at: vector.time)
            XCTAssertEqual(key.publicKey, vector.publicKey, name)
            XCTAssertEqual(key.keyID, vector.keyID, name)
            XCTAssertEqual(key.appID, vector.appID, name)
            XCTAssertEqual(key.environment, vector.environment, name)
            XCTAssertEqual(key.counter, 0, name)
            XCTAssertGreaterThan(key.receipt.count, 1000, "\(name): the receipt is kept")
        }
    }

    func testEveryAttestationVerifiesAtBothEndsOfItsLeafWindow() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            for instant in [vector.window.from, vector.window.to] {
                let reason = await verify(vector, at: instant)
                XCTAssertNil(reason, "\(name) at \(instant)")
            }
        }
    }

    func testAnAttestationForAnotherAppIDIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let wrong = try XCTUnwrap(vector.mutation("wrong-app-id")?["value"] as? String)
            let reason = await verify(vector, verifier: AppleAppAttest(for: vector, appID: wrong))
            XCTAssertEqual(reason, .appIDNotAccepted, name)
        }
    }

    func testAnAttestationForAnotherChallengeIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let other = hex(try XCTUnwrap(vector.mutation("wrong-challenge")?["value_hex"] as? String))
            let reason = await verify(vector, clientDataHash: vector.clientDataHash(of: other))
            XCTAssertEqual(reason, .nonceMismatch, name)
        }
    }

    func testAnAttestationOneSecondAfterItsLeafExpiredIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let time = AppAttestVector.date(try XCTUnwrap(vector.mutation("expired")?["value"] as? String))
            XCTAssertEqual(time, vector.window.to.addingTimeInterval(1), name)
            let reason = await verify(vector, at: time)
            XCTAssertEqual(reason, .chainNotTrusted, name)
        }
    }

    func testAnAttestationOneSecondBeforeItsLeafIsValidIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let time = AppAttestVector.date(try XCTUnwrap(vector.mutation("not-yet-valid")?["value"] as? String))
            XCTAssertEqual(time, vector.window.from.addingTimeInterval(-1), name)
            let reason = await verify(vector, at: time)
            XCTAssertEqual(reason, .chainNotTrusted, name)
        }
    }

    func testAnAttestationAtTodaysDateIsRefusedAsExpired() async throws {
        let vector = try AppAttestVector.load("attestation-ios27")
        let reason = await verify(vector, at: Date())
        XCTAssertEqual(reason, .chainNotTrusted)
    }

    func testAKeyIDWithOneBitFlippedIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let flipped = Array(Data(base64Encoded: try XCTUnwrap(vector.mutation("keyid-mismatch")?["value_base64"] as? String))!)
            let reason = await verify(vector, keyID: flipped)
            XCTAssertEqual(reason, .keyIDMismatch, name)
        }
    }

    func testAKeyOfTheOtherEnvironmentIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let other = try XCTUnwrap(AppAttestEnvironment(rawValue: vector.mutation("wrong-environment")?["value"] as? String ?? ""))
            XCTAssertNotEqual(other, vector.environment)
            let reason = await verify(vector, verifier: AppleAppAttest(for: vector, environment: other))
            XCTAssertEqual(reason, .environmentNotAccepted, name)
        }
    }

    func testAnAttestationWhoseCounterIsNotZeroIsRefused() async throws {
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let change = try XCTUnwrap(vector.mutation("counter-not-zero"))
            let offset = try XCTUnwrap(change["offset"] as? Int)
            var object = vector.object
            XCTAssertEqual(object[offset], 0, name)
            object[offset] = 1
            let reason = await verify(vector, object: object)
            XCTAssertEqual(reason, .counterNotZero(1), name)
        }
    }

    func testAChainToARootOfTheSameNameButAnotherKeyIsRefused() async throws {
        let apple = AppleAppAttest.appleRoot
        let key = P384.Signing.PrivateKey()
        let forged = try Certificate(
            version: .v3, serialNumber: apple.serialNumber, publicKey: .init(key.publicKey), notValidBefore: apple.notValidBefore,
            notValidAfter: apple.notValidAfter, issuer: apple.subject, subject: apple.subject, signatureAlgorithm: .ecdsaWithSHA384,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(keyIdentifier: try apple.extensions.subjectKeyIdentifier!.keyIdentifier)
            }, issuerPrivateKey: .init(key))
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            let reason = await verify(vector, verifier: AppleAppAttest(for: vector, roots: [forged]))
            XCTAssertEqual(reason, .chainNotTrusted, name)
        }
    }

    func testAnAttestationWithoutATrustAnchorIsRefused() async throws {
        let vector = try AppAttestVector.load("attestation-2020-kayak")
        let reason = await verify(vector, verifier: AppleAppAttest(for: vector, roots: []))
        XCTAssertEqual(reason, .chainNotTrusted)
    }

    /// Apple's sample signed the raw challenge: SHA-256 of it is another client data hash, refused.
    func testApplesSampleWithItsChallengeHashedIsRefused() async throws {
        let vector = try AppAttestVector.load("attestation-ios27")
        let hashed = hex(try XCTUnwrap(vector.mutation("hashed-challenge")?["value_hex"] as? String))
        XCTAssertEqual(hashed, Array(SHA256.hash(data: vector.clientData)))
        let reason = await verify(vector, clientDataHash: hashed)
        XCTAssertEqual(reason, .nonceMismatch)
    }

    func testTheShippedRootIsApplesByFingerprint() throws {
        var serializer = DER.Serializer()
        try serializer.serialize(AppleAppAttest.appleRoot)
        let fingerprint = SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02X", $0) }.joined(separator: ":")
        XCTAssertEqual(fingerprint, "1C:B9:82:3B:A2:8B:A6:AD:2D:33:A0:06:94:1D:E2:AE:4F:51:3E:F1:D4:E8:31:B9:F7:E0:FA:7B:62:42:C9:32")
        let pem = try String(
            contentsOf: try XCTUnwrap(Bundle.module.url(forResource: "Vectors", withExtension: nil))
                .appendingPathComponent("apple-app-attestation-root-ca.pem"), encoding: .utf8)
        XCTAssertEqual(try Certificate(pemEncoded: pem), AppleAppAttest.appleRoot)
    }
}
