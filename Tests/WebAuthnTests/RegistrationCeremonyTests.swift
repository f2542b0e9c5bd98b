import CBOR
import Crypto
import FIDOAttestation
import Foundation
import WebAuthn
import X509
import XCTest

/// The registration ceremony (WebAuthn §7.1), one test per step: each changes one field of a valid registration and
/// sees that step's reason.
final class RegistrationCeremonyTests: XCTestCase {
    let registration = TestRegistration()

    func step(
        _ registration: TestRegistration, format: String = "none", statement: CBOR? = nil, expectation: RegistrationExpectation? = nil,
        policy: AttestationPolicy = lenientPolicy, trust: AttestationTrust = AttestationTrust()
    ) async -> (Int, WebAuthnError.Reason)? {
        let error = await refusal(
            registration.response(format, statement ?? .map(CBORMap())), expectation ?? registration.expectation, policy: policy, trust: trust)
        return error.map { ($0.step, $0.reason) }
    }

    func testANoneRegistrationVerifiesAndReportsTheRecordToStore() async throws {
        let result = try await verified(registration.response("none", .map(CBORMap())), registration.expectation)
        XCTAssertEqual(result.credentialID, registration.credentialID)
        XCTAssertEqual(result.publicKey.encoded, registration.cose)
        XCTAssertEqual(result.attestation.type, AttestationType.none)
        XCTAssertTrue(result.userVerified)
        XCTAssertFalse(result.backupEligible)
        XCTAssertNil(result.trustAnchor)
        XCTAssertNil(result.metadata)
    }

    func testClientDataThatIsNotJSONIsStep6() async {
        var response = registration.response("none", .map(CBORMap()))
        response.clientDataJSON = Array("not json".utf8)
        let error = await refusal(response, registration.expectation)
        XCTAssertEqual(error?.step, 6)
        XCTAssertEqual(error?.reason, .clientDataMalformed)
    }

    func testAnAssertionsClientDataIsStep7() async {
        var changed = registration
        changed.type = "webauthn.get"
        let result = await step(changed)
        XCTAssertEqual(result?.0, 7)
        XCTAssertEqual(result?.1, .typeMismatch("webauthn.get"))
    }

    func testAnotherChallengeIsStep8() async {
        var changed = registration
        changed.challenge[0] ^= 1
        let result = await step(changed, expectation: registration.expectation)
        XCTAssertEqual(result?.0, 8)
    }

    func testAnotherOriginIsStep9() async {
        var changed = registration
        changed.origin = "https://example.org.evil.example"
        let result = await step(changed)
        XCTAssertEqual(result?.0, 9)
        XCTAssertEqual(result?.1, .originNotAllowed("https://example.org.evil.example"))
    }

    func testACrossOriginIframeIsStep10() async {
        var changed = registration
        changed.crossOrigin = true
        let result = await step(changed)
        XCTAssertEqual(result?.0, 10)
    }

    func testATopOriginWithoutCrossOriginIsStep11() async {
        var changed = registration
        changed.topOrigin = "https://example.com"
        let result = await step(changed)
        XCTAssertEqual(result?.0, 11)
    }

    func testAnAttestationObjectThatIsNotAMapIsStep13() async {
        var response = registration.response("none", .map(CBORMap()))
        response.attestationObject = CBOREncoder.encode(.array([]))
        let error = await refusal(response, registration.expectation)
        XCTAssertEqual(error?.step, 13)
        XCTAssertEqual(error?.reason, .attestationObjectMalformed("not a CBOR map"))
    }

