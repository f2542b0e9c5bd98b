import Crypto
import Foundation
import Primitives
import XCTest

@testable import UAF

final class AuthenticationVerificationTests: XCTestCase {
    let verifier = AuthenticationVerifier(configuration: testConfiguration, metadata: testMetadata)
    let key = P256.Signing.PrivateKey()

    func verify(
        _ builder: TestAuthenticationBuilder, issued: IssuedAuthentication = TestAuthenticationBuilder.issued(),
        registered: RegisteredKey? = nil
    ) async throws -> [VerifiedAuthentication] {
        let stored = registered ?? builder.registered()
        return try await verifier.verify(try builder.build(), issued: issued) { aaid, keyID in
            (AAID.normalized(aaid) == AAID.normalized(stored.aaid) && keyID == stored.keyID) ? stored : nil
        }
    }

    func testAValidAuthenticationVerifiesAndReturnsTheNewCounter() async throws {
        let result = try await verify(TestAuthenticationBuilder(key: key))
        XCTAssertEqual(result.first?.signCounter, 5)
        XCTAssertEqual(result.first?.username, "alice")
        XCTAssertEqual(result.first?.mode, .userVerified)
    }

    func testAuthenticationFailsIfSignatureIsTampered() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.tamperSignature = true
        await assertRejected(.signatureInvalid, status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfSignedByAnotherKey() async {
        let builder = TestAuthenticationBuilder(key: key)
        let other = TestAuthenticationBuilder(key: P256.Signing.PrivateKey()).registered()
        await assertRejected(.signatureInvalid, status: .unacceptableContent) { _ = try await self.verify(builder, registered: other) }
    }

    func testAuthenticationFailsIfFinalChallengeHashIsWrong() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.finalChallengeHash = Array(repeating: 1, count: 32)
        await assertRejected(.finalChallengeHashMismatch, status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfChallengeIsNotTheIssuedOne() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.challenge = "cmVwbGF5ZWQtY2hhbGxlbmdl"
        await assertRejected(.challengeMismatch, status: .requestInvalid) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfAppIDIsWrong() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.appID = "https://other/facets"
        await assertRejected(.appIDMismatch("https://other/facets"), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfFacetIDIsNotTrusted() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.facetID = "android:apk-key-hash:abc"
        await assertRejected(.untrustedFacetID("android:apk-key-hash:abc"), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfAAIDIsUnknown() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.aaid = "FFFF#0002"
        await assertRejected(.unknownAAID("FFFF#0002"), status: .unknownAAID) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfKeyIDIsUnknown() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.keyID = Array(repeating: 9, count: 32)
        let stored = TestAuthenticationBuilder(key: key).registered()
        await assertRejected(.unknownKeyID, status: .unknownKeyID) { _ = try await self.verify(builder, registered: stored) }
    }

    func testAuthenticationFailsIfKeyIDBelongsToAnotherUser() async {
        let builder = TestAuthenticationBuilder(key: key)
        let issued = IssuedAuthentication(challenge: TestAuthenticationBuilder.issued().challenge, policy: pinPolicy, username: "bob")
        await assertRejected(.keyIDBelongsToAnotherUser, status: .unauthorized) { _ = try await self.verify(builder, issued: issued) }
    }

    func testAuthenticationFailsIfCounterDoesNotIncrease() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.counter = 4
        await assertRejected(.counterRegression(stored: 4, received: 4), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testCounterRegressionIsAcceptedWhenTheCounterPolicyIgnoresIt() async throws {
        var configuration = testConfiguration
        configuration.counterPolicy = .ignore
        var builder = TestAuthenticationBuilder(key: key)
        builder.counter = 1
        let stored = builder.registered(counter: 9)
        let result = try await AuthenticationVerifier(configuration: configuration, metadata: testMetadata)
            .verify(try builder.build(), issued: TestAuthenticationBuilder.issued()) { _, _ in stored }
        XCTAssertEqual(result.first?.signCounter, 1)
    }

    func testAuthenticationFailsIfNonceIsShorterThanEightBytes() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.nonce = Array(repeating: 1, count: 7)
        await assertRejected(.nonceTooShort(7), status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testTransactionConfirmationVerifiesWithModeTwoAndTheContentHash() async throws {
        let transaction = Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 100 CHF to Bob".utf8)))
        var builder = TestAuthenticationBuilder(key: key)
        builder.mode = 2
        builder.transactionContentHash = transaction.contentHash!
        let result = try await verify(builder, issued: TestAuthenticationBuilder.issued(transactions: [transaction]))
        XCTAssertEqual(result.first?.mode, .transactionConfirmed)
    }

    func testAuthenticationFailsIfTransactionHashDoesNotMatch() async {
        let transaction = Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 100 CHF to Bob".utf8)))
        var builder = TestAuthenticationBuilder(key: key)
        builder.mode = 2
        builder.transactionContentHash = Array(SHA256.hash(data: Array("Pay 999 CHF to Eve".utf8)))
        await assertRejected(status: .unacceptableContent) {
            _ = try await self.verify(builder, issued: TestAuthenticationBuilder.issued(transactions: [transaction]))
        }
    }

    func testAuthenticationFailsIfTransactionWasSentButModeIsOne() async {
        let transaction = Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay".utf8)))
        var builder = TestAuthenticationBuilder(key: key)
        builder.transactionContentHash = transaction.contentHash!
        await assertRejected(status: .unacceptableContent) {
            _ = try await self.verify(builder, issued: TestAuthenticationBuilder.issued(transactions: [transaction]))
        }
    }

    func testAuthenticationFailsIfModeIsTwoWithoutATransaction() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.mode = 2
        await assertRejected(status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfAContentHashIsSentWithoutATransaction() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.transactionContentHash = Array(repeating: 3, count: 32)
        await assertRejected(status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfTLVIsTruncated() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.mutateAssertion = { $0 = Array($0.prefix(40)) }
        await assertRejected(status: .unacceptableContent) { _ = try await self.verify(builder) }
    }

    func testAuthenticationFailsIfTLVIsOverLong() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.mutateAssertion = { $0 += [1, 2, 3] }
        await assertRejected(.malformedAssertion(TLVError.trailingBytes(count: 3)), status: .unacceptableContent) {
            _ = try await self.verify(builder)
        }
    }

    func testAuthenticationFailsIfAnUnknownCriticalTagIsPresent() async {
        var builder = TestAuthenticationBuilder(key: key)
        builder.mutateAssertion = { bytes in
            bytes.insert(contentsOf: [0x77, 0x2E, 0x00, 0x00], at: 8)  // empty critical leaf 0x2E77 inside SIGNED_DATA
            func bump(_ at: Int) {
                let v = Int(bytes[at]) | Int(bytes[at + 1]) << 8 + 4
                bytes[at] = UInt8(v & 0xFF)
                bytes[at + 1] = UInt8(v >> 8)
            }
            bump(2)
            bump(6)
        }
        await assertRejected(.malformedAssertion(TLVError.unknownCriticalTag(TLVTag(0x2E77))), status: .unacceptableContent) {
            _ = try await self.verify(builder)
        }
    }
}
