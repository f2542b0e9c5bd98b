import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The web demo's passkeys in process: the sign-up the site authorizes as the relying party's backend, for usernames
/// it created only, and the result page that verifies a sign-in's session token. The whole flow in Chromium with a
/// virtual authenticator is `.ci/browser-test`.
final class DemoSitePasskeyTests: XCTestCase {
    static let origin = "https://localhost:8443"

    static func configuration(passkeys: Bool = true) -> ServerConfiguration {
        var configuration = InProcessServer.configuration()
        configuration.demoSite = true
        if passkeys { configuration.fido2 = .init(rpId: "localhost", origins: [origin]) }
        return configuration
    }

    func text(_ answer: TestAnswer) -> String { String(decoding: answer.body, as: UTF8.self) }

    func signUp(_ server: InProcessServer, _ username: String) async throws -> TestAnswer {
        try await server.exchange(.POST, "/demo/passkey/signup", body: Data(#"{"username":"\#(username)"}"#.utf8), contentType: "application/json")
    }

    func testTheStartPageOffersPasskeysOnlyWhenTheServerHasThem() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let page = try await server.exchange(.GET, "/demo", body: nil, contentType: "text/html")
            XCTAssertTrue(text(page).contains(#"id="passkey-card""#))
            XCTAssertTrue(text(page).contains(#"autocomplete="username webauthn""#))
        }
        try await InProcessServer.with(Self.configuration(passkeys: false)) { server in
            let page = try await server.exchange(.GET, "/demo", body: nil, contentType: "text/html")
            XCTAssertFalse(text(page).contains("passkey-card"))
            let refused = try await signUp(server, "dave")
            XCTAssertEqual(refused.status, 404)
        }
    }

    func testASignUpForANewUsernameIsRegisteredAndSignsIn() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let answer = try await signUp(server, "dave")
            XCTAssertEqual(answer.status, 200, text(answer))
            let options = try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: answer.body)
            XCTAssertEqual(options.user.name, "dave")
            var browser = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let registered = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&browser, for: options))
            XCTAssertEqual(registered.status, 200, text(registered))
            let signedIn = try await server.signInWithPasskey(&browser, username: "dave")
            let token = try XCTUnwrap(try fido2Response(signedIn).token)
            let page = try await server.exchange(
                .POST, "/demo/passkey/result", body: Data("token=\(token)".utf8),
                contentType: "application/x-www-form-urlencoded")
            XCTAssertEqual(page.status, 200)
            XCTAssertTrue(text(page).contains("Signed in with a passkey"), text(page))
            XCTAssertTrue(text(page).contains("<code>passkey</code>"), text(page))
            // Dave holds a passkey made a moment ago and no phone: welcomed, and not offered a phone to confirm with.
            XCTAssertTrue(text(page).contains("Welcome, dave: your account is ready."), text(page))
            XCTAssertFalse(text(page).contains(#"href="/demo?username=dave""#), text(page))
            XCTAssertTrue(text(page).contains(#"id="your-passkeys""#), text(page))
        }
    }

    func testASignUpForAUserTheDemoDidNotCreateIsRefused() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            // Alice's passkey, registered by the relying party's own backend: the demo must not add one for her.
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let answer = try await signUp(server, "alice")
            XCTAssertEqual(answer.status, 409, text(answer))
            XCTAssertEqual(try fido2Response(answer).errorMessage, AuthCloudService.usernameTaken)
            let left = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(left.count, 1)
        }
    }

    /// The demo's account takeover: in a fresh browser, "Create a passkey" for a user the demo enrolled added a
    /// passkey to her account, which then signed in as her. A sign-up is now for a username nobody holds.
    func testAFreshBrowserCannotAddAPasskeyToAnEnrolledUser() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let first = try await signUp(server, "dave")
            var daves = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let registered = try await server.fido2(
                FIDO2API.attestationResultPath,
                try InProcessServer.attestation(&daves, for: try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: first.body)))
            XCTAssertEqual(registered.status, 200)
            let stranger = try await signUp(server, "dave")
            XCTAssertEqual(stranger.status, 409, text(stranger))
            XCTAssertEqual(try fido2Response(stranger).errorMessage, AuthCloudService.usernameTaken)
            // A user the demo enrolled with her phone is held too.
            let enrolled = try await server.exchange(
                .POST, "/demo/signup", body: Data("username=carol".utf8), contentType: "application/x-www-form-urlencoded")
            XCTAssertEqual(enrolled.status, 200)
            try await HostileClientDemoSiteTests.registerInBand("carol", server.server.stores)
            let phoneUser = try await signUp(server, "carol")
            XCTAssertEqual(phoneUser.status, 409, text(phoneUser))
            let left = try await server.server.stores.passkeys.passkeys(username: "dave")
            XCTAssertEqual(left.count, 1)
            let none = try await server.server.stores.passkeys.passkeys(username: "carol")
            XCTAssertEqual(none.count, 0)
        }
    }

    /// Her own second passkey: the result page of her sign-in carries its token, which `passkey/add` takes as proof.
    func testASignedInUserAddsAPasskeyWithHerSignInsToken() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let options = try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: try await signUp(server, "dave").body)
            var laptop = SoftwarePasskeyAuthenticator(origin: Self.origin)
            _ = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&laptop, for: options))
            let signedIn = try await server.signInWithPasskey(&laptop, username: "dave")
            let token = try XCTUnwrap(try fido2Response(signedIn).token)
            let page = try await server.exchange(
                .POST, "/demo/passkey/result", body: Data("token=\(token)".utf8), contentType: "application/x-www-form-urlencoded")
            XCTAssertTrue(text(page).contains(#"id="add-passkey" data-username="dave" data-proof="\#(token)""#), text(page))
            let added = try await server.exchange(
                .POST, "/demo/passkey/add", body: Data(#"{"proof":"\#(token)"}"#.utf8), contentType: "application/json")
            XCTAssertEqual(added.status, 200, text(added))
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let second = try await server.fido2(
                FIDO2API.attestationResultPath,
                try InProcessServer.attestation(&phone, for: try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: added.body)))
            XCTAssertEqual(second.status, 200, text(second))
            let passkeys = try await server.server.stores.passkeys.passkeys(username: "dave")
            XCTAssertEqual(passkeys.count, 2)
        }
    }

    /// Adding a passkey needs a verified sign-in of the last five minutes: garbage, a relying party's token and a
    /// sign-in token from another time are refused, and nothing is issued.
    func testAddingAPasskeyNeedsARecentSignIn() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let options = try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: try await signUp(server, "dave").body)
            var laptop = SoftwarePasskeyAuthenticator(origin: Self.origin)
            _ = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&laptop, for: options))
            server.clock.advance(301)
            let signedIn = try await server.signInWithPasskey(&laptop, username: "dave")
            let stale = try XCTUnwrap(try fido2Response(signedIn).token)
            for proof in ["garbage", try await server.relyingParty.token(for: "dave"), stale] {
                let refused = try await server.exchange(
                    .POST, "/demo/passkey/add", body: Data(#"{"proof":"\#(proof)"}"#.utf8), contentType: "application/json")
                XCTAssertEqual(refused.status, 401, text(refused))
                XCTAssertEqual(
                    try fido2Response(refused).errorMessage, "Sign in again first: adding a passkey needs a sign-in of the last five minutes.")
            }
            let missing = try await server.exchange(.POST, "/demo/passkey/add", body: Data("{}".utf8), contentType: "application/json")
            XCTAssertEqual(missing.status, 400)
        }
    }

    func testASignUpOfAnotherMediaTypeOrWithoutAUsernameIsRefused() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let form = try await server.exchange(
                .POST, "/demo/passkey/signup", body: Data("username=dave".utf8),
                contentType: "application/x-www-form-urlencoded")
            XCTAssertEqual(form.status, 415)
            let empty = try await signUp(server, "")
            XCTAssertEqual(empty.status, 400)
            let unreadable = try await server.exchange(.POST, "/demo/passkey/signup", body: Data("[]".utf8), contentType: "application/json")
            XCTAssertEqual(unreadable.status, 400)
        }
    }

    func testAResultWithATokenThatIsNotAPasskeySessionIsRefused() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            for token in ["garbage", try await server.relyingParty.token(for: "dave")] {
                let page = try await server.exchange(
                    .POST, "/demo/passkey/result", body: Data("token=\(token)".utf8),
                    contentType: "application/x-www-form-urlencoded")
                XCTAssertEqual(page.status, 400)
                XCTAssertTrue(text(page).contains("That sign-in could not be verified."), text(page))
            }
        }
    }

    func testTheUsernameTheStartPageIsGivenIsEscaped() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let page = try await server.exchange(.GET, "/demo?username=%3Cscript%3Ex", body: nil, contentType: "text/html")
            XCTAssertFalse(text(page).contains("<script>x"))
            XCTAssertTrue(text(page).contains("&lt;script&gt;x"), text(page))
        }
    }
}
