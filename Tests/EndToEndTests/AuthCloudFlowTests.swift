import Crypto
import DevelopmentStandIns
import FIDOServer
import Foundation
import JOSE
import MobileAuthentication
import MobileAuthenticationSimulator
import Primitives
import UAF
import XCTest

/// The Auth Cloud API end to end over loopback TLS: a relying-party backend with an access key enrolls a user, the
/// app registers with `AuthCloudApiRegistration` (from the enroll response or its app link) on the SDK's Auth Cloud
/// preset, the front end polls the status; approvals by push with a message to confirm; user lookup and deletion;
/// and the refusals.
final class AuthCloudFlowTests: BackendTestCase {
    override class var withPush: Bool { true }
    var accessKey: String!

    override func setUp() async throws {
        try await super.setUp()
        accessKey = try await environment.server.stores.accessKeys.create(name: "e2e backend", now: Date()).key
    }

    struct Enrolled: Decodable {
        struct Enrollment: Decodable {
            struct QR: Decodable {
                var type: String
                var size: Int
                var dataUri: String
            }
            var transactionId: String
            var statusToken: String
            var qrCode: QR
            var appLinkUri: String
        }
        var userId: String
        var username: String
        var status: String
        var enrollment: Enrollment?
    }

    struct Approval: Decodable {
        var transactionId: String
        var statusToken: String
        var userId: String?
        var username: String?
        var dispatchResult: String
        var appLinkUri: String?
    }

    struct Status: Decodable {
        var transactionId: String
        var status: String
        var userId: String?
        var username: String?
        var token: String?
    }

    struct User: Decodable {
        struct Authenticator: Decodable {
            struct Key: Decodable {
                var aaid: String
                var keyId: String
            }
            var authenticatorId: String
            var name: String?
            var pushEnabled: Bool
            var uaf: [Key]
        }
        var userId: String
        var username: String
        var status: String
        var authenticators: [Authenticator]
    }

    /// The SDK on the Auth Cloud preset for this server (`https://127.0.0.1:<port>/_app`).
    private func authCloudClient() async throws -> any MobileAuthenticationClient {
        let hostname = "\(environment.server.baseURL.host!):\(environment.server.baseURL.port!)"
        let configuration = try XCTUnwrap(
            Configuration.authCloudBuilder(hostname: hostname).userInteractionTimeoutInSeconds(5)
                .facetId(environment.platform.applicationFacetId)
                .transportSecurity(.debug(trustedCertificatesPEM: [environment.server.certificatePEM])).build())
        XCTAssertEqual(configuration.baseUrl.path, "/_app")
        return try await environment.client(configuration: configuration)
    }

    private func json(_ object: [String: Any]) throws -> Data { try JSONSerialization.data(withJSONObject: object) }

    private func enroll(_ username: String) async throws -> (answer: Enrolled, text: String) {
        let answer = try await backend.call(.POST, "/api/v1/users/enroll", json: try json(["username": username]), bearer: accessKey)
        XCTAssertEqual(answer.status, 200, answer.text)
        return (try answer.decode(Enrolled.self), answer.text)
    }

    private func status(_ token: String) async throws -> Status {
        let answer = try await backend.call(.POST, "/api/v1/status", json: try json(["statusToken": token]))
        XCTAssertEqual(answer.status, 200, answer.text)
        return try answer.decode(Status.self)
    }

