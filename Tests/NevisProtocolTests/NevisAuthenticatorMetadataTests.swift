import NevisProtocol
import UAF
import XCTest

/// The Nevis authenticators' metadata, read from the JSON resource compiled into the module.
final class NevisAuthenticatorMetadataTests: XCTestCase {
    func testTheResourceHoldsTheTenNevisAuthenticators() {
        let aaids = NevisAuthenticatorMetadata.statements.map(\.aaid)
        XCTAssertEqual(
            aaids,
            [
                "F1D0#0001", "F1D0#0002", "F1D0#0003", "F1D0#0004", "F1D0#0005",
                "F1D0#1001", "F1D0#1002", "F1D0#1003", "F1D0#1004", "F1D0#1005",
            ])
    }

    func testTheAndroidStatementsListBothSigningAlgorithms() throws {
        let pin = try XCTUnwrap(NevisAuthenticatorMetadata.statements.first { $0.aaid == "F1D0#0001" })
        XCTAssertEqual(pin.authenticationAlgorithms, [2, 9], "ECDSA P-256 DER and RSA PKCS#1 DER (seed 000, §4.3.2)")
    }

    func testTheResourceIsTheJSONTheStatementsWereParsedFrom() throws {
        XCTAssertEqual(
            try UAFMetadata.statements(fromJSON: NevisAuthenticatorMetadata.json).map(\.aaid),
            NevisAuthenticatorMetadata.statements.map(\.aaid))
    }

    func testTheAndroidStatementsAcceptFullBasicToGooglesRoots() throws {
        for statement in NevisAuthenticatorMetadata.statements {
            let android = statement.aaid.hasPrefix("F1D0#000")
            XCTAssertEqual(statement.attestationTypes, android ? [15879, 15880] : [15880], statement.aaid)
            XCTAssertEqual(statement.vendorRootKeys?.count, android ? 2 : nil, statement.aaid)
        }
        let keys = try XCTUnwrap(NevisAuthenticatorMetadata.statements.first?.vendorRootKeys).map { Data(base64Encoded: $0) }
        // DER SubjectPublicKeyInfo: RSA-4096 (550 bytes) and ECDSA P-384 (120 bytes).
        XCTAssertEqual(keys.map { $0?.count }, [550, 120])
    }
}
