import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import Primitives
import XCTest

/// Passkeys in the SDK against a real server on loopback: the user signs in with her UAF key, adds a passkey
/// (`operations.passkeyRegistration`, the simulated phone's platform authenticator), and signs in with it
/// (`operations.passkeyAuthentication`) through nevisFIDO's FIDO2 API, getting the session a UAF login gets.
final class PasskeyFlowTests: XCTestCase {
    private var env: Environment!

    override func setUp() async throws { env = try await Self.environment() }
    override func tearDown() async throws { try await env.shutdown() }

    /// A server whose relying party ID is the app's associated domain, accepting the app's origin.
    static func environment(origins: [String] = ["https://bank.example"]) async throws -> Environment {
        try await Environment { configuration, _ in configuration.fido2 = ServerConfiguration.FIDO2(rpId: "bank.example", origins: origins) }
    }

    /// Her UAF registration and login: the session that may add a passkey.
    private func signedIn(_ client: any MobileAuthenticationClient) async throws -> any AuthorizationProvider {
        try await client.register("alice")
        let session = try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        return try XCTUnwrap(session)
    }

    private func claims(_ provider: (any AuthorizationProvider)?) throws -> [String: Any] {
        let jwt = try XCTUnwrap((provider as? JwtAuthorizationProvider)?.jwt)
        let payload = try XCTUnwrap(Base64URL.decode(String(jwt.split(separator: ".")[1])))
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
    }

    func testAPasskeyAddedAfterAUAFLoginSignsInAndOpensAPasskeySession() async throws {
        let client = try await env.client()
        let session = try await signedIn(client)
        let credentialID = try await client.operations.passkeyRegistration.username("alice").displayName("Alice Example")
            .friendlyName("Alice's iPhone").authorizationProvider(session).executeAsync()
        XCTAssertEqual(Base64URL.decode(credentialID)?.count, 32)

        let signIn = try await client.operations.passkeyAuthentication.username("alice").executeAsync()
        let claims = try claims(signIn)
        XCTAssertEqual(claims["sub"] as? String, "alice")
        XCTAssertEqual(claims["method"] as? String, "passkey")
        XCTAssertEqual(env.platform.simulatedPasskeys.sheetCount, 2)
    }

    /// The username field's AutoFill suggestion: no username, the device's passkey for the site.
    func testAnAutoFillSignInWithoutAUsernameFindsHerPasskey() async throws {
        let client = try await env.client()
        try await client.operations.passkeyRegistration.username("alice").authorizationProvider(try await signedIn(client)).executeAsync()
        let signIn = try await client.operations.passkeyAuthentication.mediation(.autoFill).executeAsync()
        XCTAssertEqual(try claims(signIn)["sub"] as? String, "alice")
    }

    // MARK: An Android app

    /// Credential Manager writes the app's origin, `android:apk-key-hash:<signing certificate digest>`: a server whose
    /// `fido2.apps` names the app accepts it, its `assetlinks.json` vouching for the app.
    func testAnAndroidAppsPasskeyIsAcceptedForTheAppTheServerNames() async throws {
        try await env.shutdown()
        env = try await Environment(profile: .android) { configuration, _ in
            configuration.fido2 = ServerConfiguration.FIDO2(
                rpId: "bank.example", origins: ["https://bank.example"],
                apps: .init(
                    android: [
                        .init(
                            packageName: SoftwarePlayIntegrity.virtualDevicePackageName,
                            certificateSha256Digests: [SoftwarePlayIntegrity.virtualDeviceCertificateDigest])
                    ]))
        }
        let client = try await env.client()
        try await client.operations.passkeyRegistration.username("alice")
            .authorizationProvider(try await relyingPartyAuthorization("alice")).executeAsync()
        let signIn = try await client.operations.passkeyAuthentication.username("alice").executeAsync()
        XCTAssertEqual(try claims(signIn)["sub"] as? String, "alice")
        XCTAssertEqual(
            env.platform.simulatedPasskeys.origin(relyingPartyID: "bank.example"),
            "android:apk-key-hash:\(SoftwarePlayIntegrity.virtualDeviceCertificateDigest)")
    }

    func testAnAndroidAppTheServerDoesNotNameIsRefusedInItsWords() async throws {
        try await env.shutdown()
        env = try await Environment(profile: .android) { configuration, _ in
            configuration.fido2 = ServerConfiguration.FIDO2(rpId: "bank.example", origins: ["https://bank.example"])
        }
        let client = try await env.client()
        let error = await captureError {
            try await client.operations.passkeyRegistration.username("alice")
                .authorizationProvider(try await relyingPartyAuthorization("alice")).executeAsync()
        }
        guard case .FidoError(.protocolError, let cause)? = error as? OperationError, let status = cause as? ServerStatusError else {
            return XCTFail("\(String(describing: error))")
        }
        XCTAssertTrue(status.message?.contains("android:apk-key-hash:") == true, status.message ?? "")
    }

