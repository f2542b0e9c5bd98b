import FIDOServer
import Foundation
import Hummingbird
import HummingbirdTLS
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import ServiceLifecycle
import _CryptoExtras

/// A local stand-in for Google's OAuth 2.0 token endpoint and the FCM HTTP v1 `messages:send` endpoint, over HTTPS
/// on loopback, for tests and the demo. It implements both contracts as the server relies on them:
///
/// - `POST /token` (form `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>`): the assertion must
///   be RS256, verify with the service account's key, and carry `iss` = client email, `aud` = this URL, the
///   messaging `scope`, and an `exp` in the future; the answer is `{"access_token","expires_in","token_type"}`,
///   a refusal `400 {"error":"invalid_grant"}`.
/// - `POST /v1/projects/{project}/messages:send` with `Authorization: Bearer <access token>`: 200 `{"name": …}`;
///   401 `UNAUTHENTICATED` for an unknown token; 404 `NOT_FOUND` with `errorCode` `UNREGISTERED` for a registration
///   token marked unregistered; 400 `INVALID_ARGUMENT` for a message without a token or with non-string data.
public final class FirebaseStandIn: Sendable {
    public struct Message: Sendable, Equatable {
        public let registrationToken: String
        public let data: [String: String]
        public let title: String?
        public let body: String?
    }

    public let projectID = "mauth-standin"
    public let clientEmail = "dispatcher@mauth-standin.iam.gserviceaccount.com"
    /// The service-account key file to configure (`dispatch.firebase.serviceAccountPath`).
    public let serviceAccountPath: String
    /// The PEM of the stand-in's certificate authority (`dispatch.firebase.trustedCertificatesPath`).
    public let trustedCertificatesPath: String
    public let baseURL: String
    public var tokenURL: String { baseURL + "/token" }

    private let state: NIOLockedValueBox<State>
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    struct State {
        var accessTokens: Set<String> = []
        var tokenExchanges = 0
        var messages: [Message] = []
        var unregistered: Set<String> = []
        var refuseAssertions = false
    }

    private init(
        serviceAccountPath: String, trustedCertificatesPath: String, baseURL: String, state: NIOLockedValueBox<State>,
        group: ServiceGroup, task: Task<Void, any Error>
    ) {
        self.serviceAccountPath = serviceAccountPath
        self.trustedCertificatesPath = trustedCertificatesPath
        self.baseURL = baseURL
        self.state = state
        self.group = group
        self.task = task
    }

    /// The configuration that points a server at this stand-in.
    public var configuration: ServerConfiguration.Dispatch.Firebase {
        .init(serviceAccountPath: serviceAccountPath, endpointBaseURL: baseURL, tokenURL: tokenURL, trustedCertificatesPath: trustedCertificatesPath)
    }

    /// What `messages:send` accepted so far.
    public var messages: [Message] { state.withLockedValue { $0.messages } }
    /// How many assertions were exchanged for access tokens (the server should cache its token).
    public var tokenExchanges: Int { state.withLockedValue { $0.tokenExchanges } }
    /// From now on, sends to this registration token answer `UNREGISTERED`.
    public func markUnregistered(_ registrationToken: String) { state.withLockedValue { _ = $0.unregistered.insert(registrationToken) } }
    /// From now on, every assertion is refused (`invalid_grant`), as for a revoked service-account key.
    public func refuseAssertions() { state.withLockedValue { $0.refuseAssertions = true } }

