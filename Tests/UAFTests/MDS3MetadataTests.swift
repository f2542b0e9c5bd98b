import Foundation
import XCTest

@testable import UAF

/// Metadata statements in the FIDO MDS3 form (string registry values) load into the same numeric model.
final class MDS3MetadataTests: XCTestCase {
    static let statement = """
        {
          "legalHeader": "https://fidoalliance.org/metadata/metadata-statement-legal-header/",
          "aaid": "ABCD#0001",
          "description": "Example fingerprint authenticator (MDS3 form)",
          "authenticatorVersion": 2,
          "protocolFamily": "uaf",
          "schema": 3,
          "upv": [{"major": 1, "minor": 1}],
          "authenticationAlgorithms": ["secp256r1_ecdsa_sha256_der", "rsassa_pss_sha256_raw"],
          "publicKeyAlgAndEncodings": ["ecc_x962_der", "rsa_2048_raw"],
          "attestationTypes": ["basic_surrogate"],
          "userVerificationDetails": [[{"userVerificationMethod": "fingerprint_internal"}], [{"userVerificationMethod": "passcode_internal"}]],
          "keyProtection": ["hardware", "tee"],
          "matcherProtection": ["tee"],
          "cryptoStrength": 128,
          "attachmentHint": ["internal"],
          "tcDisplay": ["any", "tee"],
          "tcDisplayContentType": "text/plain",
          "attestationRootCertificates": []
        }
        """

    func testAnMDS3StatementConvertsToTheNumericForm() throws {
        let parsed = try UAFMetadata.parse(json: Data(Self.statement.utf8))
        XCTAssertEqual(parsed.skipped, [])
        let statement = try XCTUnwrap(parsed.statements.first)
        XCTAssertEqual(statement.aaid, "ABCD#0001")
        XCTAssertEqual(statement.authenticatorVersion, 2)
        XCTAssertEqual(statement.supportedAlgorithms, [.secp256r1ECDSASHA256DER, .rsassaPSSSHA256Raw])
        XCTAssertEqual(statement.supportedKeyEncodings, [.eccX962DER, .rsa2048Raw])
        XCTAssertEqual(statement.attestationTypes, [AttestationType.basicSurrogate.rawValue])
        XCTAssertEqual(statement.userVerificationMethods, [.fingerprint, .passcode])
        XCTAssertEqual(statement.keyProtection, KeyProtection([.hardware, .tee]).rawValue)
        XCTAssertEqual(statement.matcherProtection, MatcherProtection.tee.rawValue)
        XCTAssertEqual(statement.attachmentHint, AttachmentHint.internal.rawValue)
        XCTAssertEqual(statement.tcDisplay, TransactionConfirmationDisplay([.any, .tee]).rawValue)
    }

    func testAnMDS3StatementDrivesPolicyMatching() throws {
        let store = try UAFMetadata(try UAFMetadata.statements(fromJSON: Data(Self.statement.utf8)))
        let capabilities = try XCTUnwrap(store.statement(for: "abcd#0001")).capabilities
        let fingerprint = Policy(accepted: [
            [MatchCriteria(userVerification: UserVerificationMethods.fingerprint.rawValue, keyProtection: KeyProtection.tee.rawValue)]
        ])
        let faceOnly = Policy(accepted: [[MatchCriteria(userVerification: UserVerificationMethods.faceprint.rawValue)]])
        XCTAssertTrue(PolicyMatcher.isSatisfied(fingerprint, by: [capabilities]))
        XCTAssertFalse(PolicyMatcher.isSatisfied(faceOnly, by: [capabilities]))
    }

    func testStatementsOfOtherProtocolFamiliesAreSkipped() throws {
        let fido2 =
            #"{"aaguid": "0132d110-bf4e-4208-a403-ab4f5f12efe5", "description": "A FIDO2 key", "protocolFamily": "fido2", "authenticationAlgorithms": ["secp256r1_ecdsa_sha256_raw"]}"#
        let parsed = try UAFMetadata.parse(json: Data("[\(Self.statement), \(fido2)]".utf8))
        XCTAssertEqual(parsed.statements.map(\.aaid), ["ABCD#0001"])
        XCTAssertEqual(parsed.skipped, ["fido2 statement A FIDO2 key"])
    }

    func testAnUnknownRegistryNameIsRefused() {
        let bad = Self.statement.replacingOccurrences(of: "\"tee\"]", with: "\"quantum\"]")
        XCTAssertThrowsError(try UAFMetadata.parse(json: Data(bad.utf8)))
    }

    func testTheNumericFormStillLoads() throws {
        let numeric =
            #"{"aaid":"F1D0#1001","description":"PIN","assertionScheme":"UAFV1TLV","attestationRootCertificates":[],"attestationTypes":[15880],"upv":[{"major":1,"minor":1}],"userVerificationDetails":[[{"userVerification":4}]],"attachmentHint":1,"authenticationAlgorithm":2,"authenticatorVersion":1,"isSecondFactorOnly":false,"keyProtection":1,"matcherProtection":1,"publicKeyAlgAndEncoding":257,"tcDisplay":1}"#
        let parsed = try UAFMetadata.parse(json: Data(numeric.utf8))
        XCTAssertEqual(parsed.statements.first?.supportedAlgorithms, [.secp256r1ECDSASHA256DER])
    }
}
