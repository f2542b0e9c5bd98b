import Foundation
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// What the device reports to the server when its part of an operation fails (``OperationRunner/FailureReport``).
final class FailureReportTests: XCTestCase {
    func testADeclineIsReportedAsUserCancelledWithItsASMCode() throws {
        let report = try XCTUnwrap(OperationRunner.FailureReport(.FidoError(errorCode: .userCanceled, cause: nil)))
        XCTAssertEqual(report, .init(clientErrorCode: 3, asmStatusCode: 3))
        XCTAssertEqual(String(decoding: try JSONEncoder().encode(report), as: UTF8.self).contains("\"clientErrorCode\":3"), true)
    }

    func testALockOutIsReportedAsUserLockout() throws {
        XCTAssertEqual(
            OperationRunner.FailureReport(.FidoError(errorCode: .userLockout, cause: nil)), .init(clientErrorCode: 0x10, asmStatusCode: 0x10))
    }

    func testNoFittingAuthenticatorHasNoASMCode() {
        XCTAssertEqual(
            OperationRunner.FailureReport(.FidoError(errorCode: .noSuitableAuthenticator, cause: nil)), .init(clientErrorCode: 5, asmStatusCode: nil))
    }

    func testAnUnexpectedFailureIsReportedAsUnknown() {
        XCTAssertEqual(OperationRunner.FailureReport(.Unknown(cause: nil)), .init(clientErrorCode: 0xFF, asmStatusCode: nil))
    }

    func testAServerThatIsUnreachableOrUntrustedHearsNothing() {
        XCTAssertNil(OperationRunner.FailureReport(.NetworkError(cause: nil)))
        XCTAssertNil(OperationRunner.FailureReport(.FidoError(errorCode: .untrustedFacetID, cause: nil)))
        XCTAssertNil(OperationRunner.FailureReport(.FidoError(errorCode: .insecureTransport, cause: nil)))
        XCTAssertNil(OperationRunner.FailureReport(.FidoError(errorCode: .protocolError, cause: nil)))
    }
}
