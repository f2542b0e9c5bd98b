import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import JOSE
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// What a token of this server authorizes: the JWT after a registration says so (`token_use`) and only creates that
/// device's dispatch target; adding an authenticator with a session needs a recent authentication.
final class HostileClientTokenUseTests: XCTestCase {
    /// The claims of a JWT, read without verifying it (the relying party's view of its payload).
    static func claims(_ jwt: String) throws -> IssuedTokenClaims {
        let payload = try XCTUnwrap(Base64URL.decode(String(jwt.split(separator: ".")[1])))
        return try JSONDecoder().decode(IssuedTokenClaims.self, from: payload)
    }

    /// Registers a key for alice (named as made on `deviceId`) and returns the JWT the registration hands out.
    static func registrationToken(_ loopback: InProcessServer, deviceId: String?) async throws -> String {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        var response = try authenticator.register(request, serverAppID: loopback.server.appID)
        if let deviceId { response.header.exts = [Extension(id: DeviceServiceWire.deviceIDExtension, data: deviceId, failIfUnknown: false)] }
        let registered = try await loopback.send("/nevisfido/uaf/1.1/registration", response)
        XCTAssertEqual(registered.statusCode, 1200)
        return try XCTUnwrap(registered.additionalTokens?.first { $0.type == .jwt }?.value)
    }

