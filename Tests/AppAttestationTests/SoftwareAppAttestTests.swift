import AppAttestation
import CBOR
import Crypto
import FIDOSimulation
import Foundation
import SwiftASN1
import TestSupport
import X509
import XCTest

/// The software App Attest that tests, `mauth device` and `mauth demo` use: what it makes passes the verifier only
/// under its own root, each step still refuses, and an independent verifier (Python) agrees with both.
final class SoftwareAppAttestTests: XCTestCase {
    let appID = "ABCDE12345.ch.nevis.mauth.virtualdevice"
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let clientDataHash = Array(SHA256.hash(data: Array("a UAF operation's final challenge".utf8)))

    func verifier(_ authority: SoftwareAppAttestAuthority, environments: Set<AppAttestEnvironment> = [.development]) -> AppleAppAttest {
        AppleAppAttest(appIDs: [appID], environments: environments, roots: [authority.rootCertificate])
    }

    func testItsAttestationAndAssertionsVerifyUnderItsRoot() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let key = SoftwareAppAttestKey()
        let object = try authority.attest(key, appID: appID, environment: .development, clientDataHash: clientDataHash, now: now)
        let attested = try await verifier(authority).verifyAttestation(object, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
        XCTAssertEqual(attested.publicKey, Array(key.privateKey.publicKey.x963Representation))
        XCTAssertEqual(attested.environment, .development)
        var counter = attested.counter
        for _ in 1...3 {
            let assertion = try key.assertion(appID: appID, counter: counter + 1, clientDataHash: clientDataHash)
            counter = try verifier(authority).verifyAssertion(assertion, clientDataHash: clientDataHash, key: attested, storedCounter: counter)
        }
        XCTAssertEqual(counter, 3)
    }

    func testItsAttestationIsRefusedUnderApplesRoot() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let key = SoftwareAppAttestKey()
        let object = try authority.attest(key, appID: appID, environment: .production, clientDataHash: clientDataHash, now: now)
        let reason = await refusal { () async throws(AppAttestError) in
            try await AppleAppAttest(appIDs: [appID], environments: [.production]).verifyAttestation(
                object, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
        }
        XCTAssertEqual(reason, .chainNotTrusted)
    }

    /// With a certified nonce over the changed bytes, the counter is what refuses (the real vectors' flipped byte
    /// also breaks the nonce).
    func testAnAttestationCertifiedWithACounterOfOneIsRefused() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let key = SoftwareAppAttestKey()
        let object = try authority.attest(key, appID: appID, environment: .development, clientDataHash: clientDataHash, now: now, counter: 1)
        let reason = await refusal { () async throws(AppAttestError) in
            try await self.verifier(authority).verifyAttestation(object, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
        }
        XCTAssertEqual(reason, .counterNotZero(1))
    }

    func testAnAttestationOfAnotherKeysCredentialIDIsRefused() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let key = SoftwareAppAttestKey()
        var object = try authority.attest(key, appID: appID, environment: .development, clientDataHash: clientDataHash, now: now)
        // The credential ID sits at authData offset 55; the certified nonce then breaks too, but the ID is checked first.
        let authData = try XCTUnwrap(CBORDecoder(rules: .wellFormed).decode(object).map?[text: "authData"]?.bytes)
        let start = try XCTUnwrap(object.indices.first { Array(object[$0..<($0 + authData.count)]) == authData })
        object[start + 55] ^= 0x01
        let reason = await refusal { () async throws(AppAttestError) in
            try await self.verifier(authority).verifyAttestation(object, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
        }
        XCTAssertEqual(reason, .credentialIDMismatch)
    }

