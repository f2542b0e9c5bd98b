import FIDOSimulation
import Foundation
import Primitives
import TestSupport
import WebAuthn
import XCTest

/// The software passkey authenticator (FIDOSimulation) against our ceremonies, and against an independent verifier
/// (python-fido2).
final class SoftwarePasskeyTests: XCTestCase {
    let relyingParty = RelyingParty(id: "example.org", origins: ["https://example.org"])
    let challenge = [UInt8](repeating: 0x5A, count: 32)

    func register(
        _ device: inout SoftwarePasskeyAuthenticator, algorithm: SoftwarePasskeyAuthenticator.Algorithm,
        attestation: SoftwarePasskeyAuthenticator.Attestation
    ) async throws -> VerifiedRegistration {
        let made = try device.create(
            rpID: "example.org", challenge: challenge, userHandle: [7, 7], algorithms: [algorithm.rawValue], attestation: attestation)
        return try await RegistrationCeremony(relyingParty: relyingParty).verify(
            RegistrationResponse(
                credentialID: made.credentialID, clientDataJSON: made.clientDataJSON, attestationObject: made.attestationObject,
                transports: made.transports),
            expected: RegistrationExpectation(challenge: challenge, algorithms: [COSEAlgorithm(rawValue: algorithm.rawValue)!]))
    }

    func signIn(_ device: inout SoftwarePasskeyAuthenticator, stored: StoredCredential, allow: [[UInt8]]) throws -> VerifiedAssertion {
        let assertion = try device.get(rpID: "example.org", challenge: challenge, allowCredentials: allow)
        return try AuthenticationCeremony(relyingParty: relyingParty).verify(
            AssertionResponse(
                credentialID: assertion.credentialID, clientDataJSON: assertion.clientDataJSON,
                authenticatorData: assertion.authenticatorData, signature: assertion.signature, userHandle: assertion.userHandle),
            expected: AssertionExpectation(challenge: challenge, allowCredentials: allow, userVerification: .required), credential: stored)
    }

    func testEveryAlgorithmAndAttestationRegistersAndSignsInUnderTheDefaultPolicy() async throws {
        for algorithm in SoftwarePasskeyAuthenticator.Algorithm.allCases {
            for attestation in SoftwarePasskeyAuthenticator.Attestation.allCases {
                var device = SoftwarePasskeyAuthenticator(origin: "https://example.org")
                let registered = try await register(&device, algorithm: algorithm, attestation: attestation)
                XCTAssertEqual(registered.publicKey.algorithm.rawValue, algorithm.rawValue)
                XCTAssertEqual(registered.attestation.type, attestation == .none ? AttestationType.none : .self)
                XCTAssertTrue(registered.backupEligible && registered.backupState && registered.userVerified)
                XCTAssertEqual(registered.transports, ["internal", "hybrid"])
                let stored = StoredCredential(
                    id: registered.credentialID, publicKey: registered.publicKey, userHandle: [7, 7],
                    signCount: registered.signCount, backupEligible: registered.backupEligible)
                let result = try signIn(&device, stored: stored, allow: [registered.credentialID])
                XCTAssertEqual(result.signCount, 0, "a synced passkey does not count")
            }
        }
    }

    func testTheCredProtectLevelAnAuthenticatorReportsIsReadAndAnotherValueIsNot() async throws {
        for (level, read) in [(3, 3), (1, 1), (7, nil), (nil, nil)] as [(Int?, Int?)] {
            var key = SoftwarePasskeyAuthenticator(origin: "https://example.org", backupEligible: false)
            key.credentialProtection = level
            let registered = try await register(&key, algorithm: .es256, attestation: .packedSelf)
            XCTAssertEqual(registered.credentialProtection, read, "\(String(describing: level))")
            XCTAssertEqual(registered.extensions, level == nil ? [] : ["credProtect"])
        }
    }

    func testACountingAuthenticatorsCounterGrowsAndASignInWithoutAUsernameFindsTheCredential() async throws {
        var device = SoftwarePasskeyAuthenticator(origin: "https://example.org", backupEligible: false, counts: true)
        let registered = try await register(&device, algorithm: .es256, attestation: .packedSelf)
        XCTAssertEqual(registered.signCount, 1)
        var stored = StoredCredential(
            id: registered.credentialID, publicKey: registered.publicKey, userHandle: [7, 7],
            signCount: registered.signCount, backupEligible: false)
        for expected in UInt32(2)...4 {
            let result = try signIn(&device, stored: stored, allow: [])
            XCTAssertEqual(result.signCount, expected)
            stored.signCount = result.signCount
        }
    }

