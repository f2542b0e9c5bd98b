import Crypto
import Foundation
import Primitives
import XCTest

@testable import UAF

/// The PNG header reader behind image/png transactions, and what a transaction asks of the authenticator.
final class TransactionDisplayTests: XCTestCase {
    /// The signature and an IHDR chunk for a 20 × 10 RGBA image (the CRC is not read).
    static func header(
        width: UInt32 = 20, height: UInt32 = 10, bitDepth: UInt8 = 8, colorType: UInt8 = 6,
        chunkLength: UInt32 = 13, chunkType: String = "IHDR"
    ) -> [UInt8] {
        func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        return DisplayPNGCharacteristicsDescriptor.pngSignature + be(chunkLength) + Array(chunkType.utf8)
            + be(width) + be(height) + [bitDepth, colorType, 0, 0, 0] + [0, 0, 0, 0]
    }

    let rgba20x10 = DisplayPNGCharacteristicsDescriptor(width: 20, height: 10, bitDepth: 8, colorType: 6, compression: 0, filter: 0, interlace: 0)

    func testTheHeaderOfAPNGIsRead() {
        XCTAssertEqual(DisplayPNGCharacteristicsDescriptor(png: Self.header()), rgba20x10)
    }

    func testBytesWithoutThePNGSignatureAreNotAPNG() {
        var bytes = Self.header()
        bytes[1] = 0x51
        XCTAssertNil(DisplayPNGCharacteristicsDescriptor(png: bytes))
    }

    func testASignatureAloneIsNotAPNG() {
        XCTAssertNil(DisplayPNGCharacteristicsDescriptor(png: DisplayPNGCharacteristicsDescriptor.pngSignature))
    }

    func testATruncatedHeaderIsNotAPNG() {
        XCTAssertNil(DisplayPNGCharacteristicsDescriptor(png: Array(Self.header().prefix(28))))
    }

    func testAFirstChunkOtherThanIHDRIsNotAPNG() {
        XCTAssertNil(DisplayPNGCharacteristicsDescriptor(png: Self.header(chunkType: "IDAT")))
    }

    func testAnIHDROfAnotherLengthIsNotAPNG() {
        XCTAssertNil(DisplayPNGCharacteristicsDescriptor(png: Self.header(chunkLength: 12)))
    }

    func testAZeroWidthIsNotAPNG() {
        XCTAssertNil(DisplayPNGCharacteristicsDescriptor(png: Self.header(width: 0)))
    }

    func testEveryHeaderFieldMustBeAsDeclared() {
        XCTAssertTrue(rgba20x10.describes(rgba20x10))
        for change in [
            { (d: inout DisplayPNGCharacteristicsDescriptor) in d.width = 21 }, { $0.height = 11 }, { $0.bitDepth = 16 },
            { $0.colorType = 2 }, { $0.compression = 1 }, { $0.filter = 1 }, { $0.interlace = 1 },
        ] {
            var other = rgba20x10
            change(&other)
            XCTAssertFalse(rgba20x10.describes(other), "\(other)")
        }
    }

    static let mixedMetadata = try! UAFMetadata([
        MetadataStatement(
            aaid: "F1D0#1001", description: "with a display", attestationTypes: [15880],
            userVerificationDetails: [[.init(userVerification: 4)]], authenticationAlgorithm: 2,
            keyProtection: 1, matcherProtection: 1, publicKeyAlgAndEncoding: 257, tcDisplay: 1),
        MetadataStatement(
            aaid: "ABCD#0001", description: "without a display", attestationTypes: [15880],
            userVerificationDetails: [[.init(userVerification: 4)]], authenticationAlgorithm: 2,
            keyProtection: 1, matcherProtection: 1, publicKeyAlgAndEncoding: 257, tcDisplay: 0),
    ])

    func testATransactionPolicyKeepsOnlyAAIDsWithADisplayAndAddsNoFieldNextToThem() {
        let policy = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001", "ABCD#0001"], keyIDs: ["k"])], [MatchCriteria(aaid: ["ABCD#0001"])]])
        let asking = policy.askingForTransactionDisplay(metadata: Self.mixedMetadata)
        // uaf-spec §1.5: next to aaid only keyIDs, attachmentHint, authenticatorVersion and exts may appear.
        XCTAssertEqual(asking.accepted, [[MatchCriteria(aaid: ["F1D0#1001"], keyIDs: ["k"])]])
    }

    func testATransactionPolicyAsksACriterionWithoutAAIDsForADisplayAndKeepsANamedOne() {
        let policy = Policy(accepted: [[MatchCriteria(userVerification: 1)], [MatchCriteria(userVerification: 4, tcDisplay: 0x04)]])
        let asking = policy.askingForTransactionDisplay(metadata: Self.mixedMetadata)
        XCTAssertEqual(asking.accepted.map { $0.map(\.tcDisplay) }, [[0x1F], [0x04]])
    }

    func testAnAuthenticatorWithoutADisplayLeavesAnEmptyTransactionPolicy() {
        let policy = Policy(accepted: [[MatchCriteria(aaid: ["ABCD#0001"])]])
        XCTAssertEqual(policy.askingForTransactionDisplay(metadata: Self.mixedMetadata).accepted, [])
    }

    func testAConfirmationByAnAuthenticatorWithoutADisplayIs1492() async throws {
        let metadata = try UAFMetadata([
            MetadataStatement(
                aaid: "F1D0#1001", description: "iOS PIN without a display", attestationTypes: [15880],
                userVerificationDetails: [[.init(userVerification: 4)]], authenticationAlgorithm: 2,
                keyProtection: 1, matcherProtection: 1, publicKeyAlgAndEncoding: 257, tcDisplay: 0)
        ])
        let transaction = Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 100 CHF".utf8)))
        var builder = TestAuthenticationBuilder(key: P256.Signing.PrivateKey())
        builder.mode = 2
        builder.transactionContentHash = transaction.contentHash!
        let stored = builder.registered()
        await assertRejected(.transactionNotDisplayable("F1D0#1001"), status: .unacceptableAuthenticator) {
            _ = try await AuthenticationVerifier(configuration: testConfiguration, metadata: metadata)
                .verify(try builder.build(), issued: TestAuthenticationBuilder.issued(transactions: [transaction])) { _, _ in stored }
        }
    }
}
