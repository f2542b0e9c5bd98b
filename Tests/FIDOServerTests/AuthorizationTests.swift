import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import JWTKit
import NIOCore
import Primitives
import UAF
import WireJSON
import XCTest
import _CryptoExtras

@testable import FIDOServer
@testable import FIDOServerCore

/// The registration request endpoint's authorization (server-api §C.2): each rejection is a valid request with one
/// thing changed, and none of them stores anything.
final class AuthorizationTests: XCTestCase {
    var loopback: InProcessServer!
    var rp: LocalRelyingParty { loopback.relyingParty }
    let path = "/nevisfido/uaf/1.1/request/registration"

    override func setUp() async throws { loopback = try await InProcessServer() }
    override func tearDown() async throws { try await loopback.shutdown() }

    /// Posts a registration request for `username` with `headers`; returns the HTTP status and body.
    func requestRegistration(_ username: String, headers: [(String, String)]) async throws -> TestAnswer {
        try await loopback.exchange(.POST, path, body: try InProcessServer.registrationBody(username), headers: headers)
    }

    func bearer(_ claims: LocalRelyingParty.Claims, signedBy party: LocalRelyingParty? = nil) async throws -> [(String, String)] {
        [("Authorization", "Bearer \(try await (party ?? rp).sign(claims))")]
    }

    /// 401 with the JSON error body, and no UAF request or status record stored for the user.
    func assertRefused(
        _ answer: TestAnswer, status: Int = 401, username: String = "alice",
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        XCTAssertEqual(answer.status, status, String(decoding: answer.body, as: UTF8.self), file: file, line: line)
        let body = try JSONDecoder().decode([String: String].self, from: answer.body)
        XCTAssertEqual(body["error"], status == 401 ? "unauthorized" : "forbidden", file: file, line: line)
        XCTAssertEqual(answer.headers.first(name: "Cache-Control"), "no-store", file: file, line: line)
        let outstanding = try await loopback.server.stores.uafCeremonies.outstanding(username: username, now: loopback.clock.now)
        XCTAssertEqual(outstanding, 0, "a refused request stored a UAF request", file: file, line: line)
    }

    func testAValidRelyingPartyJWTAuthorizesItsSubject() async throws {
        let answer = try await requestRegistration("alice", headers: try await bearer(rp.claims(subject: "alice", now: loopback.clock.now)))
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(try JSONDecoder().decode(ReturnUAFRequest.self, from: answer.body).statusCode, 1200)
    }

    func testNoCredentialsIs401AndStoresNothing() async throws {
        try await assertRefused(try await requestRegistration("alice", headers: []))
    }

    func testAnExpiredJWTIs401() async throws {
        var claims = rp.claims(subject: "alice", now: loopback.clock.now)
        claims.exp = Int64(loopback.clock.now.timeIntervalSince1970) - 61  // beyond the 60 s leeway
        try await assertRefused(try await requestRegistration("alice", headers: try await bearer(claims)))
    }

    func testAJWTExpiredWithinTheLeewayIsAccepted() async throws {
        var claims = rp.claims(subject: "alice", now: loopback.clock.now)
        claims.exp = Int64(loopback.clock.now.timeIntervalSince1970) - 30
        let answer = try await requestRegistration("alice", headers: try await bearer(claims))
        XCTAssertEqual(answer.status, 200)
    }

    func testANotYetValidJWTIs401() async throws {
        var claims = rp.claims(subject: "alice", now: loopback.clock.now)
        claims.nbf = Int64(loopback.clock.now.timeIntervalSince1970) + 120
        try await assertRefused(try await requestRegistration("alice", headers: try await bearer(claims)))
    }

    func testAWrongAudienceIs401() async throws {
        var claims = rp.claims(subject: "alice", now: loopback.clock.now)
        claims.aud = "another-service"
        try await assertRefused(try await requestRegistration("alice", headers: try await bearer(claims)))
    }