    /// Kept and restored (another process of `mauth device`), each kind of key still signs what the ceremony verifies;
    /// an entry that does not read is left out, not guessed at.
    func testARestoredCredentialSignsAsTheOriginalAndADamagedOneIsLeftOut() async throws {
        for algorithm in SoftwarePasskeyAuthenticator.Algorithm.allCases {
            var device = SoftwarePasskeyAuthenticator(origin: "https://example.org", counts: true)
            let registered = try await register(&device, algorithm: algorithm, attestation: .none)
            var damaged = device.stored[0]
            damaged.privateKey = "not base64url!"
            var restored = SoftwarePasskeyAuthenticator(origin: "https://example.org", counts: true)
            restored.restore(device.stored + [damaged])
            XCTAssertEqual(restored.credentials.count, 1, "\(algorithm)")
            let stored = StoredCredential(
                id: registered.credentialID, publicKey: registered.publicKey, userHandle: [7, 7], signCount: registered.signCount,
                backupEligible: registered.backupEligible)
            XCTAssertEqual(try signIn(&restored, stored: stored, allow: [registered.credentialID]).signCount, 2, "\(algorithm)")
        }
    }

    func testItRefusesAsABrowserWould() throws {
        var device = SoftwarePasskeyAuthenticator(origin: "https://example.org")
        // RS1 (-65535): offered by some servers, made by no authenticator worth the name.
        XCTAssertThrowsError(try device.create(rpID: "example.org", challenge: challenge, userHandle: [1], algorithms: [-65535])) { error in
            XCTAssertEqual(error as? SoftwarePasskeyAuthenticator.Failure, .noSupportedAlgorithm)
        }
        let made = try device.create(rpID: "example.org", challenge: challenge, userHandle: [1])
        XCTAssertThrowsError(try device.get(rpID: "other.example", challenge: challenge)) { error in
            XCTAssertEqual(error as? SoftwarePasskeyAuthenticator.Failure, .noCredential)
        }
        device.remove(credentialID: made.credentialID)
        XCTAssertThrowsError(try device.get(rpID: "example.org", challenge: challenge)) { error in
            XCTAssertEqual(error as? SoftwarePasskeyAuthenticator.Failure, .noCredential)
        }
    }

    func testPythonFido2VerifiesItsAttestationsAndSignatures() throws {
        let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/webauthn_interop.py").path
        if case .skipped(let why) = try ExternalTool.require("python3 with python-fido2", probe: ["python3", script, "check"]) { throw XCTSkip(why) }
        var lines: [String] = []
        var expected: [String] = []
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        for algorithm in SoftwarePasskeyAuthenticator.Algorithm.allCases {
            for attestation in SoftwarePasskeyAuthenticator.Attestation.allCases {
                var device = SoftwarePasskeyAuthenticator(origin: "https://example.org", counts: true)
                let made = try device.create(
                    rpID: "example.org", challenge: challenge, userHandle: [1], algorithms: [algorithm.rawValue], attestation: attestation)
                lines.append("registration \(hex(made.clientDataJSON)) \(hex(made.attestationObject))")
                expected.append("ok \(attestation == .none ? "none NONE" : "packed SELF") \(algorithm.rawValue)")
                let assertion = try device.get(rpID: "example.org", challenge: challenge)
                lines.append("assertion \(hex(assertion.authenticatorData)) \(hex(assertion.clientDataJSON)) \(hex(assertion.signature))")
                expected.append("ok assertion 2")
                var tampered = assertion.signature
                tampered[tampered.count - 1] ^= 0x01
                lines.append("assertion \(hex(assertion.authenticatorData)) \(hex(assertion.clientDataJSON)) \(hex(tampered))")
                expected.append("refused")
            }
        }
        let output = try ExternalProgram.run(["python3", script, "verify"], stdin: Array((lines.joined(separator: "\n") + "\n").utf8))
        XCTAssertEqual(output.status, 0, output.stderr)
        let answers = output.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(answers.count, expected.count, output.stdout)
        for (answer, wanted) in zip(answers, expected) {
            XCTAssertTrue(answer.hasPrefix(wanted), "python-fido2 answered \(answer), expected \(wanted)")
        }
    }
}
