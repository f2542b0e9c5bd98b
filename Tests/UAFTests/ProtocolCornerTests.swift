import Crypto
import Foundation
import Primitives
import XCTest

@testable import UAF

/// The protocol corners a real client or a hostile one reaches: ECDAA attestation, another user's key with a
/// forged signature, extensions marked `fail_if_unknown`, and authenticators that keep no counter.
final class ProtocolCornerTests: XCTestCase {
    let key = P256.Signing.PrivateKey()

    /// Turns the surrogate attestation block (tag 0x3E08, right after the KRD) into an ECDAA one (0x3E09).
    static func asECDAA(_ bytes: inout [UInt8]) {
        let krdLength = Int(bytes[6]) | Int(bytes[7]) << 8
        precondition(bytes[8 + krdLength] == 0x08 && bytes[9 + krdLength] == 0x3E)
        bytes[8 + krdLength] = 0x09
    }

    func register(
        _ builder: TestRegistrationBuilder, configuration: RelyingPartyConfiguration = testConfiguration,
        metadata: UAFMetadata = testMetadata, change: (inout RegistrationResponse) -> Void = { _ in }
    ) async throws {
        var response = try builder.build()
        change(&response)
        _ = try await RegistrationVerifier(configuration: configuration, metadata: metadata)
            .verify(response, issued: builder.issued) { _, _ in false }
    }

    func authenticate(
        _ builder: TestAuthenticationBuilder, configuration: RelyingPartyConfiguration = testConfiguration,
        issued: IssuedAuthentication = TestAuthenticationBuilder.issued(), stored: RegisteredKey,
        change: (inout AuthenticationResponse) -> Void = { _ in }
    ) async throws -> [VerifiedAuthentication] {
        var response = try builder.build()
        change(&response)
        return try await AuthenticationVerifier(configuration: configuration, metadata: testMetadata)
            .verify(response, issued: issued) { _, _ in stored }
    }

    // MARK: ECDAA

    func testECDAAAttestationTheMetadataDoesNotListAnswers1496() async {
        var builder = TestRegistrationBuilder()
        builder.mutateAssertion = Self.asECDAA
        await assertRejected(.attestationTypeNotAllowed(.ecdaa), status: .unacceptableAttestation) { try await self.register(builder) }
    }

    func testECDAAAttestationTheMetadataListsAnswers1496() async throws {
        let metadata = try UAFMetadata([
            MetadataStatement(
                aaid: "F1D0#1001", description: "iOS PIN with ECDAA", attestationTypes: [15880, 15881],
                userVerificationDetails: [[.init(userVerification: 4)]], authenticationAlgorithm: 2,
                keyProtection: 1, matcherProtection: 1, publicKeyAlgAndEncoding: 257)
        ])
        var builder = TestRegistrationBuilder()
        builder.mutateAssertion = Self.asECDAA
        await assertRejected(.attestationTypeNotSupported(.ecdaa), status: .unacceptableAttestation) {
            try await self.register(builder, metadata: metadata)
        }
    }

    // MARK: Signature before the key's owner

    func testAnotherUsersKeyWithAForgedSignatureAnswersSignatureInvalid() async {
        // Whoever does not hold the key learns nothing about whose it is: 1498, as for any forged signature.
        var builder = TestAuthenticationBuilder(key: key)
        builder.tamperSignature = true
        let issued = IssuedAuthentication(challenge: TestAuthenticationBuilder.issued().challenge, policy: pinPolicy, username: "bob")
        await assertRejected(.signatureInvalid, status: .unacceptableContent) {
            _ = try await self.authenticate(builder, issued: issued, stored: builder.registered())
        }
    }

    func testAnotherUsersKeyWithAValidSignatureAnswers1401() async {
        let builder = TestAuthenticationBuilder(key: key)
        let issued = IssuedAuthentication(challenge: TestAuthenticationBuilder.issued().challenge, policy: pinPolicy, username: "bob")
        await assertRejected(.keyIDBelongsToAnotherUser, status: .unauthorized) {
            _ = try await self.authenticate(builder, issued: issued, stored: builder.registered())
        }
    }

    // MARK: fail_if_unknown

    func testARequiredUnknownHeaderExtensionIsRefused() async {
        await assertRejected(.unknownRequiredExtension("com.example.must"), status: .unacceptableContent) {
            try await self.register(TestRegistrationBuilder()) {
                $0.header.exts = [Extension(id: "com.example.must", data: "AA", failIfUnknown: true)]
            }
        }
    }

    func testARequiredUnknownAssertionExtensionIsRefused() async {
        let builder = TestAuthenticationBuilder(key: key)
        await assertRejected(.unknownRequiredExtension("com.example.must"), status: .unacceptableContent) {
            _ = try await self.authenticate(builder, stored: builder.registered()) {
                $0.assertions[0].exts = [Extension(id: "com.example.must", data: "AA", failIfUnknown: true)]
            }
        }
    }

