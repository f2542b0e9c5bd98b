import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

/// The conformance tool's rule for a response whose structure is wrong (the server DocC, "Status codes"): the
/// envelope (`uafResponse`, a JSON array of at least one message) is 1400; past it, any structural error is 1498;
/// a well-formed serverData or challenge the server did not issue stays 1491. Each test changes one member of a
/// valid response, which the server accepts unchanged (the first test).
final class ConformanceStatusCodeTests: XCTestCase {
    typealias Object = [String: Any]

    // MARK: The control

    func testTheUnchangedRegistrationResponseIsAccepted() async throws {
        let code = try await registrationAnswer { _ in }
        XCTAssertEqual(code, 1200)
    }

    func testTheUnchangedAuthenticationResponseIsAccepted() async throws {
        let code = try await authenticationAnswer { _ in }
        XCTAssertEqual(code, 1200)
    }

    // MARK: The envelope: 1400

    func testAuafResponseThatIsNotJSONIs1400() async throws {
        let code = try await registrationAnswer(text: { _ in "[{" })
        XCTAssertEqual(code, 1400)
    }

    func testAuafResponseThatIsAnObjectIs1400() async throws {
        let code = try await registrationAnswer(text: { $0.dropFirst().dropLast().description })
        XCTAssertEqual(code, 1400)
    }

    func testAnEmptyMessageArrayIs1400() async throws {
        let code = try await registrationAnswer(text: { _ in "[]" })
        XCTAssertEqual(code, 1400)
    }

    func testAMessageOfAVersionTheServerDoesNotSpeakIs1400() async throws {
        let code = try await registrationAnswer { $0.header["upv"] = ["major": 1, "minor": 9] }
        XCTAssertEqual(code, 1400)
    }

    // MARK: Past the envelope: 1498

    func testAMessageThatIsNotAnObjectIs1498() async throws {
        let code = try await registrationAnswer(text: { _ in "[1]" })
        XCTAssertEqual(code, 1498)
    }

