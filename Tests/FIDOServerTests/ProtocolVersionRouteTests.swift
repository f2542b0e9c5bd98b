import FIDOServerTesting
import FIDOSimulation
import Foundation
import UAF
import XCTest

@testable import FIDOServerCore

/// The protocol versions the server speaks (`acceptedVersions`): one message per version in every request, the
/// facets under each, and a response of a version it does not speak refused with 1400.
final class ProtocolVersionRouteTests: XCTestCase {
    func everyVersion() -> ServerConfiguration {
        var configuration = InProcessServer.configuration()
        configuration.acceptedVersions = ["1.0", "1.1", "1.2"]
        return configuration
    }

    /// The registration request's messages for alice, as the server wrote them.
    func messages(_ loopback: InProcessServer) async throws -> [RegistrationRequest] {
        let answer = try await loopback.post(
            "/nevisfido/uaf/1.1/request/registration",
            GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": "alice"])),
            as: ReturnUAFRequest.self, headers: try await loopback.bearer("alice"))
        return try UAFMessageCodec.decode(RegistrationRequest.self, from: try XCTUnwrap(answer.uafRequest))
    }

    func facetVersions(_ loopback: InProcessServer) async throws -> [Version] {
        let answer = try await loopback.exchange(.GET, "/nevisfido/uaf/1.1/facets", body: nil)
        return try JSONDecoder().decode(TrustedFacets.self, from: answer.body).trustedFacets.map(\.version)
    }

    func testByDefaultARequestCarriesOneUAF11Message() async throws {
        try await InProcessServer.with { loopback in
            let messages = try await self.messages(loopback)
            XCTAssertEqual(messages.map(\.header.upv), [.uaf11])
            let versions = try await self.facetVersions(loopback)
            XCTAssertEqual(versions, [.uaf11])
        }
    }

    func testEveryAcceptedVersionGetsAMessageWithTheSameChallengeHighestFirst() async throws {
        try await InProcessServer.with(everyVersion()) { loopback in
            let messages = try await self.messages(loopback)
            XCTAssertEqual(messages.map(\.header.upv), [.uaf12, .uaf11, .uaf10])
            XCTAssertEqual(Set(messages.map(\.challenge)).count, 1)
            XCTAssertEqual(Set(messages.map(\.header.serverData)).count, 1)
            let versions = try await self.facetVersions(loopback)
            XCTAssertEqual(versions, [.uaf12, .uaf11, .uaf10])
        }
    }

    func testAUAF10AnswerIsAcceptedWhereTheServerSpeaksIt() async throws {
        try await InProcessServer.with(everyVersion()) { loopback in
            let messages = try await self.messages(loopback)
            let uaf10 = try XCTUnwrap(messages.first { $0.header.upv == .uaf10 })
            let answer = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try SoftwareAuthenticator().register(uaf10, serverAppID: loopback.server.appID))
            XCTAssertEqual(answer.statusCode, 1200)
        }
    }

    func testAUAF10AnswerIsRefusedWhereTheServerDoesNotSpeakIt() async throws {
        try await InProcessServer.with { loopback in
            let messages = try await self.messages(loopback)
            var request = try XCTUnwrap(messages.first)
            request.header.upv = .uaf10
            let answer = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try SoftwareAuthenticator().register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(answer.statusCode, 1400)
        }
    }

    func testOnlyKnownVersionsEachOnceAreAccepted() {
        for versions in [["1.3"], [], ["1.1", "1.1"], ["v1.1"], ["1.1.0"], ["1.1", "01.1"], ["+1.1"]] {
            var configuration = InProcessServer.configuration()
            configuration.acceptedVersions = versions
            XCTAssertThrowsError(try configuration.validate(), "\(versions)") { error in
                XCTAssertEqual(
                    error as? ServerConfiguration.ConfigurationError,
                    .invalid("acceptedVersions must list 1.0, 1.1 or 1.2, each once, not \(versions)"))
            }
        }
    }
}