    func testARequiredUnknownRegistrationAssertionExtensionIsRefused() async {
        await assertRejected(.unknownRequiredExtension("com.example.must"), status: .unacceptableContent) {
            try await self.register(TestRegistrationBuilder()) {
                $0.assertions[0].exts = [Extension(id: "com.example.must", data: "AA", failIfUnknown: true)]
            }
        }
    }

    func testAnOptionalUnknownExtensionIsIgnored() async throws {
        try await register(TestRegistrationBuilder()) {
            $0.header.exts = [Extension(id: "com.example.may", data: "AA", failIfUnknown: false)]
            $0.assertions[0].exts = [Extension(id: "com.example.may", data: "AA", failIfUnknown: false)]
        }
    }

    func testARequiredExtensionTheRelyingPartyUnderstandsIsAccepted() async throws {
        var configuration = testConfiguration
        configuration.understoodExtensions = ["com.example.must"]
        try await register(TestRegistrationBuilder(), configuration: configuration) {
            $0.header.exts = [Extension(id: "com.example.must", data: "AA", failIfUnknown: true)]
        }
    }

    // MARK: Zero counters

    func testAZeroCounterIsAcceptedByDefaultAsNoCounter() async throws {
        var builder = TestAuthenticationBuilder(key: key)
        builder.counter = 0
        let result = try await authenticate(builder, stored: builder.registered(counter: 0))
        XCTAssertEqual(result.first?.signCounter, 0)
    }

    func testAZeroCounterIsRefusedForAnAuthenticatorNotListedAsCounterless() async {
        var configuration = testConfiguration
        configuration.zeroCounters = .onlyFor(["ABCD#ABCD"])
        var builder = TestAuthenticationBuilder(key: key)
        builder.counter = 0
        await assertRejected(.counterNotKept, status: .unacceptableContent) {
            _ = try await self.authenticate(builder, configuration: configuration, stored: builder.registered(counter: 0))
        }
    }

    func testAZeroCounterIsAcceptedForAnAuthenticatorListedAsCounterless() async throws {
        var configuration = testConfiguration
        configuration.zeroCounters = .onlyFor(["f1d0#1001"])
        var builder = TestAuthenticationBuilder(key: key)
        builder.counter = 0
        let result = try await authenticate(builder, configuration: configuration, stored: builder.registered(counter: 0))
        XCTAssertEqual(result.first?.signCounter, 0)
    }

    func testACountingAuthenticatorPassesTheZeroCounterRule() async throws {
        var configuration = testConfiguration
        configuration.zeroCounters = .onlyFor([])
        let builder = TestAuthenticationBuilder(key: key)
        let result = try await authenticate(builder, configuration: configuration, stored: builder.registered(counter: 0))
        XCTAssertEqual(result.first?.signCounter, 5)
    }
}

/// The parser's reading of the attestation block: ECDAA is a known block, and exactly one block is allowed.
final class AttestationBlockParsingTests: XCTestCase {
    func krd() throws -> [UInt8] {
        try KeyRegistrationData(
            aaid: "F1D0#1001", authenticatorVersion: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER,
            publicKeyEncoding: .eccX962DER, finalChallengeHash: Array(repeating: 1, count: 32),
            keyID: Array(repeating: 7, count: 32), signCounter: 0, registrationCounter: 1,
            publicKey: Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
        ).encoded()
    }

    func testAnECDAABlockRoundTrips() throws {
        let bytes = try RegistrationAssertion.encode(signedKRD: try krd(), attestation: .ecdaa(signature: [1, 2, 3]))
        let parsed = try RegistrationAssertion(bytes: bytes)
        XCTAssertEqual(parsed.attestation, .ecdaa(signature: [1, 2, 3]))
        XCTAssertEqual(parsed.attestation.type, .ecdaa)
    }

    func testTwoAttestationBlocksAreMalformed() throws {
        var bytes = try RegistrationAssertion.encode(signedKRD: try krd(), attestation: .basicSurrogate(signature: [1, 2, 3]))
        let ecdaa: [UInt8] = [0x09, 0x3E, 0x07, 0x00, 0x06, 0x2E, 0x03, 0x00, 1, 2, 3]
        bytes += ecdaa
        let length = Int(bytes[2]) | Int(bytes[3]) << 8 + ecdaa.count
        bytes[2] = UInt8(length & 0xFF)
        bytes[3] = UInt8(length >> 8)
        XCTAssertThrowsError(try RegistrationAssertion(bytes: bytes)) { error in
            XCTAssertEqual(error as? TLVError, TLVError.duplicateTag(.attestationECDAA))
        }
    }

    func testNoAttestationBlockIsMalformed() throws {
        var bytes = try RegistrationAssertion.encode(signedKRD: try krd(), attestation: .basicSurrogate(signature: [1, 2, 3]))
        bytes.removeLast(11)  // the surrogate block: its 4-byte header and the signature leaf (4 + 3 bytes)
        let length = bytes.count - 4
        bytes[2] = UInt8(length & 0xFF)
        bytes[3] = UInt8(length >> 8)
        XCTAssertThrowsError(try RegistrationAssertion(bytes: bytes)) { error in
            XCTAssertEqual(error as? TLVError, TLVError.missingTag(.attestationBasicSurrogate))
        }
    }
}
