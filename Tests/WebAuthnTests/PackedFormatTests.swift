import CBOR
import Crypto
import Foundation
import WebAuthn
import X509
import XCTest

/// `packed` (§8.2): each verification step and certificate rule, by one changed field.
final class PackedFormatTests: XCTestCase {
    let registration = TestRegistration()

    /// A full packed statement: a batch key certified by `ca` signs; returns the statement and the leaf's DER.
    static func full(
        _ registration: TestRegistration, ca: TestCA, notValidBefore: Date = TestCA.start, notValidAfter: Date = TestCA.end,
        subject: DistinguishedName? = nil, isCA: Bool = false, aaguidExtension: Certificate.Extension? = nil, alg: Int64 = -7,
        signer: P256.Signing.PrivateKey? = nil
    ) throws -> (CBOR, [UInt8]) {
        let batch = P256.Signing.PrivateKey()
        let leaf = try ca.issue(
            .init(batch.publicKey), subject: subject ?? TestCA.packedSubject(), notValidBefore: notValidBefore,
            notValidAfter: notValidAfter
        ) {
            if isCA {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            } else {
                Critical(BasicConstraints.notCertificateAuthority)
            }
            if let aaguidExtension { aaguidExtension }
        }
        let signature = try (signer ?? batch).signature(for: registration.signedData)
        return (statement(["alg": .int(alg), "sig": der(signature), "x5c": .array([.bytes(leaf)])]), leaf)
    }

    func reason(_ statement: CBOR) async -> AttestationStatementError.Reason? {
        await statementRefusal(registration.response("packed", statement), registration.expectation)
    }

    func testSelfAttestationDoesNotBindTheModel() async throws {
        let result = try await verified(registration.response("packed", registration.packedSelf), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .unbound)
    }

