import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import UAF
import XCTest

@testable import FIDOServerCore

/// The server's reading of the protocol corners: which `fail_if_unknown` extensions it understands, and the
/// configured rule for authenticators that send no counter.
final class ProtocolCornerRouteTests: XCTestCase {
    func register(_ loopback: InProcessServer, _ authenticator: SoftwareAuthenticator, exts: [Extension]? = nil) async throws -> Int {
        let request = try await loopback.registrationRequest(username: "alice")
        var response = try authenticator.register(request, serverAppID: loopback.server.appID)
        response.header.exts = exts
        return try await loopback.send("/nevisfido/uaf/1.1/registration", response).statusCode
    }

    func testARegistrationWithAnUnknownRequiredExtensionAnswers1498() async throws {
        try await InProcessServer.with { loopback in
            let status = try await self.register(
                loopback, SoftwareAuthenticator(),
                exts: [Extension(id: "com.example.must", data: "AA", failIfUnknown: true)])
            XCTAssertEqual(status, 1498)
        }
    }

    func testTheDeviceIDExtensionMarkedRequiredIsUnderstood() async throws {
        try await InProcessServer.with { loopback in
            let status = try await self.register(
                loopback, SoftwareAuthenticator(),
                exts: [Extension(id: DeviceServiceWire.deviceIDExtension, data: "device-1", failIfUnknown: true)])
            XCTAssertEqual(status, 1200)
        }
    }

    /// `op` is required on every GetUAFRequest (nevisFIDO lists it so): without it each endpoint answers 1400.
    func testAGetUAFRequestWithoutOpIsRefusedOnEveryEndpoint() async throws {
        try await InProcessServer.with { loopback in
            let context = try UAFMessageCodec.encodeObject(["username": "alice"])
            let body = try JSONEncoder().encode(GetUAFRequest(op: nil, context: context))
            for path in [
                "/nevisfido/uaf/1.1/request/registration", "/nevisfido/uaf/1.1/request/authentication", "/nevisfido/uaf/1.1/request/deregistration",
            ] {
                let (status, data, _) = try await loopback.post(path, body: body, headers: try await loopback.bearer("alice"))
                XCTAssertEqual(status, 200, path)
                XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: data).statusCode, 1400, path)
            }
        }
    }

    /// A deregistration without `op`, with the user's own token, removes nothing: she still signs in with her key.
    func testADeregistrationWithoutOpRemovesNothing() async throws {
        try await InProcessServer.with { loopback in
            var authenticator = SoftwareAuthenticator()
            let registered = try await self.register(loopback, authenticator)
            XCTAssertEqual(registered, 1200)
            let body = try JSONEncoder().encode(GetUAFRequest(op: nil, context: try UAFMessageCodec.encodeObject(["username": "alice"])))
            let (_, data, _) = try await loopback.post(
                "/nevisfido/uaf/1.1/request/deregistration", body: body, headers: try await loopback.bearer("alice"))
            XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: data).statusCode, 1400)
            let (_, request) = try await loopback.authenticationRequest(username: "alice")
            let response = try authenticator.authenticate(try XCTUnwrap(request), serverAppID: loopback.server.appID)
            let signedIn = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(signedIn.statusCode, 1200)
        }
    }

    func testAZeroCounterIsRefusedWhenTheAuthenticatorIsNotListedAsCounterless() async throws {
        var configuration = InProcessServer.configuration()
        configuration.zeroCounterAAIDs = ["ABCD#ABCD"]
        try await InProcessServer.with(configuration) { loopback in
            var authenticator = SoftwareAuthenticator()
            let registered = try await self.register(loopback, authenticator)
            XCTAssertEqual(registered, 1200)
            let (_, auth) = try await loopback.authenticationRequest(username: "alice")
            let counterless = try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID) { $0.signCounter = 0 }
            let refused = try await loopback.send("/nevisfido/uaf/1.1/authentication", counterless)
            XCTAssertEqual(refused.statusCode, 1498)
            let (_, again) = try await loopback.authenticationRequest(username: "alice")
            let counting = try authenticator.authenticate(try XCTUnwrap(again), serverAppID: loopback.server.appID)
            let accepted = try await loopback.send("/nevisfido/uaf/1.1/authentication", counting)
            XCTAssertEqual(accepted.statusCode, 1200)
        }
    }

    func testZeroCounterAAIDsRefusesAValueThatIsNotAnAAID() throws {
        var configuration = InProcessServer.configuration()
        configuration.zeroCounterAAIDs = ["F1D0-1001"]
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual(
                error as? ServerConfiguration.ConfigurationError,
                .invalid("zeroCounterAAIDs: \"F1D0-1001\" is not an AAID (VVVV#MMMM)"))
        }
    }

    func testATransactionRequestOffersOnlyAuthenticatorsWithADisplay() async throws {
        var configuration = InProcessServer.configuration()
        configuration.metadataJSON = """
            [{"aaid":"F1D0#1001","description":"with a display","attestationTypes":[15880],"upv":[{"major":1,"minor":1}],
              "userVerificationDetails":[[{"userVerification":4}]],"authenticationAlgorithm":2,"publicKeyAlgAndEncoding":257,
              "keyProtection":1,"matcherProtection":1,"attachmentHint":1,"tcDisplay":1,"tcDisplayContentType":"text/plain",
              "assertionScheme":"UAFV1TLV","authenticatorVersion":1,"isSecondFactorOnly":false,"attestationRootCertificates":[]},
             {"aaid":"ABCD#0001","description":"without a display","attestationTypes":[15880],"upv":[{"major":1,"minor":1}],
              "userVerificationDetails":[[{"userVerification":4}]],"authenticationAlgorithm":2,"publicKeyAlgAndEncoding":257,
              "keyProtection":1,"matcherProtection":1,"attachmentHint":1,"tcDisplay":0,
              "assertionScheme":"UAFV1TLV","authenticatorVersion":1,"isSecondFactorOnly":false,"attestationRootCertificates":[]}]
            """
        try await InProcessServer.with(configuration) { loopback in
            let text = [Transaction(contentType: "text/plain", content: "UGF5IDEwMCBDSEY")]
            let (_, confirming) = try await loopback.authenticationRequest(username: nil, transaction: text)
            let (_, login) = try await loopback.authenticationRequest(username: nil)
            XCTAssertEqual(try XCTUnwrap(confirming).policy.accepted.joined().compactMap(\.aaid).joined().sorted(), ["F1D0#1001"])
            XCTAssertEqual(try XCTUnwrap(login).policy.accepted.joined().compactMap(\.aaid).joined().sorted(), ["ABCD#0001", "F1D0#1001"])
            XCTAssertEqual(Set(try XCTUnwrap(confirming).policy.accepted.joined().map(\.tcDisplay)), [nil], "no tcDisplay next to aaid")
        }
    }
}
