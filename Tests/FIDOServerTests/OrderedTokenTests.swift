import Foundation
import Primitives
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

final class OrderedTokenTests: XCTestCase {
    func testThePrefixIsTheMillisecondsAsTwelveHexDigits() {
        XCTAssertEqual(OrderedToken.prefix(Date(epochMillis: 0x0195_1234_abcd)), "01951234abcd")
        XCTAssertEqual(OrderedToken.prefix(Date(epochMillis: 1)), "000000000001")
        XCTAssertEqual(OrderedToken.prefix(Date(epochMillis: -5)), "000000000000", "a time before 1970 is clamped, not wrapped")
    }

    func testTokensSortByTheirCreationTime() {
        // Across carries the text order is the time order. The times are distinct and at least 2 ms apart: tokens of
        // the same millisecond are ordered by their random part, and a Date may round a millisecond down.
        let times: [Int64] = [
            0x0e, 0x10, 0xfe, 0x100, 0xffe, 0x1000, 0x0fff_ffff_fffe, 0x1000_0000_0000, 0xffff_ffff_fffe,
            1_795_458_219_353, 1_795_458_219_355,
        ]
        let tokens = times.sorted().map { OrderedToken.make(16, now: Date(epochMillis: $0)) }
        XCTAssertEqual(tokens.sorted(), tokens)
    }

    func testALogLabelTellsApartTokensOfTheSameMoment() {
        // The demo's two passkey sign-ins, a second apart, read as one "session 01a21fd5… opened" when a log named a
        // session by its first eight characters: that is its time.
        let now = Date(epochMillis: 0x01a2_1fd5_0000)
        let first = OrderedToken.make(16, now: now)
        let second = OrderedToken.make(16, now: now.addingTimeInterval(1))
        XCTAssertEqual(first.prefix(8), second.prefix(8))
        XCTAssertNotEqual(OrderedToken.label(first), OrderedToken.label(second))
        XCTAssertEqual(OrderedToken.label(first), first.dropFirst(OrderedToken.prefixLength).prefix(8) + "…")
        XCTAssertEqual(OrderedToken.label("device-chosen-id"), "device-c…", "a text that is not an ordered token: its start")
    }

    func testTheRandomPartIsFreshAndAsLongAsItsBytes() {
        let now = Date()
        let a = OrderedToken.make(24, now: now)
        let b = OrderedToken.make(24, now: now)
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a.count, OrderedToken.prefixLength + 32)
        XCTAssertEqual(Base64URL.decode(String(a.dropFirst(OrderedToken.prefixLength)))?.count, 24)
    }

    func testThePrefixOfATokenIsReadOnlyWhenItIsTwelveLowercaseHexDigits() {
        XCTAssertEqual(OrderedToken.prefix(of: "01951234abcdXYZ"), "01951234abcd")
        XCTAssertNil(OrderedToken.prefix(of: "01951234ABCDXYZ"), "uppercase is not what prefix(_:) writes")
        XCTAssertNil(OrderedToken.prefix(of: "01951234abcd"), "a prefix with nothing after it is not a token")
        XCTAssertNil(OrderedToken.prefix(of: "0195-234abcdXYZ"))
        XCTAssertNil(OrderedToken.prefix(of: "0195"))
    }

    func testASessionTokenIsStoredAsItsTimePartAndTheHashOfTheWholeToken() {
        let token = SessionToken.make(now: Date(epochMillis: 1_795_458_219_353))
        XCTAssertEqual(token.count, SessionToken.length)
        XCTAssertEqual(SessionToken.length, 55)
        XCTAssertEqual(SessionToken.storedKey(token), "01a209a63d59" + SecretHash.of(token))
    }

    func testATokenWithoutATimePartIsStoredAsItsHashAlone() {
        let legacy = RandomToken.make(32)
        XCTAssertEqual(SessionToken.storedKey(legacy), SecretHash.of(legacy))
        // Twelve hex digits at the start of a token of another length are not a time part either.
        let lookalike = "0123456789ab" + String(legacy.prefix(31))
        XCTAssertEqual(SessionToken.storedKey(lookalike), SecretHash.of(lookalike))
    }
}
