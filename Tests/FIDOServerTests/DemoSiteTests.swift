import FIDOServerTesting
import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The relying-party web demo's pages, in process: off by default, what each page shows, how it refuses bad input,
/// and that it escapes what a user typed. The whole flow in a real browser is `.ci/browser-test`.
final class DemoSiteTests: XCTestCase {
    static let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    static func withDemo(enabled: Bool = true, _ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await Self.withDemo(enabled: enabled) { client, _ in try await body(client) }
    }

    static func withDemo(enabled: Bool = true, _ body: @escaping @Sendable (any TestClientProtocol, Stores) async throws -> Void) async throws {
        var configuration = ServerConfiguration(port: 8443, facets: [testFacet], database: .sqliteInMemory)
        configuration.demoSite = enabled
        let built = try await FIDOServerApplication.buildApplication(configuration: configuration)
        let stores = built.stores
        do {
            try await built.application.test(.router) { client in try await body(client, stores) }
        } catch {
            try await built.stores.database.close()
            throw error
        }
        try await built.stores.database.close()
    }

    static func post(_ client: any TestClientProtocol, _ path: String, _ form: String) async throws -> (status: HTTPResponse.Status, html: String) {
        let response = try await client.execute(uri: path, method: .post, headers: Self.form, body: ByteBuffer(string: form))
        return (response.status, String(buffer: response.body))
    }

    func testTheDemoSiteIsOffByDefault() async throws {
        try await Self.withDemo(enabled: false) { client in
            let response = try await client.execute(uri: "/demo", method: .get)
            XCTAssertEqual(response.status, .notFound)
        }
    }