    func testAWrongIssuerIs401() async throws {
        var claims = rp.claims(subject: "alice", now: loopback.clock.now)
        claims.iss = "https://evil.example"
        try await assertRefused(try await requestRegistration("alice", headers: try await bearer(claims)))
    }

    func testAJWTSignedByAnotherKeyWithTheSameKidIs401() async throws {
        let impostor = LocalRelyingParty(issuer: rp.issuer, audience: rp.audience, kid: rp.kid)
        try await assertRefused(
            try await requestRegistration(
                "alice", headers: try await bearer(rp.claims(subject: "alice", now: loopback.clock.now), signedBy: impostor)))
    }

    func testAnUnsignedJWTIs401() async throws {
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT","kid":"rp-key-1"}"#.utf8))
        let payload = Base64URL.encode(Array(try JSONEncoder().encode(rp.claims(subject: "alice", now: loopback.clock.now))))
        try await assertRefused(try await requestRegistration("alice", headers: [("Authorization", "Bearer \(header).\(payload).")]))
    }

    func testAnHMACJWTKeyedWithThePublicKeyIs401() async throws {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Data(rp.publicKeyPEM.utf8)), digestAlgorithm: .sha256, kid: JWKIdentifier(string: rp.kid))
        let token = try await keys.sign(rp.claims(subject: "alice", now: loopback.clock.now), kid: JWKIdentifier(string: rp.kid))
        try await assertRefused(try await requestRegistration("alice", headers: [("Authorization", "Bearer \(token)")]))
    }

    /// Claims shaped like a session token of this server, for alice, valid for a minute.
    func forgedSessionClaims() -> IssuedTokenClaims {
        let now = Int64(loopback.clock.now.timeIntervalSince1970)
        return IssuedTokenClaims(
            iss: "https://127.0.0.1", sub: "alice", aud: nil, iat: now, exp: now + 60, auth_time: now,
            sid: "forged", aaid: "F1D0#1001", keyid: "k", txn_hash: nil)
    }

    func testATokenNamingTheServersKeyButUnsignedIs401() async throws {
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT","kid":"\#(loopback.server.tokenIssuer.kid)"}"#.utf8))
        let payload = Base64URL.encode(Array(try JSONEncoder().encode(forgedSessionClaims())))
        try await assertRefused(try await requestRegistration("alice", headers: [("Authorization", "Bearer \(header).\(payload).")]))
    }

    func testATokenSignedByAnotherServerKeyWithOurKidIs401() async throws {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: ES256PrivateKey(), kid: JWKIdentifier(string: loopback.server.tokenIssuer.kid))
        let token = try await keys.sign(forgedSessionClaims(), kid: JWKIdentifier(string: loopback.server.tokenIssuer.kid))
        try await assertRefused(try await requestRegistration("alice", headers: [("Authorization", "Bearer \(token)")]))
    }

    func testAMalformedAuthorizationHeaderIs401() async throws {
        try await assertRefused(try await requestRegistration("alice", headers: [("Authorization", "Basic YWxpY2U6c2VjcmV0")]))
    }

    func testBobsJWTCannotRegisterAlice() async throws {
        try await assertRefused(
            try await requestRegistration("alice", headers: try await bearer(rp.claims(subject: "bob", now: loopback.clock.now))), status: 403)
    }

    func testAnAdminScopeMayRegisterAnyUser() async throws {
        var claims = rp.claims(subject: "operator", now: loopback.clock.now)
        claims.scope = "profile mauth:admin"
        let answer = try await requestRegistration("alice", headers: try await bearer(claims))
        XCTAssertEqual(answer.status, 200)
    }

    func testTheProxyHeaderIsIgnoredUnlessConfigured() async throws {
        try await assertRefused(try await requestRegistration("alice", headers: [("X-Authenticated-User", "alice")]))
    }

    // MARK: Sessions from a UAF authentication

    /// Registers `username` and authenticates, returning the answer's tokens.
    func signIn(_ username: String) async throws -> (jwt: String, cookie: String, authenticator: SoftwareAuthenticator, answer: TestAnswer) {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: username)
        let registered = try await loopback.send(
            "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        XCTAssertEqual(registered.statusCode, 1200)
        let (_, auth) = try await loopback.authenticationRequest(username: username)
        let response = try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID)
        let answer = try await loopback.exchange(
            .POST, "/nevisfido/uaf/1.1/authentication",
            body: try JSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]))))
        let server = try JSONDecoder().decode(ServerResponse.self, from: answer.body)
        XCTAssertEqual(server.statusCode, 1200)
        let jwt = try XCTUnwrap(server.additionalTokens?.first { $0.type == .jwt }?.value)
        let cookie = try XCTUnwrap(server.additionalTokens?.first { $0.type == .httpCookie }?.value)
        return (jwt, cookie, authenticator, answer)
    }

    func testAuthenticationAnswersAJWTAndASecureSessionCookie() async throws {
        let (jwt, cookie, authenticator, answer) = try await signIn("alice")
        XCTAssertEqual(answer.headers.first(name: "Set-Cookie"), cookie)
        XCTAssertTrue(cookie.hasPrefix("mauth_session="))
        for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/", "Max-Age=3600"] {
            XCTAssertTrue(cookie.contains(attribute), "cookie lacks \(attribute): \(cookie)")
        }
        XCTAssertEqual(answer.headers.first(name: "Cache-Control"), "no-store")
        // The JWT verifies with the published JWKS, as a relying party would check it.
        let jwks = try await loopback.exchange(.GET, "/.well-known/jwks.json", body: nil)
        XCTAssertEqual(jwks.status, 200)
        let keys = try await JWTKeyCollection().add(jwksJSON: String(decoding: jwks.body, as: UTF8.self))
        let claims = try await keys.verify(jwt, as: IssuedTokenClaims.self)
        XCTAssertEqual(claims.sub, "alice")
        XCTAssertEqual(claims.aaid, "F1D0#1001")
        XCTAssertEqual(claims.keyid, Base64URL.encode(authenticator.keyID))
        XCTAssertNil(claims.txn_hash)
        XCTAssertLessThanOrEqual(claims.exp - claims.iat, 300)
        XCTAssertEqual(claims.auth_time, claims.iat)
    }

    func testAConfirmedTransactionPutsItsContentHashInTheJWT() async throws {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        _ = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        let text = Array("Pay 100 CHF to Bob".utf8)
        let (_, auth) = try await loopback.authenticationRequest(
            username: "alice", transaction: [Transaction(contentType: "text/plain", content: Base64URL.encode(text))])
        let result = try await loopback.send(
            "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID))
        let jwt = try XCTUnwrap(result.additionalTokens?.first { $0.type == .jwt }?.value)
        let claims = try await loopback.server.tokenIssuer.verify(jwt, now: loopback.clock.now)
        XCTAssertEqual(claims.txn_hash, Base64URL.encode(Array(SHA256.hash(data: text))))
    }

    func testAlicesSessionCookieCanAddAnAuthenticatorForAlice() async throws {
        let (_, cookie, _, _) = try await signIn("alice")
        let answer = try await requestRegistration("alice", headers: [cookieHeader(cookie)])
        XCTAssertEqual(answer.status, 200)
    }

    func testAlicesSessionJWTCanAddAnAuthenticatorForAlice() async throws {
        let (jwt, _, _, _) = try await signIn("alice")
        let answer = try await requestRegistration("alice", headers: [("Authorization", "Bearer \(jwt)")])
        XCTAssertEqual(answer.status, 200)
    }

    func testAlicesSessionCannotRegisterBob() async throws {
        let (jwt, cookie, _, _) = try await signIn("alice")
        try await assertRefused(try await requestRegistration("bob", headers: [cookieHeader(cookie)]), status: 403, username: "bob")
        try await assertRefused(try await requestRegistration("bob", headers: [("Authorization", "Bearer \(jwt)")]), status: 403, username: "bob")
    }

    func testARevokedSessionIsRefused() async throws {
        let (jwt, cookie, _, _) = try await signIn("alice")
        let signOut = try await loopback.exchange(.DELETE, "/nevisfido/session", body: nil, headers: [cookieHeader(cookie)])
        XCTAssertEqual(signOut.status, 204)
        let outstandingBefore = try await loopback.server.stores.uafCeremonies.outstanding(username: "alice", now: loopback.clock.now)
        let byCookie = try await requestRegistration("alice", headers: [cookieHeader(cookie)])
        let byJWT = try await requestRegistration("alice", headers: [("Authorization", "Bearer \(jwt)")])
        XCTAssertEqual(byCookie.status, 401)
        XCTAssertEqual(byJWT.status, 401)
        let outstandingAfter = try await loopback.server.stores.uafCeremonies.outstanding(username: "alice", now: loopback.clock.now)
        XCTAssertEqual(outstandingAfter, outstandingBefore)
    }

    func testAnExpiredSessionIsRefused() async throws {
        let (jwt, cookie, _, _) = try await signIn("alice")
        loopback.clock.advance(3601)
        try await assertRefused(try await requestRegistration("alice", headers: [cookieHeader(cookie)]))
        try await assertRefused(try await requestRegistration("alice", headers: [("Authorization", "Bearer \(jwt)")]))
    }

    func testAForgedSessionCookieIsRefused() async throws {
        try await assertRefused(try await requestRegistration("alice", headers: [("Cookie", "mauth_session=\(RandomToken.make(32))")]))
    }

    // MARK: Deregistration

    let deregistrationPath = "/nevisfido/uaf/1.1/request/deregistration"

    func deregister(_ context: [String: [String]], username: String, headers: [(String, String)]) async throws -> TestAnswer {
        var object: [String: JSONValue] = ["username": .string(username)]
        for (key, values) in context { object[key] = .array(values.map(JSONValue.string)) }
        let body = try JSONEncoder().encode(GetUAFRequest(op: .deregistration, context: try UAFMessageCodec.encodeObject(object)))
        return try await loopback.exchange(.POST, deregistrationPath, body: body, headers: headers)
    }

    func deregistrationRequest(_ answer: TestAnswer) throws -> DeregistrationRequest {
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        let returned = try JSONDecoder().decode(ReturnUAFRequest.self, from: answer.body)
        XCTAssertEqual(returned.statusCode, 1200)
        XCTAssertEqual(returned.op, .deregistration)
        return try UAFMessageCodec.decode(DeregistrationRequest.self, from: try XCTUnwrap(returned.uafRequest))[0]
    }

    func registerAnother(_ username: String, aaid: String = "F1D0#1005", headers: [(String, String)]) async throws -> SoftwareAuthenticator {
        var authenticator = SoftwareAuthenticator()
        authenticator.aaid = aaid
        let request = try await loopback.registrationRequest(username: username, headers: headers)
        let result = try await loopback.send(
            "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        XCTAssertEqual(result.statusCode, 1200, result.description ?? "")
        return authenticator
    }

    func testDeregistrationByUsernameRemovesEveryKeyAndTheNextAuthenticationIs1481() async throws {
        var (jwt, _, authenticator, _) = try await signIn("alice")
        let session = [("Authorization", "Bearer \(jwt)")]
        _ = try await registerAnother("alice", headers: session)
        let request = try deregistrationRequest(try await deregister([:], username: "alice", headers: session))
        XCTAssertEqual(Set(request.authenticators.map(\.aaid)), ["F1D0#1001", "F1D0#1005"])
        XCTAssertNil(request.header.serverData)
        let left = try await loopback.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(left, [])
        // The removed key answers a usernameless authentication request: unknown KeyID.
        let (_, auth) = try await loopback.authenticationRequest(username: nil)
        let result = try await loopback.send(
            "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID))
        XCTAssertEqual(result.statusCode, 1481)
        // Deregistering every key ended the user's sessions too.
        try await assertRefused(try await requestRegistration("alice", headers: session))
    }

    func testDeregisteringAKeyRevokesTheSessionsItOpenedAndNoOthers() async throws {
        let (jwtA, _, authenticatorA, _) = try await signIn("alice")
        let sessionA = [("Authorization", "Bearer \(jwtA)")]
        var authenticatorB = try await registerAnother("alice", headers: sessionA)
        let (_, auth) = try await loopback.authenticationRequest(username: "alice")
        let login = try await loopback.send(
            "/nevisfido/uaf/1.1/authentication",
            try authenticatorB.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID))
        let jwtB = try XCTUnwrap(login.additionalTokens?.first { $0.type == .jwt }?.value)
        let sessionB = [("Authorization", "Bearer \(jwtB)")]
        // Key A is removed (say it was stolen); alice keeps key B.
        _ = try deregistrationRequest(
            try await deregister(["keyIDs": [Base64URL.encode(authenticatorA.keyID)]], username: "alice", headers: sessionB))
        try await assertRefused(try await requestRegistration("alice", headers: sessionA))
        let stillSignedIn = try await requestRegistration("alice", headers: sessionB)
        XCTAssertEqual(stillSignedIn.status, 200, String(decoding: stillSignedIn.body, as: UTF8.self))
    }

    func testDeregistrationByAAIDRemovesOnlyThatAuthenticator() async throws {
        let (jwt, _, authenticator, _) = try await signIn("alice")
        let session = [("Authorization", "Bearer \(jwt)")]
        _ = try await registerAnother("alice", headers: session)
        let request = try deregistrationRequest(try await deregister(["aaid": ["F1D0#1005"]], username: "alice", headers: session))
        XCTAssertEqual(request.authenticators.map(\.aaid), ["F1D0#1005"])
        let left = try await loopback.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(left.map(\.keyID), [Base64URL.encode(authenticator.keyID)])
    }

    func testDeregistrationByKeyIDRemovesOnlyThatKey() async throws {
        let (jwt, _, authenticator, _) = try await signIn("alice")
        let session = [("Authorization", "Bearer \(jwt)")]
        let second = try await registerAnother("alice", headers: session)
        let keyID = Base64URL.encode(authenticator.keyID)
        let request = try deregistrationRequest(try await deregister(["keyIDs": [keyID]], username: "alice", headers: session))
        XCTAssertEqual(request.authenticators, [DeregisterAuthenticator(aaid: "F1D0#1001", keyID: keyID)])
        let left = try await loopback.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(left.map(\.keyID), [Base64URL.encode(second.keyID)])
    }

    func testSomeoneElsesSessionCannotDeregister() async throws {
        _ = try await signIn("alice")
        let (bobJWT, _, _, _) = try await signIn("bob")
        let answer = try await deregister([:], username: "alice", headers: [("Authorization", "Bearer \(bobJWT)")])
        XCTAssertEqual(answer.status, 403)
        let left = try await loopback.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(left.count, 1)
    }

    func testDeregistrationWithoutCredentialsIs401() async throws {
        _ = try await signIn("alice")
        let answer = try await deregister([:], username: "alice", headers: [])
        XCTAssertEqual(answer.status, 401)
        let left = try await loopback.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(left.count, 1)
    }

    // MARK: Status

    struct Status: Decodable {
        var status: String
        var userId: String?
        var uafStatusCode: Int?
        var asmStatusCode: Int?
        var clientErrorCode: Int?
        var authenticators: [[String: String]]
    }

    func status(_ sessionId: String) async throws -> Status {
        let answer = try await loopback.exchange(
            .POST, "/nevisfido/status", body: try JSONEncoder().encode(["sessionId": sessionId]), contentType: "application/json")
        XCTAssertEqual(answer.status, 200)
        return try JSONDecoder().decode(Status.self, from: answer.body)
    }

    func testStatusRecordsMoveFromClientAuthenticatingToSucceeded() async throws {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        let registering = try await status(try XCTUnwrap(request.header.serverData))
        XCTAssertEqual(registering.status, "clientRegistering")
        _ = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        let registered = try await status(request.header.serverData!)
        XCTAssertEqual(registered.status, "succeeded")
        XCTAssertEqual(registered.uafStatusCode, 1200)
        XCTAssertEqual(registered.userId, "alice")
        XCTAssertEqual(registered.authenticators, [["aaid": "F1D0#1001", "keyId": Base64URL.encode(authenticator.keyID)]])

        let (answer, auth) = try await loopback.authenticationRequest(username: nil)
        XCTAssertEqual(answer.statusCode, 1200)
        let sessionId = try XCTUnwrap(auth?.header.serverData)
        let authenticating = try await status(sessionId)
        XCTAssertEqual(authenticating.status, "clientAuthenticating")
        XCTAssertNil(authenticating.userId)
        let response = try authenticator.authenticate(auth!, serverAppID: loopback.server.appID)
        let send = SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]), context: #"{"asmStatusCode":0}"#)
        _ = try await loopback.post("/nevisfido/uaf/1.1/authentication", send, as: ServerResponse.self)
        let succeeded = try await status(sessionId)
        XCTAssertEqual(succeeded.status, "succeeded")
        XCTAssertEqual(succeeded.userId, "alice")
        XCTAssertEqual(succeeded.asmStatusCode, 0)
    }

    func testAFailedAuthenticationLeavesAFailedStatusWithItsUAFCode() async throws {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        _ = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        let (_, auth) = try await loopback.authenticationRequest(username: "alice")
        let response = try authenticator.authenticate(auth!, serverAppID: loopback.server.appID) { $0.authenticatorNonce = [1, 2, 3] }
        let result = try await loopback.send("/nevisfido/uaf/1.1/authentication", response)
        XCTAssertNotEqual(result.statusCode, 1200)
        let failed = try await status(auth!.header.serverData!)
        XCTAssertEqual(failed.status, "failed")
        XCTAssertEqual(failed.uafStatusCode, result.statusCode)
    }

    func testAResponseWithoutAssertionsReportsTheDevicesErrorCodes() async throws {
        var authenticator = SoftwareAuthenticator()
        let request = try await loopback.registrationRequest(username: "alice")
        _ = try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
        let (_, auth) = try await loopback.authenticationRequest(username: "alice")
        // The device failed locally (user cancelled) and reports it with a spec-shaped response without assertions.
        var response = try authenticator.authenticate(try XCTUnwrap(auth), serverAppID: loopback.server.appID)
        response.assertions = []
        let send = SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]), context: #"{"asmStatusCode":3,"clientErrorCode":3}"#)
        let result = try await loopback.post("/nevisfido/uaf/1.1/authentication", send, as: ServerResponse.self)
        XCTAssertNotEqual(result.statusCode, 1200)
        let failed = try await status(auth!.header.serverData!)
        XCTAssertEqual(failed.status, "failed")
        XCTAssertEqual(failed.asmStatusCode, 3)
        XCTAssertEqual(failed.clientErrorCode, 3)
    }

    func testAnUnknownStatusSessionIsUnknown() async throws {
        let unknown = try await status("no-such-session")
        XCTAssertEqual(unknown.status, "unknown")
    }

    func testTheRequestAnswerNamesItsStatusSession() async throws {
        let answer = try await requestRegistration("alice", headers: try await loopback.bearer("alice"))
        let returned = try JSONDecoder().decode(ReturnUAFRequest.self, from: answer.body)
        let request = try UAFMessageCodec.decode(RegistrationRequest.self, from: try XCTUnwrap(returned.uafRequest))[0]
        XCTAssertEqual(answer.headers.first(name: "Mauth-Session-Id"), request.header.serverData)
    }
}
