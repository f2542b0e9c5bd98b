import NevisProtocol
import XCTest

/// How a device shows a transaction text: the limited HTML subset rendered as plain lines, never as tags, and any
/// text outside the subset exactly as it is.
final class LimitedHTMLDisplayTests: XCTestCase {
    func testAWrappedMessageIsShownWithoutItsTags() {
        XCTAssertEqual(
            LimitedHTML.displayText("<html>Transfer <b>EUR 10.00</b><br>to Example Shop</html>"),
            "Transfer EUR 10.00\nto Example Shop")
    }

    func testBareMarkupIsRenderedToo() {
        XCTAssertEqual(LimitedHTML.displayText("Pay <strong>CHF 5</strong> to <i>Anna</i> <u>now</u>"), "Pay CHF 5 to Anna now")
    }

    func testParagraphsAreBlocksSeparatedByAnEmptyLine() {
        XCTAssertEqual(LimitedHTML.displayText("<p>Pay CHF 5</p><p>to Anna</p>"), "Pay CHF 5\n\nto Anna")
        XCTAssertEqual(LimitedHTML.displayText("Intro<p>Body</p>End"), "Intro\n\nBody\n\nEnd")
    }

    func testListItemsAreLinesBulletedOrNumbered() {
        XCTAssertEqual(LimitedHTML.displayText("Orders:<ul><li>one</li><li>two</li></ul>"), "Orders:\n• one\n• two")
        XCTAssertEqual(LimitedHTML.displayText("<ol><li>first</li><li>second</li></ol>done"), "1. first\n2. second\ndone")
        XCTAssertEqual(LimitedHTML.displayText("<ul><li>a<ol><li>b</li></ol></li></ul>"), "• a\n  1. b")
    }

    func testEntitiesAreShownAsTheirCharacters() {
        XCTAssertEqual(
            LimitedHTML.displayText("Tom &amp; Jerry &lt;3 &quot;x&quot; &apos; &#169; &#xA9; CHF&nbsp;5"),
            "Tom & Jerry <3 \"x\" ' © © CHF\u{A0}5")
    }

    func testALineFeedInTheTextIsALine() {
        XCTAssertEqual(LimitedHTML.displayText("Pay CHF 5\nto Anna"), "Pay CHF 5\nto Anna")
    }

    func testTextOutsideTheSubsetIsShownExactlyAsItIs() {
        for text in [
            "5 < 6 and 7 > 2", "Tom & Jerry", "<script>alert(1)</script>", "<b onclick=x>Pay</b>", "<b>unclosed",
            "Pay <html>CHF 1</html>", "&#x202E;reversed", "plain text",
        ] {
            XCTAssertEqual(LimitedHTML.displayText(text), text, text)
        }
    }

    func testTokensAreTheTextAndTagsInOrder() throws {
        XCTAssertEqual(
            try LimitedHTML.tokens("<html>A <b>B</b><br/>C&amp;</html>"),
            [.text("A "), .open("b"), .text("B"), .close("b"), .lineBreak, .text("C&")])
    }
}
