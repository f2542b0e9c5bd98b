import FIDOServerTesting
import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Route rules, run in-process through HummingbirdTesting's router framework (no socket, no TLS): which routes
/// exist, which are protected, and the shapes of their error answers. TLS-dependent behaviour is tested live.
final class RouterTests: XCTestCase {
    let relyingParty = LocalRelyingParty()

    func withRouter(_ body: @Sendable @escaping (any TestClientProtocol, FIDOServerApplication.Built) async throws -> Void) async throws {
        try await Self.withRouter(relyingParty: relyingParty, body)
    }

    /// Runs `body` against the router of a server that trusts `relyingParty`'s JWT key, in-process.
    static func withRouter(
        relyingParty: LocalRelyingParty, logger: Logger = ServerDependencies().logger,
        _ body: @Sendable @escaping (any TestClientProtocol, FIDOServerApplication.Built) async throws -> Void
    ) async throws {
        let server = try await InProcessServer(relyingParty: relyingParty, logger: logger)
        do { try await body(server.client, server.server) } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    static func registration(_ username: String) throws -> ByteBuffer {
        ByteBuffer(
            bytes: try JSONEncoder().encode(GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": username]))))
    }

    func testTheAppIDNamesTheConfiguredPortBeforeTheServerRuns() async throws {
        try await withRouter { _, built in
            XCTAssertEqual(built.appID, "https://127.0.0.1:8443/nevisfido/uaf/1.1/facets")
        }
    }

    func testTheRegistrationRequestRouteIsProtected() async throws {
        try await withRouter { client, _ in
            try await client.execute(
                uri: "/nevisfido/uaf/1.1/request/registration", method: .post,
                headers: [.contentType: "application/fido+uaf"], body: try Self.registration("alice")
            ) { response in
                XCTAssertEqual(response.status, .unauthorized)
                XCTAssertEqual(response.headers[.wwwAuthenticate], "Bearer")
                XCTAssertEqual(response.headers[.contentType], "application/json")
                let body = try JSONDecoder().decode([String: String].self, from: Data(buffer: response.body))
                XCTAssertEqual(body["error"], "unauthorized")
            }
        }
    }

    func testTheDeregistrationRequestRouteIsProtected() async throws {
        try await withRouter { client, _ in
            try await client.execute(uri: "/nevisfido/uaf/1.1/request/deregistration", method: .post, body: try Self.registration("alice")) {
                response in
                XCTAssertEqual(response.status, .unauthorized)
            }
        }
    }

    func testTheSignOutRouteIsProtected() async throws {
        try await withRouter { client, _ in
            try await client.execute(uri: "/nevisfido/session", method: .delete) { response in
                XCTAssertEqual(response.status, .unauthorized)
            }
        }
    }

    func testTheAuthenticationRequestRouteIsOpen() async throws {
        try await withRouter { client, _ in
            let body = ByteBuffer(bytes: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: nil)))
            try await client.execute(uri: "/nevisfido/uaf/1.1/request/authentication", method: .post, body: body) { response in
                XCTAssertEqual(response.status, .ok)
                XCTAssertEqual(response.headers[.contentType], "application/fido+uaf;charset=UTF-8")
                XCTAssertEqual(response.headers[.cacheControl], "no-store")
                XCTAssertNotNil(response.headers[HTTPField.Name("Mauth-Session-Id")!])
            }
        }
    }

    func testTheJWKSServesTheTokenKey() async throws {
        try await withRouter { client, built in
            try await client.execute(uri: "/.well-known/jwks.json", method: .get) { response in
                XCTAssertEqual(response.status, .ok)
                XCTAssertEqual(response.headers[.contentType], "application/jwk-set+json")
                let jwks = try JSONDecoder().decode(JWKSDocument.self, from: Data(buffer: response.body))
                XCTAssertEqual(jwks.keys.map(\.kid), [built.tokenIssuer.kid])
                XCTAssertEqual(jwks.keys.first?.alg, "ES256")
                XCTAssertEqual(jwks.keys.first?.use, "sig")
            }
        }
    }

    func testTheStatusRouteRefusesABodyOfTheWrongShape() async throws {
        try await withRouter { client, _ in
            try await client.execute(
                uri: "/nevisfido/status", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: #"{"session":"x"}"#)
            ) { response in
                XCTAssertEqual(response.status, .badRequest)
                XCTAssertEqual(response.headers[.contentType], "application/json")
                let body = try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body))
                XCTAssertEqual(body.error, "bad_request")
            }
        }
    }

    func testAJSONEndpointAnswersAnUnsupportedMediaTypeWithTheJSONErrorBody() async throws {
        try await withRouter { client, _ in
            try await client.execute(
                uri: "/nevisfido/token/dispatch/authentication", method: .post, headers: [.contentType: "text/plain"],
                body: ByteBuffer(string: "{}")
            ) { response in
                XCTAssertEqual(response.status, .unsupportedMediaType)
                XCTAssertEqual(response.headers[.contentType], "application/json")
                let body = try JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body))
                XCTAssertEqual(body.error, "unsupported_media_type")
            }
        }
    }

    func testAUAFEndpointAnswersAnUnreadableBodyWithAUAFServerResponse() async throws {
        try await withRouter { client, _ in
            try await client.execute(
                uri: "/nevisfido/uaf/1.1/authentication", method: .post, headers: [.contentType: "application/fido+uaf"],
                body: ByteBuffer(string: "not json")
            ) { response in
                XCTAssertEqual(response.status, .badRequest)
                XCTAssertEqual(response.headers[.contentType], "application/fido+uaf;charset=UTF-8")
                let body = try JSONDecoder().decode(ServerResponse.self, from: Data(buffer: response.body))
                XCTAssertEqual(body.statusCode, 1400)
            }
        }
    }

    func testAUAFEndpointRefusesABodyThatNamesAMemberTwice() async throws {
        try await withRouter { client, _ in
            // Valid but for the repeated member: JSONDecoder would have taken the first uafResponse.
            try await client.execute(
                uri: "/nevisfido/uaf/1.1/authentication", method: .post, headers: [.contentType: "application/fido+uaf"],
                body: ByteBuffer(string: #"{"uafResponse":"[]","uafResponse":"[{}]"}"#)
            ) { response in
                XCTAssertEqual(response.status, .badRequest)
                let body = try JSONDecoder().decode(ServerResponse.self, from: Data(buffer: response.body))
                XCTAssertEqual(body.statusCode, 1400)
            }
            // The same body without the repeat is readable: its empty message list is a UAF rejection, HTTP 200.
            try await client.execute(
                uri: "/nevisfido/uaf/1.1/authentication", method: .post, headers: [.contentType: "application/fido+uaf"],
                body: ByteBuffer(string: #"{"uafResponse":"[]"}"#)
            ) { response in
                XCTAssertEqual(response.status, .ok)
            }
        }
    }

    func testAnUnknownPathIs404() async throws {
        try await withRouter { client, _ in
            try await client.execute(uri: "/nevisfido/uaf/1.1/nothing", method: .post) { response in
                XCTAssertEqual(response.status, .notFound)
            }
        }
    }
}

/// A routed path asked with another method: 405 with `Allow` (RFC 9110 §15.5.6), where it used to be 404.
final class MethodNotAllowedTests: XCTestCase {
    func testARoutedPathWithAnotherMethodIs405WithAllow() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(uri: "/nevisfido/uaf/1.1/registration", method: .get) { response in
                XCTAssertEqual(response.status, .methodNotAllowed)
                XCTAssertEqual(response.headers[.allow], "POST")
                XCTAssertEqual(response.headers[.contentType], "application/json")
                XCTAssertTrue(String(buffer: response.body).contains(#""error":"method_not_allowed""#))
            }
        }
    }

    func testAPathWithACaptureListsEveryMethodRoutedThere() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(uri: "/nevisfido/token/dispatch/targets/abc", method: .post) { response in
                XCTAssertEqual(response.status, .methodNotAllowed)
                XCTAssertEqual(response.headers[.allow], "DELETE, PATCH")
            }
        }
    }

    func testTheAppPathPresetIsAnswered405Too() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(uri: "/auth/fidouaf", method: .put) { response in
                XCTAssertEqual(response.status, .methodNotAllowed)
                XCTAssertEqual(response.headers[.allow], "POST")
            }
        }
    }

    func testAnUnroutedPathStays404() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(uri: "/nevisfido/uaf/1.1/registration/extra", method: .get) { response in
                XCTAssertEqual(response.status, .notFound)
                XCTAssertNil(response.headers[.allow])
            }
        }
    }

    func testAHandlersOwn404IsNotTurnedInto405() async throws {
        // A routed method that answers 404 for a missing resource keeps its answer.
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(uri: "/api/v1/users/nobody", method: .get) { response in
                XCTAssertNotEqual(response.status, .methodNotAllowed)
            }
        }
    }
}

