import Crypto
import Foundation
import Primitives
import XCTest

@testable import UAF

/// The FIDO UAF 1.1 spec example messages (shared/vectors).
final class SpecVectorTests: XCTestCase {
    func loadVector(_ name: String) throws -> Data {
        try Data(contentsOf: try XCTUnwrap(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors")))
    }

    func testRegistrationExampleDecodesToTheDocumentedFields() throws {
        let response = try JSONDecoder().decode([RegistrationResponse].self, from: loadVector("spec-example-reg-response"))[0]
        XCTAssertEqual(response.header.op, .registration)
        XCTAssertEqual(response.header.upv, .uaf11)
        XCTAssertEqual(response.header.appID, "https://uaf-test-1.noknoktest.com:8443/SampleApp/uaf/facets")
        let params = try XCTUnwrap(FinalChallengeParams.decode(fcParams: response.fcParams))
        XCTAssertEqual(params.challenge, "H9iW9yA9aAXF_lelQoi_DhUk514Ad8Tqv0zCnCqKDpo")
        XCTAssertEqual(params.facetID, "com.noknok.android.sampleapp")
        XCTAssertEqual(
            FinalChallengeParams.hash(fcParams: response.fcParams),
            hex("f6d073642eb879c81540119241be50b4420f0bcf956afe07b072d90df94b6ae8"))

        let assertion = try RegistrationAssertion(bytes: Array(try XCTUnwrap(Base64URL.decode(response.assertions[0].assertion))))
        let krd = assertion.keyRegistrationData
        XCTAssertEqual(krd.aaid, "ABCD#ABCD")
        XCTAssertEqual(krd.authenticatorVersion, 256)
        XCTAssertEqual(krd.authenticationMode, 1)
        XCTAssertEqual(krd.signatureAlgorithm, .secp256r1ECDSASHA256Raw)
        XCTAssertEqual(krd.publicKeyEncoding, .eccX962Raw)
        XCTAssertEqual(Base64URL.encode(krd.keyID), "ZMCPn92yHv1Ip-iCiBb6i4ADq6ZOv569KFQCvYSJfNg")
        XCTAssertEqual(krd.signCounter, 1)
        XCTAssertEqual(krd.registrationCounter, 1)
        XCTAssertEqual(krd.finalChallengeHash, FinalChallengeParams.hash(fcParams: response.fcParams))
        XCTAssertEqual(krd.publicKey.count, 65)
        XCTAssertEqual(assertion.signedBytes.count, 181)
        guard case .basicFull(let signature, let certificates) = assertion.attestation else { return XCTFail("expected full attestation") }
        XCTAssertEqual(signature.count, 64)
        XCTAssertEqual(certificates.count, 1)
        XCTAssertEqual(certificates[0].count, 493)
        // Re-encoding the parsed KRD gives back the exact bytes.
        XCTAssertEqual(try krd.encoded(), assertion.signedBytes)
    }

    func testRegistrationExampleAttestationSignatureVerifiesWithTheCertificateKey() async throws {
        let response = try JSONDecoder().decode([RegistrationResponse].self, from: loadVector("spec-example-reg-response"))[0]
        let assertion = try RegistrationAssertion(bytes: Array(Base64URL.decode(response.assertions[0].assertion)!))
        guard case .basicFull(_, let certificates) = assertion.attestation else { return XCTFail() }
        // Full verification with the certificate as the metadata root, at a time inside its validity period.
        let metadata = try UAFMetadata([
            MetadataStatement(
                aaid: "ABCD#ABCD", description: "spec example", attestationRootCertificates: [Data(certificates[0]).base64EncodedString()],
                attestationTypes: [15879], userVerificationDetails: [[.init(userVerification: 2)]], authenticationAlgorithm: 1,
                authenticatorVersion: 256, keyProtection: 2, matcherProtection: 2, publicKeyAlgAndEncoding: 256)
        ])
        let configuration = RelyingPartyConfiguration(
            appID: "https://uaf-test-1.noknoktest.com:8443/SampleApp/uaf/facets", trustedFacetIDs: ["com.noknok.android.sampleapp"])
        let verifier = RegistrationVerifier(configuration: configuration, metadata: metadata)
        let issued = IssuedRegistration(
            challenge: "H9iW9yA9aAXF_lelQoi_DhUk514Ad8Tqv0zCnCqKDpo", username: "spec",
            policy: Policy(accepted: [[MatchCriteria(aaid: ["ABCD#ABCD"])]]))
        let inValidity = ISO8601DateFormatter().date(from: "2015-06-01T00:00:00Z")!
        let verified = try await verifier.verify(response, issued: issued, now: inValidity, isRegistered: { _, _ in false })
        XCTAssertEqual(verified.first?.keyID, "ZMCPn92yHv1Ip-iCiBb6i4ADq6ZOv569KFQCvYSJfNg")
        XCTAssertEqual(verified.first?.attestationType, .basicFull)
        // Today the certificate has expired (2017-05-24): a strict server rejects it with 1496.
        await assertRejected(status: .unacceptableAttestation) {
            _ = try await verifier.verify(response, issued: issued, now: Date(), isRegistered: { _, _ in false })
        }
    }

    func testAuthenticationExampleDecodesAndItsSignatureVerifiesWithTheRegistrationKey() async throws {
        let reg = try JSONDecoder().decode([RegistrationResponse].self, from: loadVector("spec-example-reg-response"))[0]
        let regAssertion = try RegistrationAssertion(bytes: Array(Base64URL.decode(reg.assertions[0].assertion)!))
        let response = try JSONDecoder().decode([AuthenticationResponse].self, from: loadVector("spec-example-auth-response"))[0]
        XCTAssertEqual(
            FinalChallengeParams.hash(fcParams: response.fcParams),
            hex("5c02533f9d3ae69f5ca5c92db914ac8ce3014ea80db3fc07d88b4119827f9f1f"))
        let assertion = try AuthenticationAssertion(bytes: Array(Base64URL.decode(response.assertions[0].assertion)!))
        let signed = assertion.signedData
        XCTAssertEqual(signed.aaid, "ABCD#ABCD")
        XCTAssertEqual(signed.authenticationMode, 1)
        XCTAssertEqual(signed.signatureAlgorithm, .secp256r1ECDSASHA256Raw)
        XCTAssertEqual(signed.signCounter, 2)
        XCTAssertEqual(signed.authenticatorNonce.count, 32)
        XCTAssertEqual(signed.transactionContentHash, [])
        XCTAssertEqual(signed.finalChallengeHash, FinalChallengeParams.hash(fcParams: response.fcParams))
        XCTAssertEqual(assertion.signedBytes.count, 146)
        let key = try XCTUnwrap(UAFPublicKey(bytes: regAssertion.keyRegistrationData.publicKey, encoding: .eccX962Raw))
        XCTAssertTrue(
            SignatureSuite.verify(signature: assertion.signature, over: assertion.signedBytes, algorithm: .secp256r1ECDSASHA256Raw, key: key))
        // The signature covers the header too: over the value alone it does not verify.
        XCTAssertFalse(
            SignatureSuite.verify(
                signature: assertion.signature, over: Array(assertion.signedBytes.dropFirst(4)), algorithm: .secp256r1ECDSASHA256Raw, key: key))
        XCTAssertEqual(try signed.encoded(), assertion.signedBytes)

        // And the whole response verifies as the relying party would.
        let configuration = RelyingPartyConfiguration(
            appID: "https://uaf-test-1.noknoktest.com:8443/SampleApp/uaf/facets", trustedFacetIDs: ["com.noknok.android.sampleapp"])
        let verified = try await AuthenticationVerifier(configuration: configuration, metadata: testMetadata).verify(
            response,
            issued: IssuedAuthentication(
                challenge: "HQ1VkTUQC1NJDOo6OOWdxewrb9i5WthjfKIehFxpeuU",
                policy: Policy(accepted: [[MatchCriteria(aaid: ["ABCD#ABCD"])]])),
            lookup: { aaid, keyID in
                RegisteredKey(
                    aaid: aaid, keyID: keyID, username: "spec", publicKey: regAssertion.keyRegistrationData.publicKey,
                    publicKeyEncoding: .eccX962Raw, signCounter: 1)
            })
        XCTAssertEqual(verified.first?.signCounter, 2)
    }
}
