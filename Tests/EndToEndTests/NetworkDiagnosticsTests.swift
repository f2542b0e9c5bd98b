import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import XCTest

/// `httpError` and `server` on network-type errors, over loopback TLS: the request that failed and what came back.
final class NetworkDiagnosticsTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    private func unauthorizedRegistration(_ client: any MobileAuthenticationClient) async -> (any Error)? {
        await captureError {
            try await client.operations.registration.username("dave").deviceInformation(DeviceInformation(name: "e2e device"))
                .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
                .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        }
    }

    func testARefusedRequestCarriesItsURLStatusAndBody() async throws {
        let client = try await env.client()
        let refused = await unauthorizedRegistration(client)
        let error = try XCTUnwrap(refused as? OperationError)
        let http = try XCTUnwrap(error.httpError, "\(error)")
        XCTAssertEqual(http.method, "POST")
        XCTAssertEqual(http.requestUrl.absoluteString, env.server.baseURL.absoluteString + "/nevisfido/uaf/1.1/request/registration/")
        XCTAssertEqual(http.statusCode, 401)
        XCTAssertNotNil(http.headers.values["content-type"], "\(http.headers.values)")
        XCTAssertNil(http.underlying)
        XCTAssertEqual(error.server?.baseUrl, env.server.baseURL)
    }

    func testAnUnreachableServerCarriesTheRequestAndWhyNoAnswerCame() async throws {
        let base = URL(string: "https://127.0.0.1:1")!
        let client = try await env.client(
            configuration: Configuration(baseUrl: base, networkTimeoutInSeconds: 5, facetId: env.platform.applicationFacetId))
        let failed = await captureError { try await client.register("alice") }
        let error = try XCTUnwrap(failed as? OperationError)
        let http = try XCTUnwrap(error.httpError, "\(error)")
        XCTAssertNil(http.statusCode)
        XCTAssertNil(http.body)
        XCTAssertNotNil(http.underlying)
        XCTAssertEqual(http.requestUrl.host, "127.0.0.1")
        XCTAssertEqual(error.server?.baseUrl, base)
        XCTAssertTrue(error.errorDescription?.contains("/nevisfido/uaf/1.1/request/registration/") == true, error.errorDescription ?? "")
    }

    func testAnAuthenticationNetworkErrorCarriesTheRequestToo() async throws {
        let client = try await env.client()
        try await client.register("alice")
        try await env.server.stop()  // the account's server goes away; the device keeps trusting it
        let error = await captureError {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
                .retryPolicyObtainingAuthorizationProvider(.noRetry).executeAsync()
        }
        let failure = try XCTUnwrap(error as? AuthenticationError)
        guard case .NetworkError = failure else { return XCTFail("\(failure)") }
        XCTAssertEqual(failure.httpError?.requestUrl.absoluteString, env.server.baseURL.absoluteString + "/nevisfido/uaf/1.1/request/authentication/")
        XCTAssertNil(failure.httpError?.statusCode)
        XCTAssertEqual(failure.server?.baseUrl, env.server.baseURL)
    }

    func testADeviceServiceFailureCarriesItsRequest() async throws {
        let client = try await env.client()
        try await client.register("alice")
        await client.shutdown()
        let untrusting = try await env.client(configuration: Configuration(baseUrl: env.server.baseURL, facetId: env.platform.applicationFacetId))
        let pending = await untrusting.operations.pendingOutOfBandOperations.executeAsync()
        let error = try XCTUnwrap(pending.errors.first)
        XCTAssertEqual(error.httpError?.method, "GET")
        XCTAssertTrue(
            error.httpError?.requestUrl.absoluteString.hasPrefix(env.server.baseURL.absoluteString + "/nevisfido/devices/") == true,
            "\(String(describing: error.httpError))")
        XCTAssertEqual(error.server?.baseUrl, env.server.baseURL)
    }

    func testAServersUAFRefusalCarriesTheRequest() async throws {
        let client = try await env.client()
        try await client.register("alice")
        _ = try await env.server.stores.registrations.delete(username: "alice")  // the server forgets the key
        let error = await captureError {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
                .retryPolicyObtainingAuthorizationProvider(.noRetry).executeAsync()
        }
        let failure = try XCTUnwrap(error as? AuthenticationError)
        guard case .FidoError = failure else { return XCTFail("\(failure)") }
        XCTAssertEqual(failure.httpError?.method, "POST", "\(failure)")
        XCTAssertNotNil(failure.httpError?.statusCode)
        XCTAssertEqual(failure.server?.baseUrl, env.server.baseURL)
    }

    func testOtherErrorsHaveNoHttpError() async throws {
        let client = try await env.client()
        let failed = await captureError { try await client.operations.deregistration.username("nobody").executeAsync() }
        let error = try XCTUnwrap(failed as? OperationError)
        guard case .UserNotRegisteredInServer = error else { return XCTFail("\(error)") }
        XCTAssertNil(error.httpError)
        XCTAssertNil(error.server)
    }
}