    func testMalformedObjectsAreRefusedWithAReason() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let key = SoftwareAppAttestKey()
        let object = try authority.attest(key, appID: appID, environment: .development, clientDataHash: clientDataHash, now: now)
        let packed = CBOREncoder.encode(
            .map(CBORMap([.init(.text("fmt"), .text("packed")), .init(.text("attStmt"), .map(CBORMap())), .init(.text("authData"), .bytes([]))])))
        let cases: [(String, [UInt8])] = [
            ("empty", []), ("cut short", Array(object.prefix(object.count - 10))), ("a CBOR text", CBOREncoder.encode(.text("apple-appattest"))),
            ("oversized", [UInt8](repeating: 0, count: AppleAppAttest.maximumObjectBytes + 1)),
        ]
        for (name, bytes) in cases {
            let reason = await refusal { () async throws(AppAttestError) in
                try await self.verifier(authority).verifyAttestation(bytes, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
            }
            XCTAssertTrue(reason?.description.hasPrefix("malformed") == true, "\(name): \(String(describing: reason))")
        }
        let format = await refusal { () async throws(AppAttestError) in
            try await self.verifier(authority).verifyAttestation(packed, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
        }
        XCTAssertEqual(format, .formatUnexpected("packed"))
        let assertion = await refusal { () throws(AppAttestError) in
            try self.verifier(authority).verifyAssertion(
                Array(object.prefix(40)), clientDataHash: clientDataHash,
                key: AttestedAppKey(keyID: key.keyID, publicKey: [], appID: appID, environment: .development, counter: 0, receipt: []),
                storedCounter: 0)
        }
        XCTAssertTrue(assertion?.description.hasPrefix("malformed") == true, String(describing: assertion))
    }

    /// Python's cbor2 and cryptography, following Apple's steps, accept Apple's real objects and the software ones,
    /// and refuse a tampered signature: the software App Attest is what Apple makes, not only what our verifier reads.
    func testAnIndependentVerifierAgreesOnApplesObjectsAndOurs() async throws {
        let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/app_attest_interop.py").path
        if case .skipped(let why) = try ExternalTool.require("python3 with cbor2 and cryptography", probe: ["python3", script, "check"]) {
            throw XCTSkip(why)
        }
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        func der(_ certificate: Certificate) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
        var lines: [String] = []
        var expected: [String] = []
        for name in AppAttestVector.attestations {
            let vector = try AppAttestVector.load(name)
            lines.append(
                "attestation \(hex(vector.object)) \(hex(vector.keyID)) \(hex(vector.clientDataHash)) \(vector.appID) "
                    + "\(hex(vector.environment.aaguid)) \(Int(vector.time.timeIntervalSince1970)) \(hex(try der(AppleAppAttest.appleRoot)))")
            expected.append("ok attestation \(hex(vector.publicKey))")
        }
        for name in AppAttestVector.assertions {
            let vector = try AppAttestVector.load(name)
            lines.append(
                "assertion \(hex(vector.object)) \(hex(vector.storedKey.publicKey)) \(hex(vector.clientDataHash)) \(vector.storedKey.appID) 0")
            expected.append("ok assertion 1")
        }
        let authority = try SoftwareAppAttestAuthority()
        for environment in AppAttestEnvironment.allCases {
            let key = SoftwareAppAttestKey()
            let object = try authority.attest(key, appID: appID, environment: environment, clientDataHash: clientDataHash, now: now)
            lines.append(
                "attestation \(hex(object)) \(hex(key.keyID)) \(hex(clientDataHash)) \(appID) \(hex(environment.aaguid)) "
                    + "\(Int(now.timeIntervalSince1970)) \(hex(try der(authority.rootCertificate)))")
            expected.append("ok attestation \(hex(Array(key.privateKey.publicKey.x963Representation)))")
            let assertion = try key.assertion(appID: appID, counter: 1, clientDataHash: clientDataHash)
            let point = hex(Array(key.privateKey.publicKey.x963Representation))
            lines.append("assertion \(hex(assertion)) \(point) \(hex(clientDataHash)) \(appID) 0")
            expected.append("ok assertion 1")
            lines.append("assertion \(hex(assertion)) \(point) \(hex(clientDataHash)) \(appID) 1")
            expected.append("refused")
            var tampered = assertion
            tampered[tampered.count - 1] ^= 0x01
            lines.append("assertion \(hex(tampered)) \(point) \(hex(clientDataHash)) \(appID) 0")
            expected.append("refused")
        }
        let output = try ExternalProgram.run(["python3", script, "verify"], stdin: Array((lines.joined(separator: "\n") + "\n").utf8))
        XCTAssertEqual(output.status, 0, output.stderr)
        let answers = output.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(answers.count, expected.count, output.stdout)
        for (answer, wanted) in zip(answers, expected) {
            XCTAssertTrue(answer.hasPrefix(wanted), "the independent verifier answered \(answer), expected \(wanted)")
        }
    }
}
