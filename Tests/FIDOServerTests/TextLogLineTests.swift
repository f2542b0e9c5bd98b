import Foundation
import Logging
import Primitives
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The text log format: one event is one line, and a field is what the server wrote.
final class TextLogLineTests: XCTestCase {
    static let time = Date(timeIntervalSince1970: 1_795_000_000.25)

    func testAUsernameWithSpacesAndEqualsSignsStaysOneQuotedValue() {
        let line = LogLine.text(
            time: Self.time, level: .info, label: "mauth.audit", message: "registration: 1200 registered",
            metadata: ["username": "alice code=1200 principal=relying-party:ops+admin", "code": "401"])
        XCTAssertEqual(
            line,
            #"2026-11-18T11:06:40.250Z info mauth.audit: registration: 1200 registered code="401" username="alice code=1200 principal=relying-party:ops+admin""#
        )
    }

    /// The message part repeated the username unquoted, so `alice code=1200` read as a field the server wrote.
    func testTheMessageQuotesTheUsername() {
        let event = AuditEvent(
            at: Self.time, requestID: "r", clientAddress: "192.0.2.1", principal: nil, operation: "registration request",
            username: #"alice code=1200 principal="x""#, statusCode: 1400, detail: "rejected")
        XCTAssertEqual(event.message, #"registration request for "alice code=1200 principal=\"x\"": 1400 rejected"#)
        let line = LogLine.text(time: Self.time, level: .info, label: "mauth.audit", message: event.message, metadata: [:])
        XCTAssertEqual(line, #"2026-11-18T11:06:40.250Z info mauth.audit: registration request for "alice code=1200 principal=\"x\"": 1400 rejected"#)
    }

    func testANewlineOrEscapeInAValueOrTheMessageCannotStartAnotherLine() {
        let line = LogLine.text(
            time: Self.time, level: .info, label: "mauth.audit", message: "refused\n2026 info forged\u{1B}[2J",
            metadata: ["username": "bob\"\n\u{202E}x"])
        XCTAssertFalse(line.contains("\n"))
        XCTAssertFalse(line.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x202E })
        XCTAssertTrue(line.hasSuffix(#"username="bob\"\u{0A}\u{202E}x""#), line)
        XCTAssertTrue(line.contains(#"refused\u{0A}2026 info forged\u{1B}[2J"#), line)
    }
}

/// Text from a request, made safe for a line, a row or a terminal.
final class UntrustedTextTests: XCTestCase {
    func testQuotingEscapesQuotesBackslashesAndEveryUnsafeScalar() {
        let nonCharacters = String(String.UnicodeScalarView([Unicode.Scalar(0xFDD0)!, Unicode.Scalar(0x1FFFF)!]))
        XCTAssertEqual(
            UntrustedText.quoted("a\"b\\c\u{0}\u{7F}\u{9B}\u{200F}\u{2028}\u{FEFF}" + nonCharacters),
            #""a\"b\\c\u{00}\u{7F}\u{9B}\u{200F}\u{2028}\u{FEFF}\u{FDD0}\u{1FFFF}""#)
    }

    func testQuotingCapsTheLengthAndSaysHowMuchWasLeftOut() {
        XCTAssertEqual(UntrustedText.quoted(String(repeating: "x", count: 70), limit: 64), "\"" + String(repeating: "x", count: 64) + "\"…(+6)")
    }

    func testPlainTextIsKeptAsItIsAndEscapingIsIdempotent() {
        let plain = "alice@example.com, Zürich 日本 😀"
        XCTAssertEqual(UntrustedText.escaped(plain), plain)
        let once = UntrustedText.escaped("a\nb\u{1B}")
        XCTAssertEqual(once, #"a\u{0A}b\u{1B}"#)
        XCTAssertEqual(UntrustedText.escaped(once), once)
    }

    func testAnAuditEventEscapesEveryFieldItIsGiven() {
        let event = AuditEvent(
            at: Date(), requestID: "r", clientAddress: "192.0.2.1", principal: "session:a\nb", operation: "op",
            username: "bob\u{202E}", statusCode: 401, detail: String(repeating: "d", count: 1500) + "\n")
        XCTAssertEqual(event.principal, #"session:a\u{0A}b"#)
        XCTAssertEqual(event.username, #"bob\u{202E}"#)
        XCTAssertTrue(event.detail.hasSuffix("…(+501)"), String(event.detail.suffix(20)))
        XCTAssertFalse(event.message.contains("\n"))
    }
}

/// Which callers' audit rows are budgeted, and against what.
final class AuditBudgetKeyTests: XCTestCase {
    static func decision(_ code: Int = 1400, _ operation: OperationName = "authentication request") -> ServerDecision {
        ServerDecision(operation: operation, username: "alice", statusCode: code, detail: "refused")
    }

    func testEveryUsersCredentialIsBudgetedByPrincipalAndAddress() {
        for source: Principal.Source in [
            .session(id: "s"), .registration(sessionId: "s", deviceId: nil), .trustedProxy,
            .dispatchToken(deviceId: nil), .demoSite, .development,
        ] {
            let principal = Principal(source: source, subject: "alice", isAdmin: false)
            XCTAssertEqual(
                AuditTrail.budgetKeys(principal: principal, client: "192.0.2.1", decision: Self.decision()),
                [.address("192.0.2.1"), .principal(principal.auditName)], "\(source)")
        }
    }

    func testTheRelyingPartysOwnCallersAndVerifiedLoginsAreNeverBudgeted() {
        for principal in [
            Principal(source: .relyingPartyToken, subject: "alice", isAdmin: false),
            Principal(source: .accessKey(id: "k"), subject: nil, isAdmin: false),
            Principal(source: .session(id: "s"), subject: "ops", isAdmin: true),
        ] {
            XCTAssertEqual(AuditTrail.budgetKeys(principal: principal, client: "192.0.2.1", decision: Self.decision()), [])
        }
        XCTAssertEqual(
            AuditTrail.budgetKeys(
                principal: Principal(source: .session(id: "s"), subject: "alice", isAdmin: false), client: "192.0.2.1",
                decision: Self.decision(1200, "authentication")), [])
        XCTAssertEqual(AuditTrail.budgetKeys(principal: nil, client: "192.0.2.1", decision: Self.decision()), [.address("192.0.2.1")])
        // The demo site acts as an admin for anyone who opens its pages: budgeted all the same.
        XCTAssertEqual(AuditTrail.budgetKeys(principal: DemoSiteController.principal, client: "192.0.2.1", decision: Self.decision()).count, 2)
    }
}
