import FIDOServer
import Foundation
import MobileAuthentication
import XCTest

final class TransportSecurityTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    func testTheReleaseFlavorRefusesAnUntrustedCertificate() async throws {
        let configuration = Configuration(baseUrl: env.server.baseURL, facetId: env.platform.applicationFacetId)
        let client = try await env.client(configuration: configuration)
        do {
            try await client.register("alice")
            XCTFail("a self-signed certificate must not be accepted by the release flavor")
        } catch {
            XCTAssertEqual(fidoCode(error), .insecureTransport)
        }
    }

    /// A trust failure never heals by waiting: it ends the operation at once, not after the network timeout.
    func testAnUntrustedCertificateFailsWithoutWaitingOutTheTimeout() async throws {
        let configuration = Configuration(baseUrl: env.server.baseURL, networkTimeoutInSeconds: 60, facetId: env.platform.applicationFacetId)
        let client = try await env.client(configuration: configuration)
        let started = ContinuousClock.now
        let error = await captureError { try await client.register("alice") }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .insecureTransport)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(20), "the 60 s timeout must not be waited out")
    }

    func testPlainHTTPIsRefusedInEveryFlavor() async throws {
        let url = URL(string: "http://127.0.0.1:\(env.server.port)")!
        for security in [TransportSecurity.release, .debug(trustedCertificatesPEM: [env.server.certificatePEM])] {
            let client = try await env.client(
                configuration: Configuration(baseUrl: url, facetId: env.platform.applicationFacetId).withTransportSecurity(security))
            do {
                try await client.register("alice")
                XCTFail("plain HTTP must be refused")
            } catch {
                XCTAssertEqual(fidoCode(error), .insecureTransport)
            }
        }
    }

    func testTheDebugFlavorTrustsOnlyTheGivenCertificate() async throws {
        let other = try DevelopmentCertificate.generate()
        let configuration = Configuration(baseUrl: env.server.baseURL, facetId: env.platform.applicationFacetId)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [other.trustAnchorPEM]))
        let client = try await env.client(configuration: configuration)
        do {
            try await client.register("alice")
            XCTFail()
        } catch {
            XCTAssertEqual(fidoCode(error), .insecureTransport)
        }
    }

    func testAnUnreachableServerIsANetworkError() async throws {
        let configuration = Configuration(
            baseUrl: URL(string: "https://127.0.0.1:1")!, networkTimeoutInSeconds: 5, facetId: env.platform.applicationFacetId)
        let client = try await env.client(configuration: configuration)
        let error = await captureError { try await client.register("alice") }
        guard case .NetworkError? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        // Said in words a person can act on, not the socket layer's "connection reset (error set): … (errno: 111)".
        let description = try XCTUnwrap((error as? OperationError)?.errorDescription)
        XCTAssertTrue(
            description.contains(
                "POST https://127.0.0.1:1/nevisfido/uaf/1.1/request/registration/: nothing answers at 127.0.0.1:1 (connection refused)"),
            description)
        XCTAssertFalse(description.contains("errno") || description.contains("error set"), description)
    }
}

extension TransportSecurityTests {
    /// The Device Service's operations report an untrusted server as the UAF operations do, not as unreachable.
    func testAnUntrustedServerIsInsecureTransportForTheDeviceServiceToo() async throws {
        let trusted = try await env.client()
        try await trusted.register("alice")
        await trusted.shutdown()
        let client = try await env.client(configuration: Configuration(baseUrl: env.server.baseURL, facetId: env.platform.applicationFacetId))
        let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
        let error = try XCTUnwrap(pending.errors.first)
        XCTAssertEqual(error.fidoErrorCode, .insecureTransport)
        XCTAssertTrue(error.errorDescription?.hasPrefix(FidoErrorCode.insecureTransport.errorDescription) == true, error.errorDescription ?? "")
        let check = await client.operations.deviceInformationCheck.executeAsync()
        XCTAssertEqual(check.errors.first?.fidoErrorCode, .insecureTransport)
    }

    /// Every error type answers `fidoErrorCode`, so a caller needs no switch over the types to find an untrusted
    /// server.
    func testTheFidoCodeIsReadableThroughTheCommonProtocol() async throws {
        let client = try await env.client(configuration: Configuration(baseUrl: env.server.baseURL, facetId: env.platform.applicationFacetId))
        let error = await captureError { try await client.register("alice") }
        XCTAssertEqual((error as? any MobileAuthenticationClientError)?.fidoErrorCode, .insecureTransport)
    }
}