    // MARK: Unhappy paths

    func testAPasskeyWithoutASessionIsRefusedBeforeTheSheetShows() async throws {
        let client = try await env.client()
        try await client.register("alice")
        let error = await captureError { try await client.operations.passkeyRegistration.username("alice").executeAsync() }
        guard case .NetworkError(let cause)? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual((cause as? ServerStatusError)?.httpStatus, 401)
        XCTAssertEqual(env.platform.simulatedPasskeys.sheetCount, 0)
        XCTAssertTrue(env.platform.simulatedPasskeys.stored.isEmpty)
    }

    func testADismissedSheetIsUserCanceledAndRegistersNothing() async throws {
        let client = try await env.client()
        let session = try await signedIn(client)
        env.platform.simulatedPasskeys.declineNext()
        let error = await captureError {
            try await client.operations.passkeyRegistration.username("alice").authorizationProvider(session).executeAsync()
        }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .userCanceled)
        let signIn = await captureError { _ = try await client.operations.passkeyAuthentication.username("alice").executeAsync() }
        XCTAssertEqual(fidoCode(try XCTUnwrap(signIn)), .noSuitableAuthenticator)
    }

    func testASecondPasskeyOnTheSameDeviceIsRefusedByTheAuthenticator() async throws {
        let client = try await env.client()
        let session = try await signedIn(client)
        try await client.operations.passkeyRegistration.username("alice").authorizationProvider(session).executeAsync()
        let error = await captureError {
            try await client.operations.passkeyRegistration.username("alice").authorizationProvider(session).executeAsync()
        }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .noSuitableAuthenticator)
        XCTAssertEqual(
            ((error as? OperationError).flatMap { if case .FidoError(_, let cause) = $0 { cause } else { nil } } as? PasskeyFailure)?.kind,
            .alreadyRegistered)
        XCTAssertEqual(env.platform.simulatedPasskeys.stored.count, 1)
    }

    func testAPasskeyDeletedOnThePhoneCannotSignIn() async throws {
        let client = try await env.client()
        let credentialID = try await client.operations.passkeyRegistration.username("alice").authorizationProvider(try await signedIn(client))
            .executeAsync()
        env.platform.simulatedPasskeys.remove(credentialID: try XCTUnwrap(Base64URL.decode(credentialID)))
        let error = await captureError { _ = try await client.operations.passkeyAuthentication.executeAsync() }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .noSuitableAuthenticator)
    }

    /// A server without passkeys (no `fido2` section) has no such endpoint: the Nevis SDK's error for it.
    func testAServerWithoutPasskeysIsOperationNotSupportedByBackend() async throws {
        try await env.shutdown()
        env = try await Environment()
        let client = try await env.client()
        let session = try await signedIn(client)
        let error = await captureError {
            try await client.operations.passkeyRegistration.username("alice").authorizationProvider(session).executeAsync()
        }
        guard case .OperationNotSupportedByBackend? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        let signIn = await captureError { _ = try await client.operations.passkeyAuthentication.executeAsync() }
        guard case .OperationNotSupportedByBackend? = signIn as? OperationError else { return XCTFail("\(String(describing: signIn))") }
        XCTAssertEqual(env.platform.simulatedPasskeys.sheetCount, 0)
    }

    /// A server that does not accept the app's origin (the app is missing from its origins): the server's refusal,
    /// in its words, and nothing registered.
    func testAServerThatDoesNotAcceptTheAppsOriginRefusesInItsWords() async throws {
        try await env.shutdown()
        env = try await Self.environment(origins: ["https://login.bank.example"])
        let client = try await env.client()
        let session = try await signedIn(client)
        let error = await captureError {
            try await client.operations.passkeyRegistration.username("alice").authorizationProvider(session).executeAsync()
        }
        guard case .FidoError(.protocolError, let cause)? = error as? OperationError, let status = cause as? ServerStatusError else {
            return XCTFail("\(String(describing: error))")
        }
        XCTAssertEqual(status.httpStatus, 400)
        XCTAssertTrue(status.message?.contains("origin") == true, status.message ?? "")
        let signIn = await captureError { _ = try await client.operations.passkeyAuthentication.executeAsync() }
        XCTAssertNotNil(signIn, "a passkey the server refused must not sign in")
    }
}