    /// Verifies a result token with the server's published key, as a relying party's backend does.
    private func verifiedClaims(_ token: String) async throws -> [String: Any] {
        let jwks = try await backend.call(.GET, "/.well-known/jwks.json")
        struct Keys: Decodable { var keys: [JWK] }
        let key = try XCTUnwrap(try jwks.decode(Keys.self).keys.first).p256SigningKey()
        let verified = try JWS.verify(token, key: key)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(verified.payload)) as? [String: Any])
    }

    private func registerFromEnrollResponse(_ client: any MobileAuthenticationClient, _ username: String) async throws -> Enrolled {
        let (enrolled, text) = try await enroll(username)
        try await client.operations.authCloudApiRegistration.enrollResponse(text)
            .deviceInformation(DeviceInformation(name: "\(username)'s phone", fcmRegistrationToken: "fcm-\(username)"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        return enrolled
    }

    func testEnrollingFromTheEnrollResponseRegistersAndTheStatusSucceedsWithAVerifiableResultToken() async throws {
        let client = try await authCloudClient()
        let (enrolled, text) = try await enroll("u12345")
        XCTAssertEqual(enrolled.status, "new")
        let enrollment = try XCTUnwrap(enrolled.enrollment)
        XCTAssertEqual(enrollment.qrCode.type, "image/png")
        XCTAssertTrue(enrollment.appLinkUri.hasPrefix(environment.server.baseURL.absoluteString + "/open?dispatchTokenResponse="))
        do {
            let value = try await status(enrollment.statusToken).status
            XCTAssertEqual(value, "pending")
        }

        try await client.operations.authCloudApiRegistration.enrollResponse(text)
            .deviceInformation(DeviceInformation(name: "u12345's phone"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        XCTAssertEqual(client.localData.accounts.map(\.username), ["u12345"])
        XCTAssertEqual(client.localData.accounts.first?.server.baseUrl.path, "/_app", "the account is on the preset's base URL")

        let polled = try await status(enrollment.statusToken)
        XCTAssertEqual(polled.status, "succeeded")
        XCTAssertEqual(polled.userId, enrolled.userId)
        let claims = try await verifiedClaims(try XCTUnwrap(polled.token))
        XCTAssertEqual(claims["sub"] as? String, enrolled.userId)
        XCTAssertEqual(claims["username"] as? String, "u12345")
        XCTAssertEqual(claims["transaction_id"] as? String, enrollment.transactionId)
        XCTAssertEqual(claims["op"] as? String, "enroll")

        // The app then authenticates in band through the preset's /_app paths.
        _ = try await client.operations.authentication.username("u12345")
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
    }

    func testAMissingDeviceServiceBehindTheBasePathIsOperationNotSupportedByBackend() async throws {
        let client = try await authCloudClient()
        _ = try await registerFromEnrollResponse(client, "u-no-devices")
        let base = try XCTUnwrap(client.localData.accounts.first?.server.baseUrl)
        XCTAssertEqual(base.path, "/_app")
        await client.shutdown()
        try await assertNoDeviceService(try await environment.clientWithoutDeviceService(base: base))
    }

    func testEnrollingFromTheAppLinkRegistersAndAReusedEnrollmentIsRefused() async throws {
        let client = try await authCloudClient()
        let (enrolled, _) = try await enroll("linkuser")
        let link = try XCTUnwrap(enrolled.enrollment?.appLinkUri)
        // The QR code holds the same link: a camera reads it back.
        // Read outside the assertion, so that a missing zbarimg skips the test (XCTSkip) instead of failing it.
        let read = try QRReader.read(dataURI: try XCTUnwrap(enrolled.enrollment?.qrCode.dataUri))
        XCTAssertEqual(read, link)
        try await client.operations.authCloudApiRegistration.appLinkUri(link)
            .deviceInformation(DeviceInformation(name: "phone"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        do {
            let value = try await status(try XCTUnwrap(enrolled.enrollment?.statusToken)).status
            XCTAssertEqual(value, "succeeded")
        }

        let other = try await environment.client(
            platform: SimulatedPlatform(
                storageDirectory: environment.directory.appendingPathComponent("second"),
                applicationFacetId: environment.platform.applicationFacetId,
                deviceProfile: .ios))
        do {
            try await other.operations.authCloudApiRegistration.appLinkUri(link).deviceInformation(DeviceInformation(name: "thief"))
                .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
                .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
            XCTFail("an enrollment registers once")
        } catch {
            guard case .TokenAlreadyRedeemed = error else { return XCTFail("\(error)") }
        }
    }

    func testAPushApprovalWithAMessageIsConfirmedOnTheDeviceAndItsResultTokenCarriesTheMessageHash() async throws {
        let client = try await authCloudClient()
        let enrolled = try await registerFromEnrollResponse(client, "payer")
        let message = "<html>Pay <b>CHF 250.00</b> to Example&nbsp;Shop</html>"  // the documented wrapper, kept as sent
        let answer = try await backend.call(
            .POST, "/api/v1/approval",
            json: try json([
                "userId": enrolled.userId, "channel": "push", "message": message, "notificationMessage": "Confirm your payment",
            ]), bearer: accessKey)
        XCTAssertEqual(answer.status, 200, answer.text)
        let approval = try answer.decode(Approval.self)
        XCTAssertEqual(approval.dispatchResult, "dispatched")
        do {
            let value = try await status(approval.statusToken).status
            XCTAssertEqual(value, "pending")
        }

        let firebase = try XCTUnwrap(environment.firebase)
        let arrived = await firebase.messages(atLeast: 1)
        let pushed = try XCTUnwrap(arrived.first)
        XCTAssertEqual(pushed.registrationToken, "fcm-payer")
        let payload = try await client.operations.outOfBandPayloadDecode.json(String(decoding: try JSONEncoder().encode(pushed.data), as: UTF8.self))
            .executeAsync()
        guard case .authentication(let authentication) = try await client.operations.outOfBandOperation.payload(payload).executeAsync() else {
            return XCTFail("the push stands for an authentication")
        }
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        XCTAssertEqual(
            selector.shownContexts.compactMap(\.transactionConfirmationData).map { String(decoding: $0, as: UTF8.self) }, [message],
            "the device shows the message exactly as the relying party sent it")

        let polled = try await status(approval.statusToken)
        XCTAssertEqual(polled.status, "succeeded")
        let claims = try await verifiedClaims(try XCTUnwrap(polled.token))
        XCTAssertEqual(claims["op"] as? String, "approval")
        XCTAssertEqual(claims["txn_hash"] as? String, Base64URL.encode(Array(SHA256.hash(data: Data(message.utf8)))))
        XCTAssertEqual(claims["aaid"] as? String, AuthenticatorAaid.Pin.rawValue)
    }

    func testUsersAreFoundByIdAndUsernameAndDeletingOneRemovesItsAuthenticators() async throws {
        let client = try await authCloudClient()
        let enrolled = try await registerFromEnrollResponse(client, "lookup")
        let byID = try await backend.call(.GET, "/api/v1/users/\(enrolled.userId)", bearer: accessKey)
        XCTAssertEqual(byID.status, 200, byID.text)
        let user = try byID.decode(User.self)
        XCTAssertEqual(user.status, "active")
        XCTAssertEqual(user.authenticators.count, 1)
        XCTAssertEqual(user.authenticators.first?.pushEnabled, true)
        XCTAssertEqual(user.authenticators.first?.uaf.map(\.aaid), [AuthenticatorAaid.Pin.rawValue])
        let byName = try await backend.call(.GET, "/api/v1/users?username=lookup", bearer: accessKey)
        XCTAssertEqual(try byName.decode(User.self).userId, enrolled.userId)

        let deleted = try await backend.call(.DELETE, "/api/v1/users/\(enrolled.userId)", bearer: accessKey)
        XCTAssertEqual(deleted.status, 204, deleted.text)
        do {
            let value = try await backend.call(.GET, "/api/v1/users/\(enrolled.userId)", bearer: accessKey).status
            XCTAssertEqual(value, 404)
        }
        let registrations = try await environment.server.stores.registrations.registrations(username: "lookup")
        XCTAssertTrue(registrations.isEmpty, "the user's keys are gone")
        let approval = try await backend.call(.POST, "/api/v1/approval", json: try json(["username": "lookup"]), bearer: accessKey)
        XCTAssertEqual(approval.status, 404, "a deleted user cannot be asked to approve")
    }

    func testTheAPIRefusesCallsWithoutAKeyOrWithAWrongOrRevokedKey() async throws {
        let body = try json(["username": "nokey"])
        do {
            let value = try await backend.call(.POST, "/api/v1/users/enroll", json: body).status
            XCTAssertEqual(value, 401)
        }
        do {
            let value = try await backend.call(.POST, "/api/v1/users/enroll", json: body, bearer: "mak_" + String(repeating: "A", count: 43)).status
            XCTAssertEqual(value, 401)
        }
        let relyingPartyJWT = try await backend.call(.POST, "/api/v1/users/enroll", json: body, as: "nokey")
        XCTAssertEqual(relyingPartyJWT.status, 401, "a relying-party JWT is not an access key")
        let created = try await environment.server.stores.accessKeys.create(name: "short-lived", now: Date())
        do {
            let value = try await backend.call(.POST, "/api/v1/users/enroll", json: body, bearer: created.key).status
            XCTAssertEqual(value, 200)
        }
        do {
            let value = try await environment.server.stores.accessKeys.revoke(id: created.record.id, now: Date())
            XCTAssertTrue(value)
        }
        do {
            let value = try await backend.call(.POST, "/api/v1/users/enroll", json: body, bearer: created.key).status
            XCTAssertEqual(value, 401)
        }
    }

    func testAnApprovalMessageOutsideTheHTMLSubsetIsRefused() async throws {
        let client = try await authCloudClient()
        let enrolled = try await registerFromEnrollResponse(client, "htmluser")
        for message in ["<script>alert(1)</script>", "<b onclick=\"x()\">Pay</b>", "<b>unclosed", "Tom & Jerry", "Pay <html>CHF 1</html>"] {
            let answer = try await backend.call(
                .POST, "/api/v1/approval", json: try json(["userId": enrolled.userId, "message": message]),
                bearer: accessKey)
            XCTAssertEqual(answer.status, 400, message)
            XCTAssertTrue(answer.text.contains("invalid_message"), answer.text)
        }
        XCTAssertEqual(environment.firebase?.messages.count, 0, "nothing was pushed")
    }

    func testUnknownUsersAndForgedStatusTokensAreRefused() async throws {
        do {
            let value = try await backend.call(.GET, "/api/v1/users/\(UUID().uuidString.lowercased())", bearer: accessKey).status
            XCTAssertEqual(value, 404)
        }
        do {
            let value = try await backend.call(.GET, "/api/v1/users?username=nobody", bearer: accessKey).status
            XCTAssertEqual(value, 404)
        }
        do {
            let value = try await backend.call(.DELETE, "/api/v1/users/\(UUID().uuidString.lowercased())", bearer: accessKey).status
            XCTAssertEqual(value, 404)
        }
        do {
            let value = try await backend.call(.POST, "/api/v1/approval", json: try json(["username": "nobody"]), bearer: accessKey).status
            XCTAssertEqual(value, 404)
        }
        let enrolled = try await enroll("statususer").answer
        let notYetRegistered = try await backend.call(.POST, "/api/v1/approval", json: try json(["username": "statususer"]), bearer: accessKey)
        XCTAssertEqual(notYetRegistered.status, 404)
        XCTAssertTrue(notYetRegistered.text.contains("no_authenticator"), "an enrolled user without a key is known, but has nothing to approve with")
        let token = try XCTUnwrap(enrolled.enrollment?.statusToken)
        // The same claims signed by someone else's key.
        let parts = token.split(separator: ".")
        let forged = try JWS.sign(Array(Base64URL.decode(String(parts[1]))!), header: JWSHeader(kid: "forged"), key: P256.Signing.PrivateKey())
        let refused = try await backend.call(.POST, "/api/v1/status", json: try json(["statusToken": forged]))
        XCTAssertEqual(refused.status, 400, refused.text)
        // A status token is not a session credential.
        let asSession = try await backend.call(
            .POST, "/nevisfido/uaf/1.1/request/registration",
            json: try json(["op": "Reg", "context": "{\"username\":\"statususer\"}"]), bearer: token)
        XCTAssertEqual(asSession.status, 401, asSession.text)
    }

    func testPingAnswersPong() async throws {
        let answer = try await backend.call(.GET, "/ping")
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.text, "PONG")
    }
}

extension AuthCloudFlowTests {
    /// A user registered in band, through nevisFIDO's own paths, is a user of the API at once: found by username,
    /// with a userId that then works as any other.
    func testAUserRegisteredInBandIsFoundByUsernameBeforeAnyApproval() async throws {
        let client = try await environment.client()
        try await client.register("inband")
        let byName = try await backend.call(.GET, "/api/v1/users?username=inband", bearer: accessKey)
        XCTAssertEqual(byName.status, 200, byName.text)
        struct Found: Decodable {
            struct Authenticator: Decodable { var authenticatorId: String }
            var userId: String
            var username: String
            var authenticators: [Authenticator]
        }
        let found = try JSONDecoder().decode(Found.self, from: byName.body)
        XCTAssertEqual(found.username, "inband")
        XCTAssertEqual(found.authenticators.count, 1, byName.text)
        let byID = try await backend.call(.GET, "/api/v1/users/\(found.userId)", bearer: accessKey)
        XCTAssertEqual(byID.status, 200, byID.text)
        let again = try await backend.call(.GET, "/api/v1/users?username=inband", bearer: accessKey)
        XCTAssertEqual(try JSONDecoder().decode(Found.self, from: again.body).userId, found.userId, "one userId, not one per lookup")
        let unregistered = try await backend.call(.GET, "/api/v1/users?username=never-registered", bearer: accessKey)
        XCTAssertEqual(unregistered.status, 404, "a name without registrations is still unknown")
    }
}