    /// Waits until at least `count` messages arrived (or `timeout` seconds passed) and returns them.
    public func messages(atLeast count: Int, timeout: TimeInterval = 10) async -> [Message] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let current = messages
            if current.count >= count { return current }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        return messages
    }

    /// Starts the stand-in on a free loopback port and writes its key file and CA into `directory`.
    public static func start(directory: URL) async throws -> FirebaseStandIn {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let certificate = try DevelopmentCertificate.generate(hosts: ["127.0.0.1", "localhost"])
        let caPath = directory.appendingPathComponent("firebase-standin-ca.pem").path
        try Data(certificate.trustAnchorPEM.utf8).write(to: URL(fileURLWithPath: caPath))
        let state = NIOLockedValueBox(State())
        let keys = JWTKeyCollection()
        await keys.add(rsa: try Insecure.RSA.PublicKey(backing: rsa.publicKey), digestAlgorithm: .sha256, kid: "standin-key")

        let (started, continuation) = AsyncStream<Int>.makeStream()
        let portBox = NIOLockedValueBox(0)
        let projectID = "mauth-standin"
        let clientEmail = "dispatcher@mauth-standin.iam.gserviceaccount.com"
        let router = Router()
        router.post("/token") { request, _ -> Response in
            let form = String(buffer: try await request.body.collect(upTo: 64 * 1024))
            var fields: [String: String] = [:]
            for pair in form.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).removingPercentEncoding ?? String($0) }
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            let tokenURL = "https://127.0.0.1:\(portBox.withLockedValue { $0 })/token"
            guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = fields["assertion"],
                !state.withLockedValue({ $0.refuseAssertions }),
                let claims = try? await keys.verify(assertion, as: AssertionClaims.self),
                claims.iss == clientEmail, claims.aud == tokenURL, claims.scope == "https://www.googleapis.com/auth/firebase.messaging"
            else {
                return json(.badRequest, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
            }
            let token = "ya29.standin-" + UUID().uuidString
            state.withLockedValue {
                $0.accessTokens.insert(token)
                $0.tokenExchanges += 1
            }
            return json(.ok, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#)
        }
        router.post("/v1/projects/:project/messages:send") { request, context -> Response in
            let authorization = request.headers[.authorization] ?? ""
            guard authorization.hasPrefix("Bearer "), state.withLockedValue({ $0.accessTokens.contains(String(authorization.dropFirst(7))) }) else {
                return json(
                    .unauthorized, #"{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED"}}"#)
            }
            guard context.parameters.get("project") == projectID else {
                return json(.forbidden, #"{"error":{"code":403,"message":"SenderId mismatch","status":"PERMISSION_DENIED"}}"#)
            }
            struct Body: Decodable {
                struct Message: Decodable {
                    struct Notification: Decodable {
                        var title: String?
                        var body: String?
                    }
                    var token: String?
                    var data: [String: String]?
                    var notification: Notification?
                }
                var message: Message
            }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(buffer: try await request.body.collect(upTo: 64 * 1024))),
                let registrationToken = body.message.token, !registrationToken.isEmpty
            else {
                return json(.badRequest, #"{"error":{"code":400,"message":"Invalid message","status":"INVALID_ARGUMENT"}}"#)
            }
            if state.withLockedValue({ $0.unregistered.contains(registrationToken) }) {
                return json(
                    .notFound,
                    #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
                )
            }
            let count = state.withLockedValue { state -> Int in
                state.messages.append(
                    Message(
                        registrationToken: registrationToken, data: body.message.data ?? [:],
                        title: body.message.notification?.title, body: body.message.notification?.body))
                return state.messages.count
            }
            return json(.ok, #"{"name":"projects/\#(projectID)/messages/\#(count)"}"#)
        }
        let tls = try certificate.serverTLSConfiguration()
        var logger = Logger(label: "mauth.firebase-standin")
        logger.logLevel = .warning
        let application = Application(
            router: router, server: try .tls(.http1(), tlsConfiguration: tls),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "firebase-standin"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                portBox.withLockedValue { $0 = port }
                continuation.yield(port)
                continuation.finish()
            }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let task = Task { try await group.run() }
        var port = 0
        for await bound in started {
            port = bound
            break
        }
        guard port != 0 else {
            try await task.value
            throw StandInError.notStarted
        }

        struct ServiceAccount: Encodable {
            var type = "service_account", project_id: String, private_key_id = "standin-key", private_key: String, client_email: String
            var client_id = "1", auth_uri = "https://accounts.google.com/o/oauth2/auth", token_uri: String
        }
        let accountPath = directory.appendingPathComponent("firebase-service-account.json").path
        try JSONEncoder().encode(
            ServiceAccount(
                project_id: projectID, private_key: rsa.pkcs8PEMRepresentation, client_email: clientEmail,
                token_uri: "https://127.0.0.1:\(port)/token")
        ).write(to: URL(fileURLWithPath: accountPath))
        return FirebaseStandIn(
            serviceAccountPath: accountPath, trustedCertificatesPath: caPath, baseURL: "https://127.0.0.1:\(port)",
            state: state, group: group, task: task)
    }

    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }

    enum StandInError: Error { case notStarted }

    struct AssertionClaims: JWTPayload {
        var iss: String
        var scope: String
        var aud: String
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }
}

private func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
    Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
}