    /// Registers a key for alice and logs in with it: the login's answer.
    static func login(_ loopback: InProcessServer) async throws -> ServerResponse {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        _ = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        let (_, auth) = try await loopback.authenticationRequest(username: "alice")
        return try await loopback.send(
            "/nevisfido/uaf/1.1/authentication",
            try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID))
    }

    static func createTarget(_ loopback: InProcessServer, deviceId: String, jwt: String) async throws -> Int {
        let body = DispatchTargetWire.Creation(
            username: "alice", name: "phone \(deviceId)", deviceId: deviceId, dispatcher: nil, target: "fcm-token",
            signatureKey: JWK(publicKey: P256.Signing.PrivateKey().publicKey).json,
            encryptionKey: JWK(encryptionKey: P256.KeyAgreement.PrivateKey().publicKey).json)
        return try await loopback.exchange(
            .POST, "/nevisfido/token/dispatch/targets", body: try JSONEncoder().encode(body),
            contentType: "application/json", headers: [("Authorization", "Bearer \(jwt)")]
        ).status
    }

    func testTheTokenAfterARegistrationSaysWhatItIs() async throws {
        try await InProcessServer.with { loopback in
            let jwt = try await Self.registrationToken(loopback, deviceId: "device-1")
            let claims = try Self.claims(jwt)
            XCTAssertEqual(claims.token_use, "registration")
            XCTAssertEqual(claims.device_id, "device-1")
        }
    }

    func testTheTokenAfterALoginSaysAuthentication() async throws {
        try await InProcessServer.with { loopback in
            let login = try await Self.login(loopback)
            let jwt = try XCTUnwrap(login.additionalTokens?.first { $0.type == .jwt }?.value)
            XCTAssertEqual(try Self.claims(jwt).token_use, "authentication")
        }
    }

    func testTheRegistrationTokenCreatesItsDevicesDispatchTarget() async throws {
        try await InProcessServer.with { loopback in
            let jwt = try await Self.registrationToken(loopback, deviceId: "device-1")
            let created = try await Self.createTarget(loopback, deviceId: "device-1", jwt: jwt)
            XCTAssertEqual(created, 201)
        }
    }

    func testTheRegistrationTokenCreatesNoTargetForAnotherDevice() async throws {
        try await InProcessServer.with { loopback in
            let jwt = try await Self.registrationToken(loopback, deviceId: "device-1")
            let created = try await Self.createTarget(loopback, deviceId: "device-2", jwt: jwt)
            XCTAssertEqual(created, 403)
        }
    }

    // MARK: The device link a Nevis SDK makes (no device-id extension)

    func deviceIds(_ loopback: InProcessServer) async throws -> [String?] {
        try await loopback.server.stores.registrations.registrations(username: "alice").map(\.deviceId)
    }

    func testTheTargetARegistrationTokenCreatesLinksThatRegistrationsKeyToTheDevice() async throws {
        try await InProcessServer.with { loopback in
            let jwt = try await Self.registrationToken(loopback, deviceId: nil)
            let unlinked = try await deviceIds(loopback)
            XCTAssertEqual(unlinked, [nil], "a response without the extension names no device")
            let created = try await Self.createTarget(loopback, deviceId: "nevis-device", jwt: jwt)
            XCTAssertEqual(created, 201)
            let linked = try await deviceIds(loopback)
            XCTAssertEqual(linked, ["nevis-device"])
        }
    }

    func testATargetCreatedWithAnotherCredentialLinksNothing() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registrationToken(loopback, deviceId: nil)
            let created = try await Self.createTarget(
                loopback, deviceId: "nevis-device", jwt: try await loopback.relyingParty.token(for: "alice", now: loopback.clock.now))
            XCTAssertEqual(created, 201)
            let ids = try await deviceIds(loopback)
            XCTAssertEqual(ids, [nil], "the relying party's token is not the registering device's word")
        }
    }

    func testTheLinkReachesOnlyTheRegistrationTheTokenWasIssuedFor() async throws {
        try await InProcessServer.with { loopback in
            _ = try await Self.registrationToken(loopback, deviceId: nil)
            loopback.clock.advance(1)
            let jwt = try await Self.registrationToken(loopback, deviceId: nil)
            let created = try await Self.createTarget(loopback, deviceId: "nevis-device", jwt: jwt)
            XCTAssertEqual(created, 201)
            let ids = try await deviceIds(loopback)
            XCTAssertEqual(ids, [nil, "nevis-device"], "the earlier key, from another registration, stays unlinked")
        }
    }

    func testAKeyThatNamedItsDeviceIsNeverRelinked() async throws {
        try await InProcessServer.with { loopback in
            let jwt = try await Self.registrationToken(loopback, deviceId: "device-1")
            let created = try await Self.createTarget(loopback, deviceId: "device-1", jwt: jwt)
            XCTAssertEqual(created, 201)
            let ids = try await deviceIds(loopback)
            XCTAssertEqual(ids, ["device-1"])
        }
    }

    func testTheRegistrationTokenIsNotASession() async throws {
        try await InProcessServer.with { loopback in
            let jwt = try await Self.registrationToken(loopback, deviceId: nil)
            let headers = [("Authorization", "Bearer \(jwt)")]
            let registration = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try InProcessServer.registrationBody("alice"), headers: headers)
            XCTAssertEqual(registration.status, 403, "a registration token asked for another registration")
            let listing = try await loopback.exchange(.GET, "/nevisfido/token/dispatch/targets?username=alice", body: nil, headers: headers)
            XCTAssertEqual(listing.status, 403, "a registration token listed the user's targets")
            let deregistration = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/request/deregistration",
                body: try JSONEncoder().encode(GetUAFRequest(op: .deregistration, context: #"{"username":"alice"}"#)),
                headers: headers)
            XCTAssertEqual(deregistration.status, 403, "a registration token removed the user's keys")
        }
    }

    func testAddingAnAuthenticatorWithAStaleSessionIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let login = try await Self.login(loopback)
            // The cookie (an hour), not the JWT (five minutes): the session outlives the recent-authentication window.
            let session = [cookieHeader(try XCTUnwrap(login.additionalTokens?.first { $0.type == .httpCookie }?.value))]
            let fresh = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try InProcessServer.registrationBody("alice"), headers: session)
            XCTAssertEqual(fresh.status, 200, "a session just opened adds an authenticator")
            // 301 s later the session is still live (an hour) but its authentication is no longer recent.
            loopback.clock.advance(301)
            let stale = try await loopback.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try InProcessServer.registrationBody("alice"), headers: session)
            XCTAssertEqual(stale.status, 403)
            let signOut = try await loopback.exchange(.DELETE, "/nevisfido/session", body: nil, headers: session)
            XCTAssertTrue((200..<300).contains(signOut.status), "the stale session still signs out: \(signOut.status)")
        }
    }
}
