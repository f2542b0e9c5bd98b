import Foundation
import Primitives
import XCTest

@testable import UAF

/// fcParams read by the wire's JSON reader: what it takes and what it refuses.
final class FinalChallengeParamsDecodingTests: XCTestCase {
    func parse(_ json: String) -> FinalChallengeParams? { FinalChallengeParams.decode(json: Array(json.utf8)) }

    let valid = #"{"appID":"https://a.example/facets","challenge":"Y2g","channelBinding":{},"facetID":"ios:bundle-id:x"}"#

    func testAValidDocumentParses() {
        XCTAssertEqual(parse(valid), FinalChallengeParams(appID: "https://a.example/facets", challenge: "Y2g", facetID: "ios:bundle-id:x"))
    }

    func testMemberOrderAndWhitespaceAreFree() {
        let json =
            " {\n\t\"facetID\" : \"ios:bundle-id:x\" ,\r\n \"channelBinding\":{ \"cid_pubkey\" : \"unused\" }, \"challenge\":\"Y2g\", \"appID\":\"https:\\/\\/a.example\\/facets\"} \n"
        XCTAssertEqual(
            parse(json),
            FinalChallengeParams(
                appID: "https://a.example/facets", challenge: "Y2g", facetID: "ios:bundle-id:x",
                channelBinding: ChannelBinding(cidPubkey: "unused")))
    }

    func testEscapesIncludingSurrogatePairsDecode() {
        let json = #"{"appID":"\u00e9\ud83d\ude00\n\t\"\\","challenge":"c","channelBinding":{},"facetID":"f"}"#
        XCTAssertEqual(parse(json)?.appID, "é😀\n\t\"\\")
    }

    func testUnknownMembersOfEveryTypeAreSkipped() {
        let json = #"{"x":[1,-2.5e+3,true,false,null,{"y":[]}],"appID":"a","z":0,"challenge":"c","channelBinding":{"other":{}},"facetID":"f"}"#
        XCTAssertEqual(parse(json)?.facetID, "f")
    }

    func testTheResultMatchesJSONDecoderOnOurOwnEncoding() throws {
        let params = FinalChallengeParams(
            appID: "https://h:1/p?q=\"x\"", challenge: "abc-_", facetID: "android:apk-key-hash:Lir5oIjf552K/XN4bTul0VS3GfM",
            channelBinding: ChannelBinding(serverEndPoint: "s", tlsServerCertificate: "t", tlsUnique: "u", cidPubkey: "unused"))
        let encoded = try params.encodedFCParams()
        XCTAssertEqual(FinalChallengeParams.decode(fcParams: encoded), params)
        XCTAssertEqual(try JSONDecoder().decode(FinalChallengeParams.self, from: Base64URL.decode(encoded)!), params)
    }

    func testAMissingMemberIsRejected() { XCTAssertNil(parse(#"{"appID":"a","challenge":"c","facetID":"f"}"#)) }
    func testADuplicateKnownMemberIsRejected() {
        XCTAssertNil(parse(#"{"appID":"a","appID":"b","challenge":"c","channelBinding":{},"facetID":"f"}"#))
    }
    func testADuplicateChannelBindingMemberIsRejected() {
        XCTAssertNil(parse(#"{"appID":"a","challenge":"c","channelBinding":{"tlsUnique":"1","tlsUnique":"2"},"facetID":"f"}"#))
    }
    func testAnUnknownMemberNamedTwiceIsRejected() {
        XCTAssertNil(parse(#"{"x":1,"x":2,"appID":"a","challenge":"c","channelBinding":{},"facetID":"f"}"#))
    }
    func testTrailingContentIsRejected() { XCTAssertNil(parse(valid + "x")) }
    func testATrailingCommaIsRejected() { XCTAssertNil(parse(#"{"appID":"a","challenge":"c","channelBinding":{},"facetID":"f",}"#)) }
    func testANonStringMemberIsRejected() { XCTAssertNil(parse(#"{"appID":1,"challenge":"c","channelBinding":{},"facetID":"f"}"#)) }
    func testAnUnescapedControlCharacterIsRejected() {
        XCTAssertNil(parse("{\"appID\":\"a\u{01}\",\"challenge\":\"c\",\"channelBinding\":{},\"facetID\":\"f\"}"))
    }
    func testALoneSurrogateIsRejected() { XCTAssertNil(parse(#"{"appID":"\ud83d","challenge":"c","channelBinding":{},"facetID":"f"}"#)) }
    func testAnInvalidEscapeIsRejected() { XCTAssertNil(parse(#"{"appID":"\x","challenge":"c","channelBinding":{},"facetID":"f"}"#)) }
    func testAMalformedNumberInAnUnknownMemberIsRejected() {
        XCTAssertNil(parse(#"{"n":01,"appID":"a","challenge":"c","channelBinding":{},"facetID":"f"}"#))
    }
    /// Fuzz finding (fcparams, CI of ba8af96): an exponent beyond Double's range was accepted, Foundation refuses it.
    func testANumberBeyondDoubleRangeInAnUnknownMemberIsRejected() {
        XCTAssertNil(parse(#"{"x":[1,-2.5e+3244444],"appID":"a","challenge":"c","channelBinding":{},"facetID":"f"}"#))
        XCTAssertNil(parse(#"{"x":1e309,"appID":"a","challenge":"c","channelBinding":{},"facetID":"f"}"#))
    }
    func testNumbersFoundationReadsStayAccepted() {
        XCTAssertNotNil(parse(#"{"x":[1e308,1e-400,123456789012345678901234567890],"appID":"a","challenge":"c","channelBinding":{},"facetID":"f"}"#))
    }
    func testAnUnterminatedStringIsRejected() { XCTAssertNil(parse(#"{"appID":"a"#)) }
    func testDeepNestingIsRejected() {
        // Deeper than the wire reader's limit (WireJSONDecoder.maximumDepth, 512).
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        XCTAssertNil(parse(#"{"n":"# + deep + #","appID":"a","challenge":"c","channelBinding":{},"facetID":"f"}"#))
    }
    func testInvalidUTF8IsRejected() {
        var bytes = Array(valid.utf8)
        bytes[10] = 0xFF
        XCTAssertNil(FinalChallengeParams.decode(json: bytes))
    }
    func testEveryTruncationIsRejectedWithoutCrashing() {
        let bytes = Array(valid.utf8)
        for length in 0..<bytes.count { XCTAssertNil(FinalChallengeParams.decode(json: Array(bytes.prefix(length)))) }
    }
    func testNonCanonicalBase64URLIsRejected() {
        XCTAssertEqual(Base64URL.decodeBytes("QQ"), [0x41])
        XCTAssertNil(Base64URL.decodeBytes("QR"), "non-zero trailing bits")
        XCTAssertNil(Base64URL.decodeBytes("Q=Q="), "padding inside")
    }
}
