import UAF
import XCTest

/// `UAFMessageCodec.decodeResponses`: the envelope against the contents, and the contents' fault in words.
final class ResponseEnvelopeTests: XCTestCase {
    func reason(_ text: String) -> UAFVerificationError? {
        do {
            _ = try UAFMessageCodec.decodeResponses(RegistrationResponse.self, from: text)
            return nil
        } catch { return error }
    }

    func testTextThatIsNotJSONIsNotAMessageArray() {
        XCTAssertEqual(reason("[{"), .notAMessageArray)
    }

    func testAnObjectIsNotAMessageArray() {
        XCTAssertEqual(reason("{}"), .notAMessageArray)
    }

    func testAnEmptyArrayIsNotAMessageArray() {
        XCTAssertEqual(reason("[]"), .notAMessageArray)
    }

    func testAMissingMemberIsNamed() {
        XCTAssertEqual(reason(#"[{"fcParams":"x","assertions":[]}]"#), .malformedMessage(#"member "header" is missing"#))
    }

    func testAMemberOfTheWrongTypeIsNamedWithoutSwiftTypes() {
        XCTAssertEqual(
            reason(#"[{"header":{"upv":{"major":"1","minor":1},"op":"Reg"},"fcParams":"x","assertions":[]}]"#),
            .malformedMessage(#"member "major" is of the wrong JSON type"#))
    }

    func testAnUnknownOperationIsAValueTheServerDoesNotKnow() {
        XCTAssertEqual(
            reason(#"[{"header":{"upv":{"major":1,"minor":1},"op":"Register"},"fcParams":"x","assertions":[]}]"#),
            .malformedMessage(#"member "op" has a value this server does not know"#))
    }

    func testANullMemberIsNamed() {
        XCTAssertEqual(reason(#"[{"header":null,"fcParams":"x","assertions":[]}]"#), .malformedMessage(#"member "header" is null"#))
    }

    func testTheEnvelopeIs1400AndTheContents1498() {
        XCTAssertEqual(UAFVerificationError.notAMessageArray.statusCode, .badRequest)
        XCTAssertEqual(UAFVerificationError.malformedMessage("x").statusCode, .unacceptableContent)
        XCTAssertEqual(UAFVerificationError.malformedServerData.statusCode, .unacceptableContent)
    }
}
