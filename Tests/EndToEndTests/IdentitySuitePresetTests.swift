import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import NIOConcurrencyHelpers
import XCTest

/// The SDK's Identity Suite preset (`Configuration(idSuiteHostname:)`) against the server over loopback TLS: its
/// authentication goes to nevisAuth's paths, `/auth/fidouaf` and `/auth/fidouaf/authenticationresponse/`, which the
/// server answers with its authentication handlers.
final class IdentitySuitePresetTests: BackendTestCase {

    /// A client on the preset that records the path of every request it sends.
    private func presetClient() async throws -> (any MobileAuthenticationClient, NIOLockedValueBox<[String]>) {
        let base = environment.server.baseURL
        let configuration = Configuration(
            idSuiteHostname: "\(base.host!):\(base.port!)", userInteractionTimeoutInSeconds: 5,
            facetId: environment.platform.applicationFacetId
        )
        .withTransportSecurity(.debug(trustedCertificatesPEM: [environment.server.certificatePEM]))
        let paths = NIOLockedValueBox([String]())
        let client = try await environment.client(configuration: configuration) { initializer in
            initializer.httpTrace { event in if !event.isResponse { paths.withLockedValue { $0.append(event.url.path) } } }
        }
        return (client, paths)
    }

    func testThePresetRegistersAndAuthenticatesThroughTheIdentitySuitePaths() async throws {
        let (client, paths) = try await presetClient()
        try await client.register("alice")
        let provider = try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        XCTAssertNotNil(provider as? JwtAuthorizationProvider, "the server's token, as from its own path")
        let sent = paths.withLockedValue { $0 }
        XCTAssertTrue(sent.contains("/auth/fidouaf"), "\(sent)")
        XCTAssertTrue(sent.contains("/auth/fidouaf/authenticationresponse"), "\(sent)")
        XCTAssertFalse(
            sent.contains { $0.hasPrefix("/nevisfido/uaf/1.1/request/authentication") || $0 == "/nevisfido/uaf/1.1/authentication" },
            "the preset's authentication never uses nevisFIDO's own paths: \(sent)")
    }

    func testAnOutOfBandApprovalOnThePresetAnswersThroughTheIdentitySuitePath() async throws {
        let (client, paths) = try await presetClient()
        try await client.register("bob")
        let targets = try await backend.targets(of: "bob")
        let target = try XCTUnwrap(targets.first?.id)
        let dispatched = try await backend.dispatch(
            .authentication, username: "bob", dispatcher: "link", targetID: target, transaction: "Pay CHF 10.00")
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(try XCTUnwrap(dispatched.dispatcherInformation?.response))
            .executeAsync()
        guard case .authentication(let authentication) = try await client.operations.outOfBandOperation.payload(payload).executeAsync() else {
            return XCTFail("the token stands for an authentication")
        }
        _ = try await authentication.authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        let status = try await backend.status(try XCTUnwrap(dispatched.sessionId))
        XCTAssertEqual(status.status, "succeeded")
        XCTAssertTrue(paths.withLockedValue { $0 }.contains("/auth/fidouaf/authenticationresponse"))
    }

    func testTheIdentitySuitePathsRefuseAsNevisFIDOsOwnDo() async throws {
        let pairs = [
            ("/auth/fidouaf", "/nevisfido/uaf/1.1/request/authentication"),
            ("/auth/fidouaf/authenticationresponse", "/nevisfido/uaf/1.1/authentication"),
        ]
        for (alias, own) in pairs {
            for body in ["{", #"{"uafResponse":"[]"}"#, #"{"op":"Auth","context":"{\"username\":\"nobody\"}"}"#] {
                let viaAlias = try await backend.call(.POST, alias, json: Data(body.utf8))
                let viaOwn = try await backend.call(.POST, own, json: Data(body.utf8))
                XCTAssertEqual(viaAlias.status, viaOwn.status, "\(alias) \(body)")
                // Each issued request has its own challenge: the UAF status is what must agree.
                struct Status: Decodable { var statusCode: Int? }
                XCTAssertEqual(
                    try? JSONDecoder().decode(Status.self, from: viaAlias.body).statusCode,
                    try? JSONDecoder().decode(Status.self, from: viaOwn.body).statusCode, "\(alias) \(body): \(viaAlias.text)")
            }
        }
    }
}
