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
            let page = try await server.exchange(.POST, "/demo/passkey/result", body: Data("token=\(token)".utf8),
                                                 contentType: "application/x-www-form-urlencoded")
            XCTAssertEqual(page.status, 200)
            XCTAssertTrue(text(page).contains("Signed in with a passkey"), text(page))
            XCTAssertTrue(text(page).contains("<code>passkey</code>"), text(page))
            XCTAssertTrue(text(page).contains(#"href="/demo?username=dave""#), text(page))
        }
    }

    func testASignUpForAUserTheDemoDidNotCreateIsRefused() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            // Alice's passkey, registered by the relying party's own backend: the demo must not add one for her.
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let answer = try await signUp(server, "alice")
            XCTAssertEqual(answer.status, 409, text(answer))
            XCTAssertEqual(try fido2Response(answer).errorMessage, "This username is taken; choose another.")
            let left = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(left.count, 1)
        }
    }

    func testASignUpOfAnotherMediaTypeOrWithoutAUsernameIsRefused() async throws {
        try await InProcessServer.with(Self.configuration()) { server in
            let form = try await server.exchange(.POST, "/demo/passkey/signup", body: Data("username=dave".utf8),
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
                let page = try await server.exchange(.POST, "/demo/passkey/result", body: Data("token=\(token)".utf8),
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
