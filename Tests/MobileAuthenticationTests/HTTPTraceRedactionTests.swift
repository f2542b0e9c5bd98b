import Foundation
import XCTest

@testable import MobileAuthenticationCore

/// The rules `HTTPTraceEvent.redacted()` applies to a body, one test each.
final class HTTPTraceRedactionTests: XCTestCase {
    func redact(_ json: String) -> String { String(decoding: HTTPTraceEvent.redacted(Data(json.utf8)), as: UTF8.self) }

    func testATokenValueOfAServerResponseIsRedacted() {
        XCTAssertEqual(
            redact(#"{"additionalTokens":[{"type":"HTTP_COOKIE","value":"sid=abc; Secure"}],"statusCode":1200}"#),
            #"{"additionalTokens":[{"type":"HTTP_COOKIE","value":"[redacted]"}],"statusCode":1200}"#)
    }

    func testARedeemTokenIsRedacted() {
        XCTAssertEqual(redact(#"{"token":"opaque-redeem-token"}"#), #"{"token":"[redacted]"}"#)
    }

    func testAJWTIsRedactedUnderAnyKey() {
        XCTAssertEqual(redact(#"{"anything":"eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl"}"#), #"{"anything":"[redacted]"}"#)
    }

    func testACompactJWEIsRedacted() {
        XCTAssertEqual(redact(#"["eyJhbGciOiJFQ0RILUVTIn0..aXY.Y2lwaGVy.dGFn"]"#), #"["[redacted]"]"#)
    }

    func testProtocolMessagesStay() {
        let body = #"{"uafResponse":"[{\"header\":{\"op\":\"Auth\"}}]"}"#
        XCTAssertEqual(redact(body), body)
    }

    func testABodyThatIsNotJSONIsReplacedWhole() {
        XCTAssertEqual(redact("token=abc"), "[9 bytes, not JSON, redacted]")
    }

    func testAnEmptyBodyStaysEmpty() {
        XCTAssertEqual(HTTPTraceEvent.redacted(Data()), Data())
    }
}
