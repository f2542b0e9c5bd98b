import Foundation
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The Policy column is remembered both ways (JSONCoding); what it gives must be exactly what encoding and decoding
/// give, and one policy's text must never stand for another's.
final class JSONColumnTests: XCTestCase {
    private func policy(disallowing keyID: String?) -> Policy {
        Policy(
            accepted: [[MatchCriteria(aaid: ["F1D0#1001"], authenticationAlgorithms: [1])], [MatchCriteria(aaid: ["F1D0#1002"])]],
            disallowed: keyID.map { [MatchCriteria(aaid: ["F1D0#1001"], keyIDs: [$0])] })
    }

    private func independentlyEncoded(_ policy: Policy) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(policy), as: UTF8.self)
    }

    func testARememberedPolicyTextIsWhatEncodingGives() throws {
        let plain = policy(disallowing: nil)
        let first = try JSONCoding.string(plain)
        let second = try JSONCoding.string(plain)
        XCTAssertEqual(first, try independentlyEncoded(plain))
        XCTAssertEqual(second, first)
    }

    func testTwoPoliciesNeverShareAText() throws {
        let one = policy(disallowing: "a2V5LW9uZQ")
        let other = policy(disallowing: "a2V5LXR3bw")
        let textOne = try JSONCoding.string(one)
        let textOther = try JSONCoding.string(other)
        XCTAssertNotEqual(textOne, textOther)
        XCTAssertEqual(try JSONCoding.value(Policy.self, textOne), one)
        XCTAssertEqual(try JSONCoding.value(Policy.self, textOther), other)
        XCTAssertEqual(try JSONCoding.value(Policy.self, textOne), one, "a remembered text gave another policy")
    }

    func testThePolicyRememberedForAWrittenTextIsWhatDecodingThatTextGives() throws {
        // The response reads back the text its request wrote, and gets the policy the encoding side remembered.
        let distinct = policy(disallowing: "d3JpdHRlbi10ZXh0")
        let text = try JSONCoding.string(distinct)
        let independent = try JSONDecoder().decode(Policy.self, from: Data(text.utf8))
        XCTAssertEqual(try JSONCoding.value(Policy.self, text), independent)
        XCTAssertEqual(independent, distinct)
    }

    func testAMalformedPolicyColumnIsStillATypedErrorEveryTime() {
        for _ in 0..<2 {
            XCTAssertThrowsError(try JSONCoding.value(Policy.self, #"{"accepted": 7}"#)) { error in
                XCTAssertEqual(error as? StoreError, .malformedRow("JSON column of Policy"))
            }
        }
    }

    func testManyDistinctPoliciesStillEachRoundTrip() throws {
        // More than the memory holds, so it starts over at least once on the way.
        for index in 0..<(JSONCoding.policyMemory * 2 + 3) {
            let distinct = policy(disallowing: "key-\(index)")
            let text = try JSONCoding.string(distinct)
            XCTAssertEqual(text, try independentlyEncoded(distinct))
            XCTAssertEqual(try JSONCoding.value(Policy.self, text), distinct)
        }
    }
}