extension MethodNotAllowedTests {
    func testALiteralSegmentWinsOverACaptureAsInTheRouter() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(uri: "/api/v1/users/enroll", method: .delete) { response in
                XCTAssertEqual(response.status, .methodNotAllowed)
                XCTAssertEqual(response.headers[.allow], "POST")
            }
        }
    }
}

/// An `Accept` that names nothing a route answers with: 406 before the handler runs (RFC 9110 §15.5.7).
final class NotAcceptableTests: XCTestCase {
    func testAnHTMLOnlyAcceptOnAUAFRouteIs406AndNothingIsIssued() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, built in
            let body = ByteBuffer(bytes: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: nil)))
            try await client.execute(
                uri: "/nevisfido/uaf/1.1/request/authentication", method: .post,
                headers: [.contentType: "application/fido+uaf", .accept: "text/html"], body: body
            ) { response in
                XCTAssertEqual(response.status, .notAcceptable)
                XCTAssertTrue(String(buffer: response.body).contains(#""error":"not_acceptable""#))
            }
            try await client.execute(
                uri: "/nevisfido/uaf/1.1/request/authentication", method: .post,
                headers: [.contentType: "application/fido+uaf", .accept: "application/fido+uaf"], body: body
            ) { response in
                XCTAssertEqual(response.status, .ok)
            }
            let issued = try await built.stores.uafCeremonies.purge(expiredBefore: .distantFuture)
            XCTAssertEqual(issued, 1, "only the accepted request issued a challenge")
        }
    }

    func testTheSDKsAcceptIsServed() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            let body = ByteBuffer(bytes: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: nil)))
            for accept in [
                "application/fido+uaf", "application/fido+uaf;charset=UTF-8", "application/json", "*/*",
                "text/html, */*;q=0.1", "application/*", "",
            ] {
                try await client.execute(
                    uri: "/nevisfido/uaf/1.1/request/authentication", method: .post,
                    headers: [.contentType: "application/fido+uaf", .accept: accept], body: body
                ) { response in
                    XCTAssertEqual(response.status, .ok, accept)
                }
            }
        }
    }

    func testTheOperationalEndpointsAnswerWhateverIsAsked() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            for uri in ["/ping", "/health/live", "/metrics"] {
                try await client.execute(uri: uri, method: .get, headers: [.accept: "image/png"]) { response in
                    XCTAssertEqual(response.status, .ok, uri)
                }
            }
        }
    }

    func testAnAnswerWithoutABodyIsNeverRefused() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            // A device-signed PATCH answers 204; unsigned it is refused by the signature rule, not by Accept.
            try await client.execute(
                uri: "/nevisfido/devices/credentials/device-1", method: .patch,
                headers: [.accept: "text/html", .contentType: "application/json"], body: ByteBuffer(string: "{}")
            ) { response in
                XCTAssertNotEqual(response.status, .notAcceptable)
            }
        }
    }

    func testTheDeviceServiceAcceptsTheNevisSDKsJOSE() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            // Unsigned, so refused, but by the signature rule (401), not by the media type.
            try await client.execute(
                uri: "/nevisfido/devices/credentials/device-1", method: .get,
                headers: [.accept: "application/jose;charset=UTF-8"]
            ) { response in
                XCTAssertEqual(response.status, .unauthorized)
            }
            try await client.execute(
                uri: "/nevisfido/devices/credentials/device-1", method: .get,
                headers: [.accept: "image/png"]
            ) { response in
                XCTAssertEqual(response.status, .notAcceptable)
            }
        }
    }

    func testAZeroWeightExcludesTheType() async throws {
        try await RouterTests.withRouter(relyingParty: LocalRelyingParty()) { client, _ in
            try await client.execute(
                uri: "/nevisfido/status", method: .post, headers: [.accept: "application/json;q=0, text/html", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"sessionId":"x"}"#)
            ) { response in
                XCTAssertEqual(response.status, .notAcceptable)
            }
        }
    }
}

