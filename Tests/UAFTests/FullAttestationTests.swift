import Crypto
import Foundation
import Primitives
import SwiftASN1
import X509
import XCTest

@testable import UAF

/// Full basic attestation with a generated chain: attestation certificate issued by a root the metadata lists.
final class FullAttestationTests: XCTestCase {
    struct Authority {
        let key: P256.Signing.PrivateKey
        let certificate: Certificate
        var der: [UInt8] {
            var s = DER.Serializer()
            try! s.serialize(certificate)
            return s.serializedBytes
        }
    }

    static func makeRoot(name: String, maxPathLength: Int = 1) throws -> Authority {
        let key = P256.Signing.PrivateKey()
        let dn = try DistinguishedName { CommonName(name) }
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: Date().addingTimeInterval(365 * 86400),
            issuer: dn, subject: dn, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: maxPathLength))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(key))
        return Authority(key: key, certificate: certificate)
    }

    static func makeAttestation(issuer: Authority, notAfter: Date = Date().addingTimeInterval(86400)) throws -> (P256.Signing.PrivateKey, [UInt8]) {
        let key = P256.Signing.PrivateKey()
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey),
            notValidBefore: Date().addingTimeInterval(-3600), notValidAfter: notAfter,
            issuer: issuer.certificate.subject, subject: try DistinguishedName { CommonName("Attestation F1D0#2001") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init { Critical(BasicConstraints.notCertificateAuthority) }, issuerPrivateKey: .init(issuer.key))
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return (key, serializer.serializedBytes)
    }

    /// A registration of `uauth` (a fresh key by default) whose attestation `attestationKey` signs, with `chain`.
    static func response(
        attestationKey: P256.Signing.PrivateKey, chain: [[UInt8]], uauth: P256.Signing.PrivateKey = P256.Signing.PrivateKey()
    ) throws -> RegistrationResponse {
        let fc = try FinalChallengeParams(appID: testAppID, challenge: "Y2hhbGxlbmdl", facetID: testFacetID).encodedFCParams()
        let krd = KeyRegistrationData(
            aaid: "F1D0#2001", authenticatorVersion: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER,
            publicKeyEncoding: .eccX962DER, finalChallengeHash: FinalChallengeParams.hash(fcParams: fc),
            keyID: Array(repeating: 4, count: 32), signCounter: 0, registrationCounter: 1,
            publicKey: Array(uauth.publicKey.derRepresentation))
        let assertion = try AssertionBuilder.registration(
            krd, attestationCertificates: chain,
            sign: AssertionBuilder.p256Signer(attestationKey, algorithm: .secp256r1ECDSASHA256DER))
        return RegistrationResponse(
            header: OperationHeader(op: .registration, appID: testAppID, serverData: "s"), fcParams: fc,
            assertions: [AuthenticatorRegistrationAssertion(assertion: Base64URL.encode(assertion))])
    }

    static func metadata(roots: [Authority]) throws -> UAFMetadata {
        try UAFMetadata([
            MetadataStatement(
                aaid: "F1D0#2001", description: "hardware-backed test authenticator",
                attestationRootCertificates: roots.map { Data($0.der).base64EncodedString() }, attestationTypes: [15879],
                userVerificationDetails: [[.init(userVerification: 2)]], authenticationAlgorithm: 2, keyProtection: 6,
                matcherProtection: 2, publicKeyAlgAndEncoding: 257)
        ])
    }

    func verifier(roots: [Authority]) throws -> RegistrationVerifier {
        RegistrationVerifier(configuration: testConfiguration, metadata: try Self.metadata(roots: roots))
    }

    static let issued = IssuedRegistration(
        challenge: "Y2hhbGxlbmdl", username: "alice", policy: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#2001"])]]))

    func testAChainToAMetadataRootVerifies() async throws {
        let root = try Self.makeRoot(name: "Vendor Root")
        let (key, leaf) = try Self.makeAttestation(issuer: root)
        let result = try await verifier(roots: [root]).verify(
            try Self.response(attestationKey: key, chain: [leaf]), issued: Self.issued, isRegistered: { _, _ in false })
        XCTAssertEqual(result.first?.attestationType, .basicFull)
    }

    func testAChainToAnotherRootIsRejectedWith1496() async throws {
        let root = try Self.makeRoot(name: "Vendor Root")
        let other = try Self.makeRoot(name: "Other Root")
        let (key, leaf) = try Self.makeAttestation(issuer: other)
        await assertRejected(status: .unacceptableAttestation) {
            _ = try await self.verifier(roots: [root]).verify(
                try Self.response(attestationKey: key, chain: [leaf]), issued: Self.issued, isRegistered: { _, _ in false })
        }
    }

    func testAnExpiredAttestationCertificateIsRejectedWith1496() async throws {
        let root = try Self.makeRoot(name: "Vendor Root")
        let (key, leaf) = try Self.makeAttestation(issuer: root, notAfter: Date().addingTimeInterval(-60))
        await assertRejected(status: .unacceptableAttestation) {
            _ = try await self.verifier(roots: [root]).verify(
                try Self.response(attestationKey: key, chain: [leaf]), issued: Self.issued, isRegistered: { _, _ in false })
        }
    }

    func testASignatureByAnotherKeyThanTheCertificatesIsRejectedWith1496() async throws {
        let root = try Self.makeRoot(name: "Vendor Root")
        let (_, leaf) = try Self.makeAttestation(issuer: root)
        await assertRejected(.attestationSignatureInvalid, status: .unacceptableAttestation) {
            _ = try await self.verifier(roots: [root]).verify(
                try Self.response(attestationKey: P256.Signing.PrivateKey(), chain: [leaf]), issued: Self.issued, isRegistered: { _, _ in false })
        }
    }

    func testSurrogateAttestationIsRejectedWhenTheMetadataAllowsOnlyFull() async throws {
        let root = try Self.makeRoot(name: "Vendor Root")
        var builder = TestRegistrationBuilder()
        builder.aaid = "F1D0#2001"
        builder.challenge = "Y2hhbGxlbmdl"
        await assertRejected(.attestationTypeNotAllowed(.basicSurrogate), status: .unacceptableAttestation) {
            _ = try await self.verifier(roots: [root]).verify(try builder.build(), issued: Self.issued, isRegistered: { _, _ in false })
        }
    }
}