    func testACertificateNamingTheAAGUIDBindsTheModel() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), aaguidExtension: try TestCA.aaguidExtension(registration.aaguid))
        let result = try await verified(registration.response("packed", statement), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .certificate)
    }

    func testACertificateWithoutTheAAGUIDLeavesTheBindingToItsRoot() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA())
        let result = try await verified(registration.response("packed", statement), registration.expectation)
        XCTAssertEqual(result.attestation.modelBinding, .attestationKey)
    }

    func testAFullStatementVerifiesAsBasicWithItsTrustPath() async throws {
        let (statement, leaf) = try Self.full(registration, ca: try TestCA())
        let result = try await verified(registration.response("packed", statement), registration.expectation)
        XCTAssertEqual(result.attestation.format, "packed")
        XCTAssertEqual(result.attestation.type, .basic)
        XCTAssertEqual(result.attestation.trustPath, [leaf])
    }

    func testASelfStatementVerifiesAsSelf() async throws {
        let result = try await verified(registration.response("packed", registration.packedSelf), registration.expectation)
        XCTAssertEqual(result.attestation.type, .self)
        XCTAssertEqual(result.attestation.trustPath, [])
    }

    func testASelfStatementWithAnotherAlgorithmIsRefused() async {
        let signature = try! registration.credentialKey.signature(for: registration.signedData)
        let reason = await reason(statement(["alg": .int(-257), "sig": der(signature)]))
        XCTAssertEqual(reason, .algorithmMismatch(statement: -257, credential: -7))
    }

    func testASelfSignatureByAnotherKeyIsRefused() async {
        let signature = try! P256.Signing.PrivateKey().signature(for: registration.signedData)
        let reason = await reason(statement(["alg": .int(-7), "sig": der(signature)]))
        XCTAssertEqual(reason, .signatureInvalid)
    }

    func testAFullStatementSignedWithTheCredentialKeyIsRefused() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), signer: registration.credentialKey)
        let reason = await reason(statement)
        XCTAssertEqual(reason, .signatureInvalid)
    }

    func testAFullStatementOverOtherDataIsRefused() async throws {
        var other = registration
        other.challenge[0] ^= 1
        let (statement, _) = try Self.full(other, ca: try TestCA())
        let reason = await reason(statement)
        XCTAssertEqual(reason, .signatureInvalid)
    }

    func testAnAlgorithmTheCertificateKeyCannotMakeIsRefused() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), alg: -35)
        let reason = await reason(statement)
        XCTAssertEqual(reason, .certificateKeyUnsuitable("cannot make algorithm -35 signatures"))
    }

    func testAnUnknownAlgorithmIsRefused() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), alg: -1000)
        let reason = await reason(statement)
        XCTAssertEqual(reason, .unknownAlgorithm(-1000))
    }

    func testAnEmptySignatureIsRefused() async {
        let reason = await reason(statement(["alg": .int(-7), "sig": .bytes([])]))
        XCTAssertEqual(reason, .memberMissing("sig"))
    }

    func testAMissingAlgorithmIsRefused() async {
        let signature = try! registration.credentialKey.signature(for: registration.signedData)
        let reason = await reason(statement(["sig": der(signature)]))
        XCTAssertEqual(reason, .memberMissing("alg"))
    }

    func testAnEmptyCertificateChainIsRefused() async {
        let signature = try! registration.credentialKey.signature(for: registration.signedData)
        let reason = await reason(statement(["alg": .int(-7), "sig": der(signature), "x5c": .array([])]))
        XCTAssertEqual(reason, .memberMissing("x5c"))
    }

    func testAChainOfNineCertificatesIsRefusedUnread() async throws {
        let (full, _) = try Self.full(registration, ca: try TestCA())
        guard case .map(var map) = full else { return XCTFail() }
        map.entries.removeAll { $0.key == .text("x5c") }
        map.entries.append(.init(.text("x5c"), .array([CBOR](repeating: .bytes([0x30, 0x00]), count: 9))))
        let reason = await reason(.map(map))
        XCTAssertEqual(reason, .memberUnexpected("x5c with 9 certificates (8 at most)"))
    }

    func testACertificateThatDoesNotParseIsRefused() async {
        let signature = try! registration.credentialKey.signature(for: registration.signedData)
        let reason = await reason(statement(["alg": .int(-7), "sig": der(signature), "x5c": .array([.bytes([0x30, 0x00])])]))
        XCTAssertEqual(reason, .certificateUnreadable(index: 0))
    }

    func testAnUnknownMemberIsRefused() async {
        guard case .map(var map) = registration.packedSelf else { return XCTFail() }
        map.entries.append(.init(.text("ecdaaKeyId"), .bytes([1])))
        let reason = await reason(.map(map))
        XCTAssertEqual(reason, .memberUnexpected("ecdaaKeyId"))
    }

    func testACertificateWithoutTheAttestationOUIsRefused() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), subject: try TestCA.packedSubject(ou: "Engineering"))
        let reason = await reason(statement)
        XCTAssertEqual(reason, .certificateRequirement("has no subject OU \"Authenticator Attestation\""))
    }

    func testACertificateWithoutACountryIsRefused() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), subject: try TestCA.packedSubject(country: nil))
        let reason = await reason(statement)
        XCTAssertEqual(reason, .certificateRequirement("has no subject C (a two-letter country code)"))
    }

    func testACACertificateIsRefused() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), isCA: true)
        let reason = await reason(statement)
        XCTAssertEqual(reason, .certificateRequirement("is a CA certificate (basicConstraints CA=true)"))
    }

    func testACertificateForAnotherModelIsRefused() async throws {
        let (statement, _) = try Self.full(
            registration, ca: try TestCA(), aaguidExtension: try TestCA.aaguidExtension([UInt8](repeating: 0xBB, count: 16)))
        let reason = await reason(statement)
        XCTAssertEqual(reason, .aaguidMismatch)
    }

    func testACertificateForThisModelVerifies() async throws {
        let (statement, _) = try Self.full(registration, ca: try TestCA(), aaguidExtension: try TestCA.aaguidExtension(registration.aaguid))
        let reason = await reason(statement)
        XCTAssertNil(reason)
    }

    func testACriticalAAGUIDExtensionIsRefused() async throws {
        let (statement, _) = try Self.full(
            registration, ca: try TestCA(), aaguidExtension: try TestCA.aaguidExtension(registration.aaguid, critical: true))
        let reason = await reason(statement)
        XCTAssertEqual(reason, .certificateRequirement("marks its AAGUID extension critical"))
    }
}
