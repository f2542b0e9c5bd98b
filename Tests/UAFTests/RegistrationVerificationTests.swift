import Crypto
import Foundation
import Primitives
import XCTest

@testable import UAF

final class RegistrationVerificationTests: XCTestCase {
    let verifier = RegistrationVerifier(configuration: testConfiguration, metadata: testMetadata)

    func verify(
        _ builder: TestRegistrationBuilder, isRegistered: @escaping (String, String) -> Bool = { _, _ in false }
    ) async throws -> [VerifiedRegistration] {
        try await verifier.verify(try builder.build(), issued: builder.issued, isRegistered: isRegistered)
    }

    func testAValidSurrogateRegistrationVerifies() async throws {
        let builder = TestRegistrationBuilder()
        let result = try await verify(builder)
        XCTAssertEqual(result.count, 1)
        XCTAssertEqual(result[0].aaid, "F1D0#1001")
        XCTAssertEqual(result[0].keyID, Base64URL.encode(builder.keyID))
        XCTAssertEqual(result[0].publicKeyEncoding, .eccX962DER)
        XCTAssertEqual(result[0].attestationType, .basicSurrogate)
        XCTAssertEqual(result[0].username, "alice")
    }

    func testARawSignatureRegistrationVerifies() async throws {
        var builder = TestRegistrationBuilder()
        builder.aaid = "ABCD#ABCD"
        builder.algorithm = .secp256r1ECDSASHA256Raw
        builder.keyEncoding = .eccX962Raw
        builder.authenticatorVersion = 256
        let issued = IssuedRegistration(
            challenge: builder.issued.challenge, username: "bob", policy: Policy(accepted: [[MatchCriteria(aaid: ["abcd#abcd"])]]))
        let result = try await verifier.verify(try builder.build(), issued: issued, isRegistered: { _, _ in false })
        XCTAssertEqual(result[0].signatureAlgorithm, .secp256r1ECDSASHA256Raw)
    }

