import Foundation
import XCTest

@testable import UAF

final class PolicyAndMetadataTests: XCTestCase {
    func capabilities(_ aaid: String) -> AuthenticatorCapabilities { testMetadata.statement(for: aaid)!.capabilities }

    func testAcceptedIsAnOrOfAnds() {
        let pin = capabilities("F1D0#1001")
        let raw = capabilities("ABCD#ABCD")
        let policy = Policy(accepted: [
            [MatchCriteria(aaid: ["F1D0#1001"]), MatchCriteria(aaid: ["ABCD#ABCD"])],
            [MatchCriteria(userVerification: UserVerificationMethods.fingerprint.rawValue)],
        ])
        XCTAssertTrue(PolicyMatcher.isSatisfied(policy, by: [pin, raw]))
        XCTAssertTrue(PolicyMatcher.isSatisfied(policy, by: [raw]))
        XCTAssertFalse(PolicyMatcher.isSatisfied(policy, by: [pin]), "PIN alone satisfies neither combination")
        XCTAssertFalse(PolicyMatcher.isSatisfied(policy, by: [raw, raw]), "each criterion needs a different authenticator")
        XCTAssertEqual(
            PolicyMatcher.matchingCombinations(policy, available: [pin, raw]).map { $0.map(\.aaid) },
            [["F1D0#1001", "ABCD#ABCD"], ["ABCD#ABCD"]])
    }

    func testDisallowedExcludesAnAuthenticator() {
        let pin = capabilities("F1D0#1001")
        let policy = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]], disallowed: [MatchCriteria(aaid: ["F1D0#1001"])])
        XCTAssertFalse(PolicyMatcher.isSatisfied(policy, by: [pin]))
        let raw = capabilities("ABCD#ABCD")
        let pair = [[MatchCriteria(aaid: ["F1D0#1001"]), MatchCriteria(aaid: ["ABCD#ABCD"])]]
        XCTAssertTrue(PolicyMatcher.isSatisfied(Policy(accepted: pair), by: [pin, raw]))
        XCTAssertFalse(
            PolicyMatcher.isSatisfied(Policy(accepted: pair, disallowed: [MatchCriteria(aaid: ["F1D0#1001"])]), by: [pin, raw]),
            "a disallowed member spoils the combination")
        XCTAssertFalse(PolicyMatcher.isSatisfied(Policy(accepted: pair), by: [raw]), "one assertion cannot satisfy a pair")
    }

    func testBitFieldsAndUserVerifyAll() {
        let pin = capabilities("F1D0#1001")
        XCTAssertTrue(MatchCriteria(keyProtection: 0x03).matches(pin))
        XCTAssertFalse(MatchCriteria(keyProtection: 0x02).matches(pin))
        XCTAssertTrue(MatchCriteria(userVerification: 0x04 | 0x02).matches(pin))
        XCTAssertFalse(MatchCriteria(userVerification: 0x400 | 0x04 | 0x02).matches(pin), "USER_VERIFY_ALL needs both")
        XCTAssertTrue(MatchCriteria(vendorID: ["f1d0"]).matches(pin))
        XCTAssertTrue(MatchCriteria(authenticationAlgorithms: [2]).matches(pin))
        XCTAssertFalse(MatchCriteria(authenticatorVersion: 2).matches(pin))
        var withKey = pin
        withKey.keyIDs = ["abc"]
        XCTAssertTrue(MatchCriteria(aaid: ["F1D0#1001"], keyIDs: ["abc"]).matches(withKey))
        XCTAssertFalse(MatchCriteria(aaid: ["F1D0#1001"], keyIDs: ["xyz"]).matches(withKey))
    }

    func testMetadataLoadsOneStatementOrAnArrayAndRejectsDuplicates() throws {
        let one = try JSONEncoder().encode(testMetadata.statement(for: "F1D0#1001")!)
        XCTAssertEqual(try UAFMetadata.statements(fromJSON: one).count, 1)
        let two = try JSONEncoder().encode(testMetadata.all)
        XCTAssertEqual(try UAFMetadata.statements(fromJSON: two).count, 2)
        XCTAssertThrowsError(try UAFMetadata(testMetadata.all + testMetadata.all))
        XCTAssertThrowsError(try UAFMetadata.statements(fromJSON: Data("{}".utf8)))
        XCTAssertNotNil(testMetadata.statement(for: "f1d0#1001"), "AAIDs compare case-insensitively")
    }

    func testMessagesUseTheSpecJSONNames() throws {
        let request = RegistrationRequest(
            header: OperationHeader(op: .registration, appID: testAppID, serverData: "s"),
            challenge: "c", username: "u", policy: pinPolicy)
        let json = try UAFMessageCodec.encode([request])
        XCTAssertTrue(json.contains("\"op\":\"Reg\""))
        XCTAssertTrue(json.contains("\"upv\":{\"major\":1,\"minor\":1}"))
        XCTAssertTrue(json.contains("\"aaid\":[\"F1D0#1001\"]"))
        XCTAssertEqual(try UAFMessageCodec.decode(RegistrationRequest.self, from: json), [request])
        let ext = try JSONEncoder().encode(Extension(id: "a", data: "b", failIfUnknown: true))
        XCTAssertTrue(String(decoding: ext, as: UTF8.self).contains("fail_if_unknown"))
        let binding = try JSONEncoder().encode(ChannelBinding(cidPubkey: "unused"))
        XCTAssertTrue(String(decoding: binding, as: UTF8.self).contains("cid_pubkey"))
    }
}