    func testAnAttestationObjectWithAnExtraMemberIsStep13() async {
        var response = registration.response("none", .map(CBORMap()))
        response.attestationObject = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.text("fmt"), .text("none")), .init(.text("attStmt"), .map(CBORMap())),
                    .init(.text("authData"), .bytes(registration.authenticatorData)),
                    .init(.text("epAtt"), .bool(true)),
                ])))
        let error = await refusal(response, registration.expectation)
        XCTAssertEqual(error?.reason, .attestationObjectMalformed("it has members besides fmt, attStmt and authData"))
    }

    func testAuthenticatorDataWithTrailingBytesIsStep13() async {
        var changed = registration
        changed.trailing = [0]
        let result = await step(changed)
        XCTAssertEqual(result?.0, 13)
        XCTAssertEqual(result?.1, .authenticatorDataMalformed(.trailingBytes(count: 1)))
    }

    func testAuthenticatorDataWithoutAnAttestedCredentialIsStep13() async {
        var changed = registration
        changed.flags &= ~0x40
        let result = await step(changed)
        XCTAssertEqual(result?.0, 13)
        XCTAssertEqual(result?.1, .attestedCredentialDataMissing)
    }

    func testARawIDThatIsNotTheAttestedCredentialIsStep13() async {
        var response = registration.response("none", .map(CBORMap()))
        response.credentialID[0] ^= 1
        let error = await refusal(response, registration.expectation)
        XCTAssertEqual(error?.step, 13)
        XCTAssertEqual(error?.reason, .credentialIDMismatch)
    }

    func testAnotherRPIDIsStep14() async {
        var changed = registration
        changed.rpID = "evil.example"
        let result = await step(changed)
        XCTAssertEqual(result?.0, 14)
        XCTAssertEqual(result?.1, .rpIDHashMismatch)
    }

    func testUserNotPresentIsStep15() async {
        var changed = registration
        changed.flags &= ~0x01
        let result = await step(changed)
        XCTAssertEqual(result?.0, 15)
        XCTAssertEqual(result?.1, .userNotPresent)
    }

    func testUserNotPresentIsAcceptedForAConditionalCreate() async {
        var changed = registration
        changed.flags &= ~0x01
        var expectation = changed.expectation
        expectation.conditional = true
        let result = await step(changed, expectation: expectation)
        XCTAssertNil(result.map { "\($0)" })
    }

    func testUserNotVerifiedWhenTheOptionsRequireItIsStep16() async {
        var changed = registration
        changed.flags &= ~0x04
        var expectation = changed.expectation
        expectation.userVerification = .required
        let result = await step(changed, expectation: expectation)
        XCTAssertEqual(result?.0, 16)
        XCTAssertEqual(result?.1, .userNotVerified)
    }

    func testUserNotVerifiedIsStep16UnderTheDefaultPolicy() async {
        var changed = registration
        changed.flags &= ~0x04
        let result = await step(changed, policy: .passkeys)
        XCTAssertEqual(result?.0, 16)
    }

    func testBackedUpWithoutEligibilityIsStep17() async {
        var changed = registration
        changed.flags |= 0x10
        let result = await step(changed)
        XCTAssertEqual(result?.0, 17)
    }

    func testAnAlgorithmNotOfferedIsStep20() async {
        var expectation = registration.expectation
        expectation.algorithms = [.edDSA, .rs256]
        let result = await step(registration, expectation: expectation)
        XCTAssertEqual(result?.0, 20)
        XCTAssertEqual(result?.1, .algorithmNotOffered(-7))
    }

    func testNoAlgorithmsOfferedMeansES256AndRS256() async {
        var expectation = registration.expectation
        expectation.algorithms = []
        let result = await step(registration, expectation: expectation)
        XCTAssertNil(result.map { "\($0)" })
    }

    func testAFormatNameInAnotherCaseIsStep21() async {
        let result = await step(registration, format: "Packed", statement: registration.packedSelf)
        XCTAssertEqual(result?.0, 21)
        XCTAssertEqual(result?.1, .attestationFormatUnsupported("Packed"))
    }

    func testAStatementThatFailsItsFormatIsStep22() async {
        let result = await step(registration, format: "none", statement: registration.packedSelf)
        XCTAssertEqual(result?.0, 22)
        XCTAssertEqual(result?.1, .attestationInvalid(AttestationStatementError("none", .memberUnexpected("alg"))))
    }

    func metadata(_ reports: [StatusReport] = [], roots: [Certificate] = []) -> AttestationTrust {
        let aaguid = registration.aaguid
        let entry = FIDO2Metadata(
            aaguid: aaguid, description: "A test key", attestationRootCertificates: roots.map(TestCA.der), statusReports: reports)
        return AttestationTrust(metadata: { $0 == aaguid ? entry : nil })
    }

    func testAModelTheMetadataServiceRevokedIsStep23WhateverItsAttestation() async {
        let result = await step(registration, trust: metadata([StatusReport(status: .revoked)]))
        XCTAssertEqual(result?.0, 23)
        XCTAssertEqual(result?.1, .authenticatorRevoked("REVOKED"))
    }

    func testARevocationNotYetInForceLetsTheModelRegister() async {
        let result = await step(registration, trust: metadata([StatusReport(status: .revoked, effectiveDate: TestCA.end)]))
        XCTAssertNil(result.map { "\($0)" })
    }

    func testAModelWithoutMetadataIsStep23WhenThePolicyNeedsMetadata() async {
        var policy = lenientPolicy
        policy.allowsAuthenticatorsWithoutMetadata = false
        let result = await step(registration, policy: policy)
        XCTAssertEqual(result?.0, 23)
        XCTAssertEqual(result?.1, .metadataMissing)
    }

    func testTheMetadataOfABoundModelIsReported() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca, aaguidExtension: try TestCA.aaguidExtension(registration.aaguid))
        let result = try await verified(
            registration.response("packed", statement), registration.expectation, trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result.metadata?.description, "A test key")
        XCTAssertTrue(result.modelBound)
    }

    /// `none` names a model nothing signs: its metadata is not the credential's, and cannot satisfy a policy.
    func testTheMetadataOfAnUnboundModelIsNotReported() async throws {
        let result = try await verified(registration.response("none", .map(CBORMap())), registration.expectation, trust: metadata())
        XCTAssertNil(result.metadata)
        XCTAssertFalse(result.modelBound)
    }

    func testAnUnboundModelWithMetadataIsStep23WhenThePolicyNeedsMetadata() async {
        var policy = lenientPolicy
        policy.allowsAuthenticatorsWithoutMetadata = false
        let result = await step(registration, format: "packed", statement: registration.packedSelf, policy: policy, trust: metadata())
        XCTAssertEqual(result?.1, .metadataMissing)
    }

    /// A certificate without the AAGUID extension under an operator's root (a vendor's root that serves several models)
    /// does not bind the AAGUID: an allow-list naming it refuses.
    func testAnAllowListRefusesAModelOnlyAnOperatorRootVouchesForWithoutTheExtension() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca)
        let aaguid = registration.aaguid
        // Metadata not required, so the allow-list is what decides (enterprise would refuse first for metadata).
        let policy = AttestationPolicy(
            requireTrustedAttestation: true, allowedAAGUIDs: [aaguid], allowsAuthenticatorsWithoutMetadata: true,
            requiresUserVerification: false)
        let result = await step(
            registration, format: "packed", statement: statement, policy: policy,
            trust: AttestationTrust(roots: [ca.certificate], metadata: { _ in FIDO2Metadata(aaguid: aaguid, description: "other root") }))
        XCTAssertEqual(result?.1, .authenticatorNotAllowed)
    }

    func testAnAllowListAcceptsACertificateNamingTheModelUnderAnOperatorRoot() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca, aaguidExtension: try TestCA.aaguidExtension(registration.aaguid))
        let aaguid = registration.aaguid
        let result = try await verified(
            registration.response("packed", statement), registration.expectation, policy: .enterprise(allowedAAGUIDs: [aaguid]),
            trust: AttestationTrust(roots: [ca.certificate], metadata: { $0 == aaguid ? FIDO2Metadata(aaguid: aaguid, description: "k") : nil }))
        XCTAssertEqual(result.aaguid, aaguid)
    }

    /// Anyone can make a certificate that names an AAGUID: without a chain to an accepted root it binds nothing.
    func testACertificateNamingTheModelWithoutATrustedChainDoesNotBindIt() async throws {
        let (statement, _) = try PackedFormatTests.full(
            registration, ca: try TestCA(), aaguidExtension: try TestCA.aaguidExtension(registration.aaguid))
        let result = try await verified(registration.response("packed", statement), registration.expectation, trust: metadata())
        XCTAssertFalse(result.modelBound)
        XCTAssertNil(result.metadata)
    }

    func testAnAttestationTypeThePolicyDoesNotAllowIsStep24() async {
        var policy = lenientPolicy
        policy.allowedTypes = [.basic]
        let result = await step(registration, format: "packed", statement: registration.packedSelf, policy: policy)
        XCTAssertEqual(result?.0, 24)
        XCTAssertEqual(result?.1, .attestationTypeNotAllowed(.self))
    }

    func testAnUntrustedAttestationIsStep24WhenTrustIsRequired() async {
        var policy = lenientPolicy
        policy.requireTrustedAttestation = true
        let result = await step(registration, policy: policy)
        XCTAssertEqual(result?.0, 24)
        XCTAssertEqual(result?.1, .attestationNotTrusted)
    }

    func testAModelNotOnTheAllowListIsStep24() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca)
        let policy = AttestationPolicy.enterprise(allowedAAGUIDs: [[UInt8](repeating: 0xBB, count: 16)])
        let result = await step(registration, format: "packed", statement: statement, policy: policy, trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result?.0, 24)
        XCTAssertEqual(result?.1, .authenticatorNotAllowed)
    }

    func testAnAttestationChainingToTheModelsMetadataRootIsTrusted() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca)
        let result = try await verified(
            registration.response("packed", statement), registration.expectation,
            policy: .enterprise(allowedAAGUIDs: [registration.aaguid]), trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result.trustAnchor, ca.certificate)
        XCTAssertEqual(result.attestation.type, .basic)
    }

    func testAMetadataRootOfAnotherModelDoesNotVouchForThisOne() async throws {
        let ca = try TestCA()
        var other = registration
        other.aaguid = [UInt8](repeating: 0xBB, count: 16)
        let (statement, _) = try PackedFormatTests.full(other, ca: ca)
        var policy = lenientPolicy
        policy.requireTrustedAttestation = true
        // The root is the metadata of registration.aaguid, not of 0xBB…
        let result = await step(other, format: "packed", statement: statement, policy: policy, trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result?.1, .attestationNotTrusted)
    }

    func testAnExpiredAttestationCertificateIsNotTrusted() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca, notValidAfter: TestCA.now.addingTimeInterval(-1))
        var policy = lenientPolicy
        policy.requireTrustedAttestation = true
        let result = await step(
            registration, format: "packed", statement: statement, policy: policy, trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertEqual(result?.1, .attestationNotTrusted)
    }

    func testACompromisedAttestationCertificateRefusesOnlyAttestationsCarryingIt() async throws {
        let ca = try TestCA()
        let (statement, leaf) = try PackedFormatTests.full(registration, ca: ca)
        let trust = metadata([StatusReport(status: .attestationKeyCompromise, certificate: leaf)])
        let carrying = await step(registration, format: "packed", statement: statement, trust: trust)
        XCTAssertEqual(carrying?.1, .authenticatorRevoked("ATTESTATION_KEY_COMPROMISE"))
        let (other, _) = try PackedFormatTests.full(registration, ca: ca)
        let notCarrying = await step(registration, format: "packed", statement: other, trust: trust)
        XCTAssertNil(notCarrying.map { "\($0)" })
    }

    // MARK: The conformance policy: none and self accepted, a presented chain only when trusted

    func testTheConformancePolicyAcceptsNoneAndSelf() async throws {
        let none = try await verified(registration.response("none", .map(CBORMap())), registration.expectation, policy: .conformance)
        XCTAssertNil(none.trustAnchor)
        let selfAttested = try await verified(
            registration.response("packed", registration.packedSelf), registration.expectation, policy: .conformance)
        XCTAssertEqual(selfAttested.attestation.type, .self)
    }

    func testTheConformancePolicyAcceptsAChainToTheModelsMetadataRoot() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca)
        let result = try await verified(
            registration.response("packed", statement), registration.expectation, policy: .conformance,
            trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result.trustAnchor, ca.certificate)
    }

    func testTheConformancePolicyRefusesARogueRoot() async throws {
        let (statement, _) = try PackedFormatTests.full(registration, ca: try TestCA(name: "a rogue root"))
        let result = await step(
            registration, format: "packed", statement: statement, policy: .conformance, trust: metadata(roots: [try TestCA().certificate]))
        XCTAssertEqual(result?.1, .attestationNotTrusted)
    }

    func testTheConformancePolicyRefusesAnExpiredLeaf() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca, notValidAfter: TestCA.now.addingTimeInterval(-1))
        let result = await step(registration, format: "packed", statement: statement, policy: .conformance, trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result?.1, .attestationNotTrusted)
    }

    func testTheConformancePolicyRefusesALeafNotYetValid() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca, notValidBefore: TestCA.now.addingTimeInterval(60))
        let result = await step(registration, format: "packed", statement: statement, policy: .conformance, trust: metadata(roots: [ca.certificate]))
        XCTAssertEqual(result?.1, .attestationNotTrusted)
    }

    /// Metadata is required only where a chain names a model: a trusted chain for an AAGUID the service does not know.
    func testTheConformancePolicyNeedsMetadataForTheModelAChainNames() async throws {
        let ca = try TestCA()
        let (statement, _) = try PackedFormatTests.full(registration, ca: ca)
        let result = await step(
            registration, format: "packed", statement: statement, policy: .conformance, trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertEqual(result?.1, .metadataMissing)
        var unnamed = registration
        unnamed.aaguid = AAGUID.zero
        let (anonymous, _) = try PackedFormatTests.full(unnamed, ca: ca)
        let accepted = await step(
            unnamed, format: "packed", statement: anonymous, policy: .conformance, trust: AttestationTrust(roots: [ca.certificate]))
        XCTAssertNil(accepted.map { "\($0)" }, "a chain that names no model needs no metadata")
    }

    /// GHSA-6hxq-p678-4hr2: a self-signed leaf, alone or with its own "root" in `x5c`, is no trust anchor. Only a
    /// configured root or a model's metadata root is.
    func testASelfSignedLeafIsNotItsOwnRoot() async throws {
        let batch = P256.Signing.PrivateKey()
        let subject = try TestCA.packedSubject()
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(batch.publicKey), notValidBefore: TestCA.start, notValidAfter: TestCA.end,
            issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init { Critical(BasicConstraints.notCertificateAuthority) }, issuerPrivateKey: .init(batch))
        let signature = try batch.signature(for: registration.signedData)
        let rogue = try TestCA(name: "a root the attacker made")
        for x5c in [[CBOR.bytes(TestCA.der(leaf))], [.bytes(TestCA.der(leaf)), .bytes(TestCA.der(rogue.certificate))]] {
            let statement = statement(["alg": .int(-7), "sig": der(signature), "x5c": .array(x5c)])
            let passkeys = try await verified(registration.response("packed", statement), registration.expectation)
            XCTAssertNil(passkeys.trustAnchor, "x5c of \(x5c.count)")
            let conformance = await step(registration, format: "packed", statement: statement, policy: .conformance)
            XCTAssertEqual(conformance?.1, .attestationNotTrusted, "x5c of \(x5c.count)")
        }
    }

    func testACredentialIDOf1024BytesIsStep25() async {
        var changed = registration
        changed.credentialID = [UInt8](repeating: 7, count: 1024)
        let result = await step(changed)
        XCTAssertEqual(result?.0, 25)
        XCTAssertEqual(result?.1, .authenticatorDataMalformed(.credentialIDTooLong(length: 1024)))
    }

    /// One size rule for the stored key: a key over ``COSEKey/maximumEncodedBytes`` is refused at registration, as
    /// it would be at every sign-in. Before, a padded key registered and could then never sign in.
    func testACredentialKeyOverTheSizeRuleIsStep13() async throws {
        var changed = registration
        let key = changed.credentialKey.publicKey
        let padding = [UInt8](repeating: 0, count: COSEKey.maximumEncodedBytes)
        changed.coseKey = CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.int(1), .int(2)), .init(.int(3), .int(-7)), .init(.int(-1), .int(1)),
                    .init(.int(-2), .bytes(Array(key.rawRepresentation.prefix(32)))),
                    .init(.int(-3), .bytes(Array(key.rawRepresentation.suffix(32)))),
                    .init(.int(99), .bytes(padding)),
                ])))
        let result = await step(changed)
        XCTAssertEqual(result?.0, 13)
        XCTAssertEqual(
            result?.1, .authenticatorDataMalformed(.credentialPublicKey(.malformed(CBORError(.tooLarge(limit: COSEKey.maximumEncodedBytes), at: 0)))))
        // The same key without its padding registers, and reads back as the sign-in reads it.
        let verified = try await verified(registration.response("none", .map(CBORMap())), registration.expectation)
        XCTAssertNoThrow(try COSEKey(bytes: verified.publicKey.encoded))
    }

    func testUnrequestedExtensionOutputsAreReportedNotRefused() async throws {
        var changed = registration
        changed.flags |= 0x80
        changed.trailing = CBOREncoder.encode(.map(CBORMap([.init(.text("credProtect"), .int(2))])))
        let result = try await verified(changed.response("none", .map(CBORMap())), changed.expectation)
        XCTAssertEqual(result.extensions, ["credProtect"])
    }

    func testEveryReasonNamesItsStepInItsDescription() async {
        var changed = registration
        changed.rpID = "evil.example"
        let error = await refusal(changed.response("none", .map(CBORMap())), changed.expectation)
        XCTAssertEqual(error.map { "\($0)" }, "registration (WebAuthn §7.1 step 14): the authenticator data is for another RP ID")
    }
}