/// The `Accept` reader (RFC 9110 §12.5.1), one rule per test.
final class MediaRangeTests: XCTestCase {
    func testRangesAreReadWithTheirWeights() {
        XCTAssertEqual(
            MediaRange.parse("text/html, application/json;q=0.5 , */*;q=0"),
            [
                MediaRange(type: "text", subtype: "html", weight: 1), MediaRange(type: "application", subtype: "json", weight: 0.5),
                MediaRange(type: "*", subtype: "*", weight: 0),
            ])
    }
    func testAMalformedRangeIsSkipped() {
        XCTAssertEqual(MediaRange.parse("json, text/"), [])
        XCTAssertTrue(MediaType.accepts("json", anyOf: [MediaType("application/json")!]), "nothing readable is as if absent")
    }
    func testSpacesAroundAWeightAreAllowed() {
        XCTAssertEqual(MediaRange.parse("text/plain ; q = 0.2").first?.weight, 0.2)
    }
    func testAnOutOfRangeWeightIsIgnored() {
        XCTAssertEqual(MediaRange.parse("text/plain;q=7").first?.weight, 1)
    }
    func testTypesCompareWithoutCaseAndParameters() {
        XCTAssertTrue(MediaType.accepts("Application/FIDO+UAF", anyOf: [MediaType("application/fido+uaf;charset=UTF-8")!]))
    }
    func testTheJSONFamilyIsOneType() {
        XCTAssertTrue(MediaType.accepts("application/json", anyOf: [MediaType("application/fido.trusted-apps+json")!]))
        XCTAssertTrue(MediaType.accepts("application/fido+uaf", anyOf: [MediaType("application/json")!]))
        XCTAssertFalse(MediaType.accepts("application/xml", anyOf: [MediaType("application/json")!]))
    }
}
