import FIDOServerTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NevisProtocol
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The Auth Cloud API's own rules: the approval message's HTML subset (one refusal per rule, each made by changing
/// one thing of an accepted message), the username rule, and the `/_app` paths of the SDK's Auth Cloud preset.
final class AuthCloudRuleTests: XCTestCase {
    let limit = 200

    func refusal(_ message: String) -> LimitedHTML.Refusal? {
        do {
            try LimitedHTML.validate(message, limit: limit)
            return nil
        } catch { return error }
    }

    func testEveryTagOfTheSubsetIsAcceptedNestedAndWithEntities() {
        XCTAssertNil(refusal("<p>Pay <b>CHF&nbsp;250.00</b> to <i>Example</i> &amp; <em>Co</em></p><ul><li><strong>now</strong></li></ul>"))
        XCTAssertNil(refusal("Line one<br>line two<br/>line <u>three</u> &#169; &#xA9; &lt;ok&gt; &quot;x&quot; &apos;"))
        XCTAssertNil(refusal("<OL><LI>upper case tags</LI></OL>"))
        XCTAssertNil(refusal("Plain text, with a line feed\nand unicode: Zürich 💶"))
    }

    func testTheDocumentedHTMLWrapperIsAccepted() {
        XCTAssertNil(refusal("<html>Pay <b>CHF 250.00</b><br>to Example</html>"))
        XCTAssertNil(refusal("<HTML><p>upper case wrapper</p></HTML>"))
    }
    func testAnEmptyWrapperIsRefused() { XCTAssertEqual(refusal("<html></html>"), .empty) }
    func testAWrapperNotAroundTheWholeMessageIsRefused() { XCTAssertEqual(refusal("Pay <html>CHF 1</html>"), .misplacedWrapper) }
    func testAnUnclosedWrapperIsRefused() { XCTAssertEqual(refusal("<html>Pay CHF 1"), .misplacedWrapper) }
    func testANestedWrapperIsRefused() { XCTAssertEqual(refusal("<html><html>Pay</html></html>"), .misplacedWrapper) }
    func testAnAttributeOnTheWrapperIsRefused() { XCTAssertEqual(refusal("<html lang=\"en\">Pay</html>"), .attributesNotAllowed("html")) }
    func testAnEmptyMessageIsRefused() { XCTAssertEqual(refusal(""), .empty) }
    func testAMessageLongerThanTheTransactionLimitIsRefused() {
        XCTAssertNil(refusal(String(repeating: "a", count: limit)))
        XCTAssertEqual(refusal(String(repeating: "a", count: limit + 1)), .tooLong(limit: limit))
    }
    func testAControlCharacterIsRefused() { XCTAssertEqual(refusal("Pay\u{7}CHF 1"), .controlCharacter) }
    func testABidirectionalOverrideIsRefusedWrittenOrReferenced() {
        for message in ["Pay CHF \u{202E}001", "Pay CHF &#x202E;001", "Pay CHF &#8238;001", "Pay \u{2066}CHF 1", "Pay CHF 1\u{200F}"] {
            XCTAssertEqual(refusal(message), .controlCharacter, message)
        }
    }
    func testAReferenceToNULEscapeASurrogateOrANonCharacterIsRefused() {
        for message in ["Pay&#0;", "Pay&#27;[2J", "Pay&#x1B;", "Pay&#xD800;", "Pay&#xFFFE;", "Pay&#x10FFFF;", "Pay&#1114112;", "Pay&#xFDD0;"] {
            XCTAssertEqual(refusal(message), .controlCharacter, message)
        }
    }
    func testOrdinaryReferencesAndLineFeedsStayAllowed() {
        for message in ["Pay &#8364;1", "Pay &#x20AC;1", "Line one&#10;line two", "Line one\nline two", "Zürich &amp; Genève"] {
            XCTAssertNil(refusal(message), message)
        }
    }
    func testATagOutsideTheSubsetIsRefused() { XCTAssertEqual(refusal("Pay <script>CHF 1</script>"), .unsupportedTag("script")) }
    func testAnImageTagIsRefused() { XCTAssertEqual(refusal("Pay <img>"), .unsupportedTag("img")) }
    func testAnAttributeIsRefused() { XCTAssertEqual(refusal("Pay <b onclick=\"x()\">CHF 1</b>"), .attributesNotAllowed("b")) }
    func testAStyleAttributeWithoutQuotesIsRefused() { XCTAssertEqual(refusal("Pay <b style=color:red>CHF 1</b>"), .attributesNotAllowed("b")) }
    func testAnUnclosedTagIsRefused() { XCTAssertEqual(refusal("Pay <b>CHF 1"), .unbalanced("b")) }
    func testACrossedNestingIsRefused() { XCTAssertEqual(refusal("<b><i>Pay</b></i>"), .unbalanced("b")) }
    func testAClosingBreakIsRefused() { XCTAssertEqual(refusal("Pay</br>"), .unbalanced("br")) }
    func testALoneLessThanIsRefused() { XCTAssertEqual(refusal("1 < 2"), .malformedMarkup) }
    func testALoneGreaterThanIsRefused() { XCTAssertEqual(refusal("2 > 1"), .malformedMarkup) }
    func testACommentIsRefused() { XCTAssertEqual(refusal("Pay <!-- hidden --> CHF 1"), .malformedMarkup) }
    func testABareAmpersandIsRefused() { XCTAssertEqual(refusal("Tom & Jerry"), .malformedEntity) }
    func testAnUnknownEntityIsRefused() { XCTAssertEqual(refusal("Pay &euro;1"), .malformedEntity) }

    func testUsernamesFollowTheAuthCloudCharacterSet() {
        XCTAssertNoThrow(try AuthCloudService.validate(username: "u12345_a-b.c@example"))
        for bad in ["", "with space", "ümlaut", "slash/", String(repeating: "a", count: 257)] {
            XCTAssertThrowsError(try AuthCloudService.validate(username: bad), bad)
        }
    }

    /// The SDK's Auth Cloud preset talks to `/_app/…`: the same handlers answer as for `/nevisfido/…`.
    func testAppPathsReachTheNevisfidoHandlers() async throws {
        let configuration = ServerConfiguration(port: 8443, facets: [testFacet], database: .sqliteInMemory)
        let built = try await FIDOServerApplication.buildApplication(configuration: configuration)
        do {
            try await built.application.test(.router) { client in
                let direct = try await client.execute(uri: "/nevisfido/uaf/1.1/facets", method: .get)
                let aliased = try await client.execute(uri: "/_app/uaf/1.1/facets", method: .get)
                XCTAssertEqual(aliased.status, .ok)
                XCTAssertEqual(aliased.body, direct.body)
                let status = try await client.execute(
                    uri: "/_app/status", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: #"{"sessionId":"nope"}"#))
                XCTAssertEqual(status.status, .ok)
                XCTAssertTrue(String(buffer: status.body).contains("unknown"))
                let outside = try await client.execute(uri: "/_appx/uaf/1.1/facets", method: .get)
                XCTAssertEqual(outside.status, .notFound, "only the /_app/ prefix is an alias")
            }
        } catch {
            try await built.stores.database.close()
            throw error
        }
        try await built.stores.database.close()
    }
}