    func testRegistrationFailsIfAttestationSignatureIsTampered() async throws {
        var builder = TestRegistrationBuilder()
        builder.tamperSignature = true
        await assertRejected(.attestationSignatureInvalid, status: .unacceptableAttestation) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfFinalChallengeHashIsWrong() async throws {
        var builder = TestRegistrationBuilder()
        builder.finalChallengeHash = Array(repeating: 0xAB, count: 32)
        await assertRejected(.finalChallengeHashMismatch, status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfChallengeIsNotTheIssuedOne() async throws {
        var builder = TestRegistrationBuilder()
        builder.challenge = "b3RoZXItY2hhbGxlbmdl"
        await assertRejected(.challengeMismatch, status: .requestInvalid) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfAppIDIsWrong() async throws {
        var builder = TestRegistrationBuilder()
        builder.appID = "https://evil.example.com/facets"
        await assertRejected(.appIDMismatch("https://evil.example.com/facets"), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfFacetIDIsNotTrusted() async throws {
        var builder = TestRegistrationBuilder()
        builder.facetID = "ios:bundle-id:com.evil.app"
        await assertRejected(.untrustedFacetID("ios:bundle-id:com.evil.app"), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfAAIDIsUnknown() async throws {
        var builder = TestRegistrationBuilder()
        builder.aaid = "FFFF#0001"
        await assertRejected(.unknownAAID("FFFF#0001"), status: .unknownAAID) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfKeyIDIsAlreadyRegistered() async throws {
        let builder = TestRegistrationBuilder()
        await assertRejected(.keyIDAlreadyRegistered, status: .unacceptableKey) {
            _ = try await self.verify(builder, isRegistered: { _, _ in true })
        }
    }

    func testRegistrationFailsIfAlgorithmIsNotInTheMetadata() async throws {
        var builder = TestRegistrationBuilder()
        builder.algorithm = .secp256r1ECDSASHA256Raw
        await assertRejected(.algorithmNotAllowed(.secp256r1ECDSASHA256Raw), status: .unacceptableAlgorithm) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfKeyEncodingIsNotInTheMetadata() async throws {
        var builder = TestRegistrationBuilder()
        builder.keyEncoding = .eccX962Raw
        await assertRejected(.keyEncodingNotAllowed(.eccX962Raw), status: .unacceptableKey) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfModeIsNotUserVerified() async throws {
        var builder = TestRegistrationBuilder()
        builder.mode = 2
        await assertRejected(.invalidAuthenticationMode(2), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfAuthenticatorVersionIsBelowTheMetadata() async throws {
        var builder = TestRegistrationBuilder()
        builder.authenticatorVersion = 0
        await assertRejected(.authenticatorVersionTooLow(found: 0, minimum: 1), status: .unacceptableAuthenticator) {
            _ = try await self.verify(builder)
        }
    }

    func testRegistrationFailsIfPolicyIsNotSatisfied() async throws {
        let builder = TestRegistrationBuilder()
        let issued = IssuedRegistration(
            challenge: builder.issued.challenge, username: "alice",
            policy: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1002"])]]))
        await assertRejected(.policyNotSatisfied, status: .unacceptableAuthenticator) {
            _ = try await self.verifier.verify(try builder.build(), issued: issued, isRegistered: { _, _ in false })
        }
    }

    func testRegistrationFailsIfTheAuthenticatorIsDisallowed() async throws {
        let builder = TestRegistrationBuilder()
        let issued = IssuedRegistration(
            challenge: builder.issued.challenge, username: "alice",
            policy: Policy(accepted: pinPolicy.accepted, disallowed: [MatchCriteria(aaid: ["F1D0#1001"])]))
        await assertRejected(.policyNotSatisfied, status: .unacceptableAuthenticator) {
            _ = try await self.verifier.verify(try builder.build(), issued: issued, isRegistered: { _, _ in false })
        }
    }

    func testRegistrationFailsIfTheKeyIDIsDisallowed() async throws {
        let builder = TestRegistrationBuilder()
        let disallowed = MatchCriteria(aaid: ["F1D0#1001"], keyIDs: [Base64URL.encode(builder.keyID)])
        let issued = IssuedRegistration(
            challenge: builder.issued.challenge, username: "alice",
            policy: Policy(accepted: pinPolicy.accepted, disallowed: [disallowed]))
        await assertRejected(.policyNotSatisfied, status: .unacceptableAuthenticator) {
            _ = try await self.verifier.verify(try builder.build(), issued: issued, isRegistered: { _, _ in false })
        }
    }

    func testRegistrationPassesIfOnlyAnotherKeyIDIsDisallowed() async throws {
        let builder = TestRegistrationBuilder()
        let disallowed = MatchCriteria(aaid: ["F1D0#1001"], keyIDs: [Base64URL.encode(Array(repeating: 1, count: 32))])
        let issued = IssuedRegistration(
            challenge: builder.issued.challenge, username: "alice",
            policy: Policy(accepted: pinPolicy.accepted, disallowed: [disallowed]))
        let result = try await verifier.verify(try builder.build(), issued: issued, isRegistered: { _, _ in false })
        XCTAssertEqual(result.count, 1)
    }

    func testRegistrationFailsIfTheKeyIDIsShorterThan32Bytes() async throws {
        var builder = TestRegistrationBuilder()
        builder.keyID = Array(repeating: 7, count: 31)
        await assertRejected(status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    static let observed = ExpectedChannelBinding(serverEndPoint: "c2VydmVyLWNlcnQtaGFzaA", tlsServerCertificate: "c2VydmVyLWNlcnQ")

    /// A verifier expecting the ``observed`` certificate, and `previous` ones replaced lately.
    func bindingVerifier(previous: [ExpectedChannelBinding] = []) -> RegistrationVerifier {
        var configuration = testConfiguration
        configuration.channelBinding = Self.observed
        configuration.channelBinding?.previous = previous
        return RegistrationVerifier(configuration: configuration, metadata: testMetadata)
    }

    func testRegistrationPassesIfTheChannelBindingMatchesTheServerCertificate() async throws {
        var builder = TestRegistrationBuilder()
        builder.channelBinding = ChannelBinding(
            serverEndPoint: Self.observed.serverEndPoint, tlsServerCertificate: Self.observed.tlsServerCertificate)
        let result = try await bindingVerifier().verify(try builder.build(), issued: builder.issued, isRegistered: { _, _ in false })
        XCTAssertEqual(result.count, 1)
    }

    func testRegistrationPassesIfTheClientSendsNoChannelBinding() async throws {
        let builder = TestRegistrationBuilder()
        let result = try await bindingVerifier().verify(try builder.build(), issued: builder.issued, isRegistered: { _, _ in false })
        XCTAssertEqual(result.count, 1)
    }

    func testRegistrationFailsIfServerEndPointNamesAnotherCertificate() async throws {
        var builder = TestRegistrationBuilder()
        builder.channelBinding = ChannelBinding(serverEndPoint: "cHJveHktY2VydC1oYXNo")
        await assertRejected(.channelBindingMismatch, status: .channelBindingRefused) {
            _ = try await self.bindingVerifier().verify(try builder.build(), issued: builder.issued, isRegistered: { _, _ in false })
        }
    }

    func testRegistrationFailsIfTLSServerCertificateIsAnotherCertificate() async throws {
        var builder = TestRegistrationBuilder()
        builder.channelBinding = ChannelBinding(tlsServerCertificate: "cHJveHktY2VydA")
        await assertRejected(.channelBindingMismatch, status: .channelBindingRefused) {
            _ = try await self.bindingVerifier().verify(try builder.build(), issued: builder.issued, isRegistered: { _, _ in false })
        }
    }

    static let replaced = ExpectedChannelBinding(serverEndPoint: "b2xkLWNlcnQtaGFzaA", tlsServerCertificate: "b2xkLWNlcnQ")

    func testRegistrationPassesIfTheChannelBindingNamesThePreviousCertificate() async throws {
        var builder = TestRegistrationBuilder()
        builder.channelBinding = ChannelBinding(
            serverEndPoint: Self.replaced.serverEndPoint, tlsServerCertificate: Self.replaced.tlsServerCertificate)
        let result = try await bindingVerifier(previous: [Self.replaced]).verify(
            try builder.build(), issued: builder.issued, isRegistered: { _, _ in false })
        XCTAssertEqual(result.count, 1)
    }

    func testRegistrationFailsIfTheChannelBindingMixesTheCurrentAndThePreviousCertificate() async throws {
        var builder = TestRegistrationBuilder()
        // Each field names a certificate the server accepts, but not the same one: no TLS channel looks like that.
        builder.channelBinding = ChannelBinding(
            serverEndPoint: Self.observed.serverEndPoint, tlsServerCertificate: Self.replaced.tlsServerCertificate)
        await assertRejected(.channelBindingMismatch, status: .channelBindingRefused) {
            _ = try await self.bindingVerifier(previous: [Self.replaced]).verify(
                try builder.build(), issued: builder.issued, isRegistered: { _, _ in false })
        }
    }

    func testRegistrationFailsIfVersionIsUnsupported() async throws {
        var builder = TestRegistrationBuilder()
        builder.upv = Version(major: 1, minor: 0)
        await assertRejected(.unsupportedVersion(Version(major: 1, minor: 0)), status: .badRequest) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfAssertionSchemeIsUnknown() async throws {
        var builder = TestRegistrationBuilder()
        builder.assertionScheme = "WAV1CBOR"
        await assertRejected(.unsupportedAssertionScheme("WAV1CBOR"), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfTLVIsTruncated() async throws {
        var builder = TestRegistrationBuilder()
        builder.mutateAssertion = { $0.removeLast() }
        await assertRejected(status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testRegistrationFailsIfTLVIsOverLong() async throws {
        var builder = TestRegistrationBuilder()
        builder.mutateAssertion = { $0.append(0) }
        await assertRejected(.malformedAssertion(TLVError.trailingBytes(count: 1)), status: .unacceptableContent) {
            _ = try await self.verify(builder)
        }
    }

    func testRegistrationFailsIfAnUnknownCriticalTagIsPresent() async throws {
        var builder = TestRegistrationBuilder()
        builder.mutateAssertion = { bytes in
            // Insert an unknown critical leaf tag 0x2EFF inside the KRD and fix up both lengths.
            let extra: [UInt8] = [0xFF, 0x2E, 0x01, 0x00, 0x42]
            bytes.insert(contentsOf: extra, at: 8)
            func bump(_ at: Int) {
                let v = Int(bytes[at]) | Int(bytes[at + 1]) << 8 + extra.count
                bytes[at] = UInt8(v & 0xFF)
                bytes[at + 1] = UInt8(v >> 8)
            }
            bump(2)
            bump(6)
        }
        await assertRejected(.malformedAssertion(TLVError.unknownCriticalTag(TLVTag(0x2EFF))), status: .unacceptableContent) {
            _ = try await self.verify(builder)
        }
    }

    func testRegistrationFailsIfFCParamsIsNotJSON() async throws {
        var response = try TestRegistrationBuilder().build()
        response.fcParams = "not-json"
        await assertRejected(.malformedFinalChallengeParams, status: .unacceptableContent) {
            _ = try await self.verifier.verify(response, issued: TestRegistrationBuilder().issued, isRegistered: { _, _ in false })
        }
    }

    func testRegistrationFailsWithNoAssertions() async throws {
        var response = try TestRegistrationBuilder().build()
        response.assertions = []
        await assertRejected(.noAssertions, status: .unacceptableContent) {
            _ = try await self.verifier.verify(response, issued: TestRegistrationBuilder().issued, isRegistered: { _, _ in false })
        }
    }
}
