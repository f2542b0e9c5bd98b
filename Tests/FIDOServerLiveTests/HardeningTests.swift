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

/// The server's hardening rules, each proved over loopback TLS or on the configuration.
final class HardeningTests: XCTestCase {

    func testTheChannelBindingOfThisServersCertificateIsAccepted() async throws {
        try await LoopbackServer.with { loopback in
            let expected = loopback.server.certificate.current.binding
            var authenticator = SoftwareAuthenticator()
            authenticator.channelBinding = ChannelBinding(
                serverEndPoint: expected.serverEndPoint, tlsServerCertificate: expected.tlsServerCertificate)
            let request = try await loopback.registrationRequest(username: "alice")
            let result = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(result.statusCode, 1200)
        }
    }

    func testAChannelBindingOfAnotherCertificateIs1490() async throws {
        try await LoopbackServer.with { loopback in
            var authenticator = SoftwareAuthenticator()
            // What a client behind an intercepting proxy would report: the proxy's certificate hash.
            authenticator.channelBinding = ChannelBinding(serverEndPoint: Base64URL.encode(Array(repeating: 0xAB, count: 32)))
            let request = try await loopback.registrationRequest(username: "alice")
            let result = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(result.statusCode, 1490)
            let stored = try await loopback.server.stores.registrations.registrations(username: "alice")
            XCTAssertEqual(stored, [])
        }
    }

    func testTheRateLimitAnswers429WithRetryAfter() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.requestsPerMinutePerAddress = 3
        try await LoopbackServer.with(configuration) { loopback in
            let body = try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: nil))
            var statuses: [Int] = []
            var retryAfter: String?
            for _ in 0..<5 {
                let answer = try await loopback.exchange(.POST, "/nevisfido/uaf/1.1/request/authentication", body: body)
                statuses.append(answer.status)
                if answer.status == 429 { retryAfter = answer.headers.first(name: "Retry-After") }
            }
            // Three requests within the minute window pass (the window may roll over once during the test).
            XCTAssertTrue(statuses.contains(429), "\(statuses)")
            XCTAssertGreaterThanOrEqual(statuses.filter { $0 == 200 }.count, 3)
            let seconds = try XCTUnwrap(retryAfter.flatMap(Int.init))
            XCTAssertTrue((1...60).contains(seconds))
        }
    }

    func testOutstandingRequestsPerUsernameAreCapped() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.outstandingRequestsPerUsername = 2
        try await LoopbackServer.with(configuration) { loopback in
            _ = try await loopback.registrationRequest(username: "alice")
            _ = try await loopback.registrationRequest(username: "alice")
            let third = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try LoopbackServer.registrationBody("alice"), headers: try await loopback.bearer("alice"))
            // Said as it is: too many outstanding requests, retry once the oldest can have expired.
            XCTAssertEqual(third.status, 429)
            XCTAssertEqual(third.headers.first(name: "Retry-After"), "300")
            let body = try JSONDecoder().decode(ErrorBody.self, from: third.body)
            XCTAssertEqual(body.error, "too_many_outstanding_requests")
        }
    }

    func testAUsernameIsLimitedInBytesNotCharacters() async throws {
        try await LoopbackServer.with { loopback in
            // 100 characters, 400 bytes: over the 256-byte limit.
            let username = String(repeating: "😀", count: 100)
            let answer = try await loopback.post(
                "/nevisfido/uaf/1.1/request/registration",
                GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": username])),
                as: ReturnUAFRequest.self, headers: try await loopback.bearer(username))
            XCTAssertEqual(answer.statusCode, 1400)
        }
    }

    func testEveryUAFAnswerIsNoStore() async throws {
        try await LoopbackServer.with { loopback in
            let request = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/request/authentication",
                body: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: nil)))
            XCTAssertEqual(request.headers.first(name: "Cache-Control"), "no-store")
            let rejected = try await loopback.exchange(.POST, "/nevisfido/uaf/1.1/authentication", body: Data("{}".utf8))
            XCTAssertEqual(rejected.headers.first(name: "Cache-Control"), "no-store")
        }
    }

    func testRejectionDetailsStayInTheLog() async throws {
        try await LoopbackServer.with { loopback in
            var authenticator = SoftwareAuthenticator()
            authenticator.aaid = "FFFF#0001"
            let request = try await loopback.registrationRequest(username: "alice")
            let result = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(result.statusCode, 1480)
            // The generic reason phrase of the code, not the server's internal explanation.
            XCTAssertEqual(result.description, UAFStatusCode.unknownAAID.reasonPhrase)
            XCTAssertFalse(result.description?.contains("FFFF") ?? true)
        }
    }

    func testWildcardFacetsNeedDevelopmentMode() throws {
        var configuration = ServerConfiguration(facets: ["ios:bundle-id:*"])
        XCTAssertThrowsError(try configuration.validate())
        configuration.authorization.developmentMode = true
        XCTAssertNoThrow(try configuration.validate())
    }

    func testTheServerTrustsNoFacetUnlessConfigured() throws {
        XCTAssertEqual(ServerConfiguration().facets, [])
        XCTAssertEqual(try ServerConfiguration.load(path: nil, environment: [:]).facets, [])
    }

    func testAServerWithoutFacetsDoesNotStart() async throws {
        let configuration = ServerConfiguration(database: .sqliteInMemory)
        do {
            _ = try await FIDOServerApplication.buildApplication(configuration: configuration)
            XCTFail("a server without trusted facets was built")
        } catch let error as ServerConfiguration.ConfigurationError {
            XCTAssertTrue("\(error)".contains("no trusted facets: set facets (MAUTH_FACETS) or facetsPath"), "\(error)")
        }
    }

    func testAFacetsFileIsEnoughToStart() throws {
        var configuration = ServerConfiguration(database: .sqliteInMemory)
        configuration.facetsPath = "/etc/mauth/facets.json"
        XCTAssertNoThrow(try configuration.checkTrustedFacets())
    }

    func testDevelopmentModeStartsWithoutFacets() async throws {
        var configuration = ServerConfiguration(database: .sqliteInMemory)
        configuration.authorization.developmentMode = true
        let built = try await FIDOServerApplication.buildApplication(configuration: configuration)
        try await built.stores.database.close()
    }

    func testDevelopmentModeAcceptsAnUnauthenticatedRegistrationRequest() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.authorization.developmentMode = true
        try await LoopbackServer.with(configuration) { loopback in
            let request = try await loopback.registrationRequest(username: "alice", headers: [])
            XCTAssertEqual(request.username, "alice")
        }
    }

    func testDevelopmentModeIsOffUnlessConfigured() throws {
        XCTAssertFalse(ServerConfiguration().authorization.developmentMode)
        let decoded = try JSONDecoder().decode(ServerConfiguration.self, from: Data(#"{"authorization":{}}"#.utf8))
        XCTAssertFalse(decoded.authorization.developmentMode)
        let environment = try ServerConfiguration.load(path: nil, environment: [:])
        XCTAssertFalse(environment.authorization.developmentMode)
    }
}
