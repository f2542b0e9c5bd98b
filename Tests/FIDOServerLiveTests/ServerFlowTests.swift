import AsyncHTTPClient
import FIDOServerTesting
import FIDOSimulation
import Foundation
import NIOCore
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

final class ServerFlowTests: XCTestCase {
    var loopback: LoopbackServer!

    override func setUp() async throws { loopback = try await LoopbackServer() }
    override func tearDown() async throws { try await loopback.shutdown() }

    var appID: String { loopback.server.appID }

    func register(_ authenticator: SoftwareAuthenticator, username: String = "alice") async throws -> ServerResponse {
        let request = try await loopback.registrationRequest(username: username)
        return try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: appID))
    }

    func testRegistrationAndAuthenticationOverHTTPS() async throws {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        XCTAssertEqual(request.username, "alice")
        XCTAssertEqual(request.header.appID, appID)
        XCTAssertTrue(
            request.policy.accepted.contains([MatchCriteria(aaid: ["F1D0#1001"])]),
            "an authenticator whose metadata accepts ECDSA is named by its AAID alone")
        let registered = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: appID))
        XCTAssertEqual(registered.statusCode, 1200, registered.description ?? "")

        // Asked for by the relying party, the step-up names her key (an anonymous caller gets no key IDs).
        let (answer, auth) = try await loopback.authenticationRequest(username: "alice", headers: try await loopback.bearer("alice"))
        XCTAssertEqual(answer.statusCode, 1200)
        XCTAssertEqual(answer.lifetimeMillis, 300_000)
        let policy = try XCTUnwrap(auth?.policy)
        XCTAssertEqual(policy.accepted, [[MatchCriteria(aaid: ["F1D0#1001"], keyIDs: [Base64URL.encode(authenticator.keyID)])]])
        let response = try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: appID)
        let result = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
        XCTAssertEqual(result.statusCode, 1200, result.description ?? "")
        let stored = try await loopback.server.stores.registrations.registration(aaid: "F1D0#1001", keyID: Base64URL.encode(authenticator.keyID))
        XCTAssertEqual(stored?.signCounter, 1)
    }

    func testAReplayedRegistrationResponseIsRejectedWith1491() async throws {
        let authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        let response = try authenticator.register(request, serverAppID: appID)
        let first = try await loopback.send("/nevisfido/uaf/1.1/registration", response)
        XCTAssertEqual(first.statusCode, 1200)
        let replay = try await loopback.send("/nevisfido/uaf/1.1/registration", response)
        XCTAssertEqual(replay.statusCode, 1491)
    }

    func testAReplayedAuthenticationResponseIsRejectedWith1491() async throws {
        var authenticator = SoftwareAuthenticator()
        _ = try await register(authenticator)
        let (_, auth) = try await loopback.authenticationRequest(username: "alice")
        let response = try authenticator.authenticate(auth!, serverAppID: appID)
        let first = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
        XCTAssertEqual(first.statusCode, 1200)
        let replay = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
        XCTAssertEqual(replay.statusCode, 1491)
    }

    func testAnExpiredChallengeIsRejectedWith1491() async throws {
        let authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        loopback.clock.advance(301)
        let result = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: appID))
        XCTAssertEqual(result.statusCode, 1491)
    }

    func testARegistrationResponseCannotAnswerAnAuthenticationRequest() async throws {
        var authenticator = SoftwareAuthenticator()
        _ = try await register(authenticator)
        let (_, auth) = try await loopback.authenticationRequest(username: "alice")
        let response = try authenticator.authenticate(auth!, serverAppID: appID)
        let result = try await loopback.send(
            "/nevisfido/uaf/1.1/registration", RegistrationResponse(header: response.header, fcParams: response.fcParams, assertions: []))
        XCTAssertEqual(result.statusCode, 1491, "the serverData names an authentication request")
    }

    func testTheSameKeyIDCannotBeRegisteredTwice() async throws {
        let authenticator = SoftwareAuthenticator()
        do {
            let status = try await register(authenticator).statusCode
            XCTAssertEqual(status, 1200)
        }
        do {
            let status = try await register(authenticator, username: "mallory").statusCode
            XCTAssertEqual(status, 1494)
        }
    }

    func testUnknownAAIDIsRejectedWith1480() async throws {
        var authenticator = SoftwareAuthenticator()
        authenticator.aaid = "FFFF#0001"
        do {
            let status = try await register(authenticator).statusCode
            XCTAssertEqual(status, 1480)
        }
    }

    func testUnknownKeyIDIsRejectedWith1481() async throws {
        let authenticator = SoftwareAuthenticator()
        _ = try await register(authenticator)
        let (_, auth) = try await loopback.authenticationRequest(username: nil)
        var stranger = authenticator
        stranger.keyID = Array(repeating: 1, count: 32)
        let result = try await loopback.send("/nevisfido/uaf/1.1/authentication", try stranger.authenticate(auth!, serverAppID: appID))
        XCTAssertEqual(result.statusCode, 1481)
    }

    func testCounterRegressionIsRejected() async throws {
        var authenticator = SoftwareAuthenticator()
        _ = try await register(authenticator)
        let (_, first) = try await loopback.authenticationRequest(username: "alice")
        authenticator.counter = 10
        do {
            let status = try await loopback.send("/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(first!, serverAppID: appID))
                .statusCode
            XCTAssertEqual(status, 1200)
        }
        authenticator.counter = 3
        let (_, second) = try await loopback.authenticationRequest(username: "alice")
        do {
            let status = try await loopback.send("/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(second!, serverAppID: appID))
                .statusCode
            XCTAssertEqual(status, 1498)
        }
    }

    func testTransactionConfirmationRoundTrip() async throws {
        var authenticator = SoftwareAuthenticator()
        _ = try await register(authenticator)
        let transaction = Transaction(contentType: "text/plain", content: Base64URL.encode(Array("Pay 100 CHF to Bob".utf8)))
        let (_, auth) = try await loopback.authenticationRequest(username: "alice", transaction: [transaction])
        XCTAssertEqual(auth?.transaction, [transaction])
        do {
            let status = try await loopback.send("/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(auth!, serverAppID: appID))
                .statusCode
            XCTAssertEqual(status, 1200)
        }
        let (_, again) = try await loopback.authenticationRequest(username: "alice", transaction: [transaction])
        let wrongHash = try authenticator.authenticate(again!, serverAppID: appID) { $0.transactionContentHash = Array(repeating: 0, count: 32) }
        do {
            let status = try await loopback.send("/nevisfido/uaf/1.1/authentication", wrongHash).statusCode
            XCTAssertEqual(status, 1498)
        }
    }

    func testAnOverlongTransactionTextIsABadRequest() async throws {
        _ = try await register(SoftwareAuthenticator())
        let transaction = Transaction(contentType: "text/plain", content: Base64URL.encode(Array(String(repeating: "x", count: 201).utf8)))
        let (answer, _) = try await loopback.authenticationRequest(username: "alice", transaction: [transaction])
        XCTAssertEqual(answer.statusCode, 1400)
    }

    func testRegistrationRequestWithoutUsernameIsABadRequest() async throws {
        let answer = try await loopback.post(
            "/nevisfido/uaf/1.1/request/registration", GetUAFRequest(op: .registration, context: "{}"),
            as: ReturnUAFRequest.self, headers: try await loopback.bearer("bob"))
        XCTAssertEqual(answer.statusCode, 1400)
        XCTAssertNil(answer.uafRequest)
    }

    func testTheRelyingPartysAuthenticationRequestForAnUnknownUserIs1404() async throws {
        let (answer, _) = try await loopback.authenticationRequest(username: "nobody", headers: try await loopback.bearer("nobody"))
        XCTAssertEqual(answer.statusCode, 1404)
    }

    func testMalformedBodyIsHTTP400AndWrongContentTypeIs415() async throws {
        let (status, data, _) = try await loopback.post("/nevisfido/uaf/1.1/registration", body: Data("{not json".utf8))
        XCTAssertEqual(status, 400)
        XCTAssertEqual(try JSONDecoder().decode(ServerResponse.self, from: data).statusCode, 1400)
        let (status415, _, _) = try await loopback.post("/nevisfido/uaf/1.1/registration", body: Data("{}".utf8), contentType: "text/plain")
        XCTAssertEqual(status415, 415)
    }

    func testResponsesUseTheUAFContentTypeAndTrailingSlashesWork() async throws {
        let body = try JSONEncoder().encode(GetUAFRequest(op: .registration, context: "{\"username\":\"bob\"}"))
        let (status, _, contentType) = try await loopback.post(
            "/nevisfido/uaf/1.1/request/registration/", body: body, headers: try await loopback.bearer("bob"))
        XCTAssertEqual(status, 200)
        XCTAssertEqual(contentType, "application/fido+uaf;charset=UTF-8")
    }

    func testFacetsEndpointServesTheTrustedFacets() async throws {
        var request = HTTPClientRequest(url: loopback.server.baseURL.absoluteString + "/nevisfido/uaf/1.1/facets")
        request.method = .GET
        let response = try await loopback.client.execute(request, timeout: .seconds(10))
        XCTAssertEqual(response.headers.first(name: "Content-Type"), "application/fido.trusted-apps+json")
        let facets = try JSONDecoder().decode(TrustedFacets.self, from: Data(try await response.body.collect(upTo: 1 << 16).readableBytesView))
        XCTAssertEqual(facets.trustedFacets, [.init(version: .uaf11, ids: [testFacet])])
    }

    /// A plain-HTTP request on the TLS port gets no HTTP answer: the server reads it as a broken handshake, answers at
    /// most a TLS alert record (content type 21), and closes the connection.
    func testPlainHTTPIsNotServed() async throws {
        let connection = try await RawTLSConnection(port: loopback.server.port, trusting: nil)
        try await connection.send("GET /nevisfido/uaf/1.1/facets HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let closed = await connection.closed(within: 5)
        await connection.close()
        XCTAssertTrue(closed, "the server kept a plain-HTTP connection open")
        let bytes = connection.bytes
        XCTAssertFalse(connection.text.contains("HTTP/"), "a plain-HTTP request got an HTTP answer: \(connection.text)")
        XCTAssertTrue(bytes.isEmpty || bytes.first == 21, "the server sent something other than a TLS alert: \(bytes.prefix(8))")
    }
}