    func testAMissingHeaderIs1498() async throws {
        let code = try await registrationAnswer { $0["header"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testAHeaderOfTheWrongTypeIs1498() async throws {
        let code = try await registrationAnswer { $0["header"] = "Reg" }
        XCTAssertEqual(code, 1498)
    }

    func testAMissingUpvIs1498() async throws {
        let code = try await registrationAnswer { $0.header["upv"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testAnUpvMajorThatIsAStringIs1498() async throws {
        let code = try await registrationAnswer { $0.header["upv"] = ["major": "1", "minor": 1] }
        XCTAssertEqual(code, 1498)
    }

    func testAMissingOperationIs1498() async throws {
        let code = try await registrationAnswer { $0.header["op"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testAnUnknownOperationIs1498() async throws {
        let code = try await registrationAnswer { $0.header["op"] = "Register" }
        XCTAssertEqual(code, 1498)
    }

    func testAnotherOperationIs1498() async throws {
        let code = try await registrationAnswer { $0.header["op"] = "Auth" }
        XCTAssertEqual(code, 1498)
    }

    func testAMissingServerDataIs1498() async throws {
        let code = try await registrationAnswer { $0.header["serverData"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testAnEmptyServerDataIs1498() async throws {
        let code = try await registrationAnswer { $0.header["serverData"] = "" }
        XCTAssertEqual(code, 1498)
    }

    func testAServerDataThatIsANumberIs1498() async throws {
        let code = try await registrationAnswer { $0.header["serverData"] = 7 }
        XCTAssertEqual(code, 1498)
    }

    func testAServerDataOverItsLengthIs1498() async throws {
        let code = try await registrationAnswer {
            $0.header["serverData"] = String(repeating: "A", count: OperationHeader.maximumServerDataLength + 1)
        }
        XCTAssertEqual(code, 1498)
    }

    func testAnAppIDOfTheWrongTypeIs1498() async throws {
        let code = try await registrationAnswer { $0.header["appID"] = ["https://example.com"] }
        XCTAssertEqual(code, 1498)
    }

    func testAnAppIDOverItsLengthIs1498() async throws {
        let code = try await registrationAnswer {
            $0.header["appID"] = "https://" + String(repeating: "a", count: OperationHeader.maximumAppIDLength)
        }
        XCTAssertEqual(code, 1498)
    }

    func testHeaderExtensionsThatAreNotAnArrayIs1498() async throws {
        let code = try await registrationAnswer { $0.header["exts"] = ["id": "x", "data": "", "fail_if_unknown": false] }
        XCTAssertEqual(code, 1498)
    }

    func testAHeaderExtensionWithoutFailIfUnknownIs1498() async throws {
        let code = try await registrationAnswer { $0.header["exts"] = [["id": "x", "data": ""]] }
        XCTAssertEqual(code, 1498)
    }

    func testTheDeviceIDExtensionTwiceIs1498() async throws {
        let device: Object = ["id": DeviceServiceWire.deviceIDExtension, "data": "phone", "fail_if_unknown": false]
        let code = try await registrationAnswer { $0.header["exts"] = [device, device] }
        XCTAssertEqual(code, 1498)
    }

    func testAMissingFcParamsIs1498() async throws {
        let code = try await registrationAnswer { $0["fcParams"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testFcParamsThatAreNotBase64URLIs1498() async throws {
        let code = try await registrationAnswer { $0["fcParams"] = "not base64url!" }
        XCTAssertEqual(code, 1498)
    }

    func testFcParamsWithoutAFacetIDIs1498() async throws {
        let code = try await registrationAnswer { $0.changeFinalChallenge { $0["facetID"] = nil } }
        XCTAssertEqual(code, 1498)
    }

    func testFcParamsWhoseChallengeIsANumberIs1498() async throws {
        let code = try await registrationAnswer { $0.changeFinalChallenge { $0["challenge"] = 1 } }
        XCTAssertEqual(code, 1498)
    }

    func testFcParamsWhoseChannelBindingIsAStringIs1498() async throws {
        let code = try await registrationAnswer { $0.changeFinalChallenge { $0["channelBinding"] = "none" } }
        XCTAssertEqual(code, 1498)
    }

    func testAnEmptyChallengeIs1498() async throws {
        let code = try await registrationAnswer { $0.changeFinalChallenge { $0["challenge"] = "" } }
        XCTAssertEqual(code, 1498)
    }

    func testMissingAssertionsAre1498() async throws {
        let code = try await registrationAnswer { $0["assertions"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testAnEmptyAssertionListIs1498() async throws {
        let code = try await registrationAnswer { $0["assertions"] = [Any]() }
        XCTAssertEqual(code, 1498)
    }

    func testAssertionsThatAreAnObjectAre1498() async throws {
        let code = try await registrationAnswer { $0["assertions"] = ($0["assertions"] as? [Any])?.first }
        XCTAssertEqual(code, 1498)
    }

    func testAnAssertionWithoutItsSchemeIs1498() async throws {
        let code = try await registrationAnswer { $0.changeAssertion { $0["assertionScheme"] = nil } }
        XCTAssertEqual(code, 1498)
    }

    func testAnAssertionThatIsANumberIs1498() async throws {
        let code = try await registrationAnswer { $0.changeAssertion { $0["assertion"] = 1 } }
        XCTAssertEqual(code, 1498)
    }

    func testAnAssertionThatIsNotBase64URLIs1498() async throws {
        let code = try await registrationAnswer { $0.changeAssertion { $0["assertion"] = "not base64url!" } }
        XCTAssertEqual(code, 1498)
    }

    func testAnAuthenticationResponseWithoutAHeaderIs1498() async throws {
        let code = try await authenticationAnswer { $0["header"] = nil }
        XCTAssertEqual(code, 1498)
    }

    func testAnAuthenticationResponseWithAnEmptyAssertionListIs1498() async throws {
        let code = try await authenticationAnswer { $0["assertions"] = [Any]() }
        XCTAssertEqual(code, 1498)
    }

    func testAnAuthenticationResponseWithAnEmptyChallengeIs1498() async throws {
        let code = try await authenticationAnswer { $0.changeFinalChallenge { $0["challenge"] = "" } }
        XCTAssertEqual(code, 1498)
    }

    // MARK: Well formed, but not what the server issued: 1491

    func testAServerDataTheServerDidNotIssueIs1491() async throws {
        let code = try await registrationAnswer { $0.header["serverData"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }
        XCTAssertEqual(code, 1491)
    }

    func testAChallengeTheServerDidNotIssueIs1491() async throws {
        let code = try await registrationAnswer { $0.changeFinalChallenge { $0["challenge"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" } }
        XCTAssertEqual(code, 1491)
    }

    // MARK: Helpers

    /// The UAF status code the server answers a registration response for alice, changed by `change` (one
    /// element, as a JSON object) or by `text` (the whole `uafResponse`).
    func registrationAnswer(_ change: (inout Object) throws -> Void = { _ in }, text: (String) -> String = { $0 }) async throws -> Int {
        var code = 0
        try await InProcessServer.with { server in
            let request = try await server.registrationRequest(username: "alice")
            let response = try SoftwareAuthenticator().register(request, serverAppID: server.server.appID)
            code = try await Self.answer(server, "/nevisfido/uaf/1.1/registration", response, change: change, text: text)
        }
        return code
    }

    /// The same for an authentication response of alice's registered authenticator.
    func authenticationAnswer(_ change: (inout Object) throws -> Void) async throws -> Int {
        var code = 0
        try await InProcessServer.with { server in
            var authenticator = SoftwareAuthenticator()
            let registration = try await server.registrationRequest(username: "alice")
            let registered = try await server.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(registration, serverAppID: server.server.appID))
            XCTAssertEqual(registered.statusCode, 1200)
            let (_, request) = try await server.authenticationRequest(username: nil)
            let response = try authenticator.authenticate(try XCTUnwrap(request), serverAppID: server.server.appID)
            code = try await Self.answer(server, "/nevisfido/uaf/1.1/authentication", response, change: change, text: { $0 })
        }
        return code
    }

    static func answer(
        _ server: InProcessServer, _ path: String, _ response: some Encodable,
        change: (inout Object) throws -> Void, text: (String) -> String
    ) async throws -> Int {
        let encoded = try UAFMessageCodec.encode([response])
        var elements = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(encoded.utf8)) as? [Object])
        try change(&elements[0])
        let changed = String(decoding: try JSONSerialization.data(withJSONObject: elements), as: UTF8.self)
        let body = try JSONEncoder().encode(SendUAFResponse(uafResponse: text(changed)))
        let (_, data, _) = try await server.post(path, body: body)
        return try JSONDecoder().decode(ServerResponse.self, from: data).statusCode
    }
}

extension Dictionary where Key == String, Value == Any {
    /// The message's header, to change one member.
    var header: [String: Any] {
        get { self["header"] as? [String: Any] ?? [:] }
        set { self["header"] = newValue }
    }

    /// Changes one member of the decoded fcParams and encodes them again.
    mutating func changeFinalChallenge(_ change: (inout [String: Any]) -> Void) {
        guard let text = self["fcParams"] as? String, let bytes = Base64URL.decode(text),
            var params = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
            let data = try? {
                change(&params)
                return try JSONSerialization.data(withJSONObject: params)
            }()
        else {
            XCTFail("the valid response's fcParams did not read")
            return
        }
        self["fcParams"] = Base64URL.encode(Array(data))
    }

    /// Changes one member of the first assertion.
    mutating func changeAssertion(_ change: (inout [String: Any]) -> Void) {
        guard var assertions = self["assertions"] as? [[String: Any]], !assertions.isEmpty else {
            XCTFail("the valid response has no assertion")
            return
        }
        change(&assertions[0])
        self["assertions"] = assertions
    }
}
