import Foundation
import XCTest

@testable import UAF

/// MatchCriteria's hand-written Codable (only the keys present are visited) must read and write exactly the JSON of
/// uaf-spec §1.5 that the synthesized conformance did. Expectations are written out by hand and compared as parsed by
/// JSONSerialization, an independent reader.
final class MatchCriteriaJSONTests: XCTestCase {
    static let everyField = MatchCriteria(
        aaid: ["F1D0#1001"], vendorID: ["F1D0"], keyIDs: ["a2V5"], userVerification: 2, keyProtection: 1, matcherProtection: 1,
        attachmentHint: 1, tcDisplay: 1, authenticationAlgorithms: [1, 2], assertionSchemes: ["UAFV1TLV"], attestationTypes: [15880],
        authenticatorVersion: 1, exts: [Extension(id: "x", data: "ZA", failIfUnknown: false)])

    static var everyFieldJSON: [String: Any] {
        [
            "aaid": ["F1D0#1001"], "vendorID": ["F1D0"], "keyIDs": ["a2V5"], "userVerification": 2, "keyProtection": 1,
            "matcherProtection": 1, "attachmentHint": 1, "tcDisplay": 1, "authenticationAlgorithms": [1, 2],
            "assertionSchemes": ["UAFV1TLV"], "attestationTypes": [15880], "authenticatorVersion": 1,
            "exts": [["id": "x", "data": "ZA", "fail_if_unknown": false]],
        ]
    }

    private func object(_ criteria: MatchCriteria) throws -> NSDictionary {
        try XCTUnwrap(JSONSerialization.jsonObject(with: JSONEncoder().encode(criteria)) as? NSDictionary)
    }

    func testEveryFieldIsWrittenUnderItsSpecName() throws {
        XCTAssertEqual(try object(Self.everyField), Self.everyFieldJSON as NSDictionary)
    }

    func testAbsentFieldsAreLeftOutNotWrittenAsNull() throws {
        XCTAssertEqual(
            try object(MatchCriteria(aaid: ["F1D0#1001"], keyIDs: ["a2V5"])),
            ["aaid": ["F1D0#1001"], "keyIDs": ["a2V5"]] as NSDictionary)
        XCTAssertEqual(try object(MatchCriteria()), [:] as NSDictionary)
    }

    func testEveryFieldIsRead() throws {
        let data = try JSONSerialization.data(withJSONObject: Self.everyFieldJSON)
        XCTAssertEqual(try JSONDecoder().decode(MatchCriteria.self, from: data), Self.everyField)
    }

    func testNullAbsentAndUnknownKeysReadAsNil() throws {
        let data = Data(#"{"aaid":["F1D0#1001"],"keyIDs":null,"somethingElse":[1,2,3]}"#.utf8)
        XCTAssertEqual(try JSONDecoder().decode(MatchCriteria.self, from: data), MatchCriteria(aaid: ["F1D0#1001"]))
    }

    func testAFieldOfTheWrongTypeIsRefused() {
        XCTAssertThrowsError(try JSONDecoder().decode(MatchCriteria.self, from: Data(#"{"userVerification":"fingerprint"}"#.utf8)))
        XCTAssertThrowsError(
            try JSONDecoder().decode(MatchCriteria.self, from: Data(#"{"keyProtection":70000}"#.utf8)),
            "keyProtection is 16 bits")
        XCTAssertThrowsError(try JSONDecoder().decode(MatchCriteria.self, from: Data(#"["F1D0#1001"]"#.utf8)))
    }

    func testAPolicyRoundTripsThroughTheMessageCodec() throws {
        let request = AuthenticationRequest(
            header: OperationHeader(op: .authentication, appID: "https://rp.example", serverData: "s"),
            challenge: "c",
            policy: Policy(
                accepted: [[Self.everyField], [MatchCriteria(aaid: ["ABCD#0001"])]],
                disallowed: [MatchCriteria(userVerification: 1)]))
        XCTAssertEqual(try UAFMessageCodec.decode(AuthenticationRequest.self, from: try UAFMessageCodec.encode([request])), [request])
    }

    func testOnlyKeyIDsAttachmentHintVersionAndExtsMayAccompanyAnAAID() {
        let allowed = MatchCriteria(
            aaid: ["F1D0#1001"], keyIDs: ["a2V5"], attachmentHint: 1, authenticatorVersion: 1,
            exts: [Extension(id: "x", data: "ZA", failIfUnknown: false)])
        XCTAssertEqual(allowed.fieldsNotAllowedBesideAAID, [])
        XCTAssertEqual(MatchCriteria(vendorID: ["F1D0"], authenticationAlgorithms: [9]).fieldsNotAllowedBesideAAID, [], "no aaid, no rule")
        XCTAssertEqual(
            Self.everyField.fieldsNotAllowedBesideAAID,
            [
                "vendorID", "userVerification", "keyProtection", "matcherProtection", "tcDisplay", "authenticationAlgorithms",
                "assertionSchemes", "attestationTypes",
            ])
        XCTAssertEqual(MatchCriteria(aaid: ["F1D0#0001"], authenticationAlgorithms: [2]).fieldsNotAllowedBesideAAID, ["authenticationAlgorithms"])
    }
}