    func testTheStartPageHasBothFormsAndAStrictContentSecurityPolicy() async throws {
        try await Self.withDemo { client in
            let response = try await client.execute(uri: "/demo", method: .get)
            XCTAssertEqual(response.status, .ok)
            XCTAssertEqual(response.headers[.contentType], "text/html; charset=utf-8")
            let policy = try XCTUnwrap(response.headers[HTTPField.Name("Content-Security-Policy")!])
            XCTAssertTrue(
                policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && policy.contains("img-src 'self' data:"), policy)
            let html = String(buffer: response.body)
            XCTAssertTrue(html.contains(#"action="/demo/signup""#) && html.contains(#"action="/demo/login""#))
            XCTAssertTrue(html.contains(#"value="Pay CHF 250.00 to Example Shop""#))
            XCTAssertFalse(html.contains("{{"), "every template tag is rendered")
        }
    }

    func testTheStyleSheetAndTheScriptAreServedWithTheirTypes() async throws {
        try await Self.withDemo { client in
            let css = try await client.execute(uri: "/demo/static/demo.css", method: .get)
            XCTAssertEqual(css.headers[.contentType], "text/css; charset=utf-8")
            XCTAssertTrue(String(buffer: css.body).contains(".card"))
            let script = try await client.execute(uri: "/demo/static/demo.js", method: .get)
            XCTAssertEqual(script.headers[.contentType], "text/javascript; charset=utf-8")
            XCTAssertTrue(String(buffer: script.body).contains("/api/v1/status"))
        }
    }

    func testTheSiteServesItsIconWhereTheLayoutAndABrowserLookForIt() async throws {
        try await Self.withDemo { client in
            let home = try await client.execute(uri: "/demo", method: .get)
            XCTAssertTrue(String(buffer: home.body).contains(#"<link rel="icon" href="/demo/static/favicon.svg" type="image/svg+xml">"#))
            let icon = try await client.execute(uri: "/demo/static/favicon.svg", method: .get)
            XCTAssertEqual(icon.status, .ok)
            XCTAssertEqual(icon.headers[.contentType], "image/svg+xml")
            XCTAssertTrue(String(buffer: icon.body).hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
            let legacy = try await client.execute(uri: "/favicon.ico", method: .get)
            XCTAssertEqual(legacy.status, .seeOther)
            XCTAssertEqual(legacy.headers[.location], "/demo/static/favicon.svg")
        }
    }

    func testSignUpShowsAQRCodeOfTheAppLinkAndPollsWithTheStatusToken() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/signup", "username=dave")
            XCTAssertEqual(page.status, .ok)
            let link = try XCTUnwrap(Self.attribute("href", ofElement: "app-link", in: page.html))
            XCTAssertTrue(link.contains("/open?dispatchTokenResponse="), link)
            XCTAssertNotNil(Self.attribute("data-status-token", ofElement: "status", in: page.html))
            let source = try XCTUnwrap(Self.attribute("src", ofElement: "qr-code", in: page.html))
            XCTAssertTrue(source.hasPrefix("data:image/png;base64,"))
            if case .skipped(let why) = try ExternalTool.require("zbarimg", probe: QRCodeReader.probe) { throw XCTSkip(why) }
            let png = try XCTUnwrap(Data(base64Encoded: String(source.dropFirst("data:image/png;base64,".count))))
            XCTAssertEqual(try QRCodeReader.read(png: Array(png)), link, "the QR code is the app link, read by an independent decoder")
        }
    }

    func testAResultBeforeThePhoneAnsweredOffersToCheckAgain() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/signup", "username=erin")
            let token = try XCTUnwrap(Self.attribute("data-status-token", ofElement: "status", in: page.html))
            let result = try await Self.post(client, "/demo/result", "statusToken=\(token)")
            XCTAssertEqual(result.status, .ok)
            XCTAssertTrue(result.html.contains(#"data-outcome="pending""#) && result.html.contains("Check again"), result.html)
            XCTAssertFalse(result.html.contains(#"id="claims""#))
        }
    }

    func testCancellingOnTheWaitingPageShowsCancelledAndTheLinkNoLongerWorks() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/signup", "username=fay")
            XCTAssertTrue(page.html.contains(#"action="/demo/cancel""#), "the waiting page offers to cancel")
            let token = try XCTUnwrap(Self.attribute("data-status-token", ofElement: "status", in: page.html))
            let cancelled = try await Self.post(client, "/demo/cancel", "statusToken=\(token)")
            XCTAssertEqual(cancelled.status, .ok)
            XCTAssertTrue(cancelled.html.contains(#"data-ending="cancelled""#) && cancelled.html.contains("Cancelled"), cancelled.html)
            let later = try await Self.post(client, "/demo/result", "statusToken=\(token)")
            XCTAssertTrue(later.html.contains(#"data-outcome="cancelled""#), later.html)
        }
    }

    func testABadUsernameIsShownOnTheStartPageWithTheFieldKept() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/signup", "username=bad+name")
            XCTAssertEqual(page.status, .badRequest)
            XCTAssertTrue(page.html.contains(#"id="error""#), page.html)
            XCTAssertTrue(page.html.contains(#"value="bad name""#))
        }
    }

    func testALogInForAnUnknownUserSaysSo() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/login", "username=nobody&channel=push")
            XCTAssertEqual(page.status, .notFound)
            XCTAssertTrue(page.html.contains("No such user"), page.html)
        }
    }

    func testTheServersAddressLeadsToTheDemo() async throws {
        try await Self.withDemo { client in
            let response = try await client.execute(uri: "/", method: .get)
            XCTAssertEqual(response.status, .seeOther)
            XCTAssertEqual(response.headers[.location], "/demo")
        }
        try await Self.withDemo(enabled: false) { client in
            let response = try await client.execute(uri: "/", method: .get)
            XCTAssertEqual(response.status, .notFound, "without the demo the address has nothing to show")
        }
    }

    func testAFormAddressOpenedInABrowserLeadsToTheStartPage() async throws {
        try await Self.withDemo { client in
            for path in ["signup", "login", "result", "cancel"] {
                let response = try await client.execute(uri: "/demo/\(path)", method: .get)
                XCTAssertEqual(response.status, .seeOther, path)
                XCTAssertEqual(response.headers[.location], "/demo", path)
            }
        }
    }

    func testATransactionsAllowedMarkupIsRenderedAndNothingElse() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/signup", "username=gus")
            let token = try XCTUnwrap(Self.attribute("data-status-token", ofElement: "status", in: page.html))
            func shown(_ message: String) async throws -> String {
                let encoded = try XCTUnwrap(message.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let result = try await Self.post(client, "/demo/result", "statusToken=\(token)&message=\(encoded)")
                let start = try XCTUnwrap(result.html.range(of: #"<blockquote class="transaction" id="transaction">"#))
                let end = try XCTUnwrap(result.html.range(of: "</blockquote>", range: start.upperBound..<result.html.endIndex))
                return String(result.html[start.upperBound..<end.lowerBound])
            }
            var html = try await shown("<html>Pay <b>CHF 5</b><br>to Anna &amp; Co</html>")
            XCTAssertEqual(html, "Pay <b>CHF 5</b><br>to Anna &amp; Co", "the subset rendered as the phone shows it")
            html = try await shown("<script>alert(1)</script>")
            XCTAssertEqual(html, "&lt;script&gt;alert(1)&lt;/script&gt;", "outside the subset: shown as text, never markup")
            html = try await shown("<b onclick=\"x()\">Pay</b>")
            XCTAssertEqual(html, "&lt;b onclick=&quot;x()&quot;&gt;Pay&lt;/b&gt;")
        }
    }

    func testTheStartPageSaysHowToTrustTheDevelopmentCertificateOnlyWhenItIsServed() throws {
        let development = try DemoPages(developmentCertificate: true)
            .home(error: nil, signupUsername: "", loginUsername: "", loginMessage: "")
        XCTAssertTrue(development.contains(#"id="trust-note""#) && development.contains("dev-trust.pem"), development)
        let production = try DemoPages(developmentCertificate: false).home(error: nil, signupUsername: "", loginUsername: "", loginMessage: "")
        XCTAssertFalse(production.contains("trust-note"))
    }

    func testAnAppLinkOpenedInABrowserSaysWhatToDoOnAPhoneAndOnAComputer() async throws {
        try await Self.withDemo { client in
            let response = try await client.execute(uri: "/open?dispatchTokenResponse=e30", method: .get)
            XCTAssertEqual(response.status, .ok)
            XCTAssertEqual(response.headers[.contentType], "text/html; charset=utf-8")
            let html = String(buffer: response.body)
            XCTAssertTrue(html.contains("On a phone:") && html.contains("On a computer:"), html)
            XCTAssertFalse(html.contains("Open this link on your phone"), "a phone reading that is already on its phone")
            XCTAssertFalse(html.contains("e30"), "the payload stays in the link")
        }
    }

    func testAChannelChosenBeforeARefusalStaysChosen() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/login", "username=nobody&channel=app")
            XCTAssertEqual(page.status, .notFound)
            XCTAssertTrue(page.html.contains(#"id="channel-app" name="channel" value="app" checked"#), page.html)
            XCTAssertFalse(page.html.contains(#"value="push" checked"#), page.html)
        }
    }

    func testWhatTheUserTypedIsEscapedInThePage() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/login", "username=%3Cscript%3Ealert(1)%3C%2Fscript%3E&message=x")
            XCTAssertFalse(page.html.contains("<script>alert"), "a typed tag must never reach the page as markup")
            XCTAssertTrue(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        }
    }

    func testAnAlteredStatusTokenIsRefusedOnTheStartPage() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/result", "statusToken=eyJhbGciOiJFUzI1NiJ9.e30.c2ln")
            XCTAssertEqual(page.status, .badRequest)
            XCTAssertTrue(page.html.contains("not valid"), page.html)
        }
    }

    func testAFormOfAnotherContentTypeIsRefused() async throws {
        try await Self.withDemo { client in
            let response = try await client.execute(
                uri: "/demo/signup", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"username":"dave"}"#))
            XCTAssertEqual(response.status, .unsupportedMediaType)
        }
    }

    func testAnOversizedFormIsRefused() async throws {
        try await Self.withDemo { client in
            let page = try await Self.post(client, "/demo/signup", "username=" + String(repeating: "a", count: 9000))
            XCTAssertEqual(page.status, .badRequest)
            XCTAssertTrue(page.html.contains("could not be read"))
        }
    }

    /// The value of `name` on the element with `id` (our templates put `id` first and quote every attribute).
    static func attribute(_ name: String, ofElement id: String, in html: String) -> String? {
        guard let start = html.range(of: #"id="\#(id)""#) else { return nil }
        let tagEnd = html[start.upperBound...].firstIndex(of: ">") ?? html.endIndex
        let tagStart = html[..<start.lowerBound].lastIndex(of: "<") ?? html.startIndex
        let tag = html[tagStart..<tagEnd]
        guard let value = tag.range(of: #"\#(name)=""#) else { return nil }
        let rest = tag[value.upperBound...]
        return rest.firstIndex(of: "\"").map { String(rest[..<$0]).replacingOccurrences(of: "&amp;", with: "&") }
    }
}
