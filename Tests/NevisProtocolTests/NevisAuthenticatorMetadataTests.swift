import NevisProtocol
import UAF
import XCTest

/// The Nevis authenticators' metadata, read from the JSON resource compiled into the module.
final class NevisAuthenticatorMetadataTests: XCTestCase {
    func testTheResourceHoldsTheTenNevisAuthenticators() {
        let aaids = NevisAuthenticatorMetadata.statements.map(\.aaid)
        XCTAssertEqual(aaids, ["F1D0#0001", "F1D0#0002", "F1D0#0003", "F1D0#0004", "F1D0#0005",
                               "F1D0#1001", "F1D0#1002", "F1D0#1003", "F1D0#1004", "F1D0#1005"])
    }

    func testTheAndroidStatementsListBothSigningAlgorithms() throws {
        let pin = try XCTUnwrap(NevisAuthenticatorMetadata.statements.first { $0.aaid == "F1D0#0001" })
        XCTAssertEqual(pin.authenticationAlgorithms, [2, 9], "ECDSA P-256 DER and RSA PKCS#1 DER (seed 000, §4.3.2)")
    }

    func testTheResourceIsTheJSONTheStatementsWereParsedFrom() throws {
        XCTAssertEqual(try MetadataStore.statements(fromJSON: NevisAuthenticatorMetadata.json).map(\.aaid),
                       NevisAuthenticatorMetadata.statements.map(\.aaid))
    }
}
