import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOFoundationCompat
import NIOSSL
import Primitives
import ServiceLifecycle

/// The Firebase Cloud Messaging HTTP v1 dispatcher (server-api §E.3): an OAuth 2.0 access token from the
/// service-account flow (an RS256 JWT assertion exchanged at the token endpoint, RFC 7523), cached until shortly
/// before it expires, then `POST {endpointBaseURL}/v1/projects/{project}/messages:send`.
///
/// A real Firebase project needs outbound HTTPS to `oauth2.googleapis.com` and `fcm.googleapis.com`; tests and the
/// demo point both URLs at a local stand-in (`DevelopmentStandIns`).
package actor FirebaseDispatcher {
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    static let defaultTokenURL = "https://oauth2.googleapis.com/token"

    package enum Outcome: Sendable, Equatable {
        /// FCM accepted the message; its name (`projects/…/messages/…`).
        case sent(String)
        /// FCM says the registration token is no longer valid (`UNREGISTERED`).
        case unregistered
        case failed(String)
    }

    let account: FirebaseServiceAccount
    let configuration: ServerConfiguration.Dispatch.Firebase
    let tokenURL: String
    private let keys = JWTKeyCollection()
    private let client: HTTPClient
    private let logger: Logger
    private let clock: @Sendable () -> Date
    private var cached: (token: String, expires: Date)?
    private var keysLoaded = false

    package init(
        configuration: ServerConfiguration.Dispatch.Firebase, logger: Logger,
        clock: @escaping @Sendable () -> Date, proxy: ServerConfiguration.OutboundProxy? = nil
    ) throws {
        self.configuration = configuration
        account = try FirebaseServiceAccount.load(path: configuration.serviceAccountPath)
        tokenURL = configuration.tokenURL ?? account.tokenURI ?? Self.defaultTokenURL
        var tls = TLSConfiguration.makeClientConfiguration()
        if let path = configuration.trustedCertificatesPath {
            // Added to the system's roots only for a proxy or a local stand-in; certificate checks are never relaxed.
            tls.additionalTrustRoots = [.file(path)]
        }
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(10), read: .seconds(15)))
        httpConfiguration.redirectConfiguration = .disallow
        // One client for both hosts it calls (the token endpoint and FCM's): through the proxy unless it exempts both.
        let hosts = [URL(string: tokenURL)?.host, URL(string: configuration.endpointBaseURL)?.host].compactMap { $0 }
        httpConfiguration.proxy = hosts.lazy.compactMap { proxy?.proxy(for: $0) }.first
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        self.logger = logger
        self.clock = clock
    }

    package func shutdown() async { try? await client.shutdown() }

    package struct Assertion: JWTPayload {
        var iss: String
        var scope: String
        var aud: String
        var iat: IssuedAtClaim
        var exp: ExpirationClaim
        package func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }

    /// The cached access token, or a new one from the token endpoint.
    func accessToken() async throws -> String {
        let now = clock()
        if let cached, cached.expires > now { return cached.token }
        if !keysLoaded {
            await keys.add(
                rsa: try Insecure.RSA.PrivateKey(pem: account.privateKey), digestAlgorithm: .sha256,
                kid: account.privateKeyID.map { JWKIdentifier(string: $0) })
            keysLoaded = true
        }
        var header = JWTHeader()
        header.typ = "JWT"
        let assertion = try await keys.sign(
            Assertion(
                iss: account.clientEmail, scope: Self.scope, aud: tokenURL, iat: .init(value: now),
                exp: .init(value: now.addingTimeInterval(3600))),
            kid: account.privateKeyID.map { JWKIdentifier(string: $0) }, header: header)
        var request = HTTPClientRequest(url: tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(
            ByteBuffer(
                string: "grant_type=\(Text.percentEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer"))&assertion=\(Text.percentEncoded(assertion))"
            ))
        let response = try await client.execute(request, timeout: .seconds(15))
        let body = try await response.body.collect(upTo: 64 * 1024)
        struct Answer: Decodable {
            var access_token: String
            var expires_in: Int?
        }
        guard response.status == .ok, let answer = try? JSONDecoder().decode(Answer.self, from: Data(buffer: body)), !answer.access_token.isEmpty
        else {
            throw FirebaseError.tokenRefused(status: Int(response.status.code), body: String(buffer: body).prefix(300).description)
        }
        // Refreshed a minute early, so a token never expires between this check and FCM's.
        let lifetime = TimeInterval(max(answer.expires_in ?? 3600, 120))
        cached = (answer.access_token, now.addingTimeInterval(lifetime - 60))
        return answer.access_token
    }

    /// Sends one data message (with an optional notification) to `registrationToken`.
    func send(registrationToken: String, data: [String: String], notification: (title: String?, body: String?)?) async -> Outcome {
        struct Message: Encodable {
            package struct Notification: Encodable {
                var title: String?
                var body: String?
            }
            package struct Android: Encodable { var priority = "high" }
            var token: String
            var data: [String: String]
            var notification: Notification?
            var android = Android()
        }
        struct Body: Encodable {
            var validate_only: Bool?
            var message: Message
        }
        let message = Message(
            token: registrationToken, data: data,
            notification: notification.map { Message.Notification(title: $0.title, body: $0.body) })
        let url =
            configuration.endpointBaseURL.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/v1/projects/\(account.projectID)/messages:send"
        // One retry with a fresh token when FCM refuses ours (revoked or expired early).
        for attempt in 0..<2 {
            do {
                let token = try await accessToken()
                var request = HTTPClientRequest(url: url)
                request.method = .POST
                request.headers.add(name: "Content-Type", value: "application/json")
                request.headers.add(name: "Authorization", value: "Bearer \(token)")
                request.body = .bytes(
                    ByteBuffer(data: try JSONEncoder().encode(Body(validate_only: configuration.dryRun ? true : nil, message: message))))
                let response = try await client.execute(request, timeout: .seconds(15))
                let body = try await response.body.collect(upTo: 64 * 1024)
                if response.status == .ok {
                    struct Sent: Decodable { var name: String }
                    return .sent((try? JSONDecoder().decode(Sent.self, from: Data(buffer: body)))?.name ?? "")
                }
                if response.status == .unauthorized && attempt == 0 {
                    cached = nil
                    continue
                }
                if Self.isUnregistered(status: Int(response.status.code), body: Data(buffer: body)) { return .unregistered }
                return .failed("FCM answered \(response.status.code): \(String(buffer: body).prefix(300))")
            } catch {
                return .failed("\(error)")
            }
        }
        return .failed("FCM refused a fresh access token")
    }

    /// FCM v1's `UNREGISTERED` error: 404 (or 400) with `details[].errorCode == "UNREGISTERED"`.
    static func isUnregistered(status: Int, body: Data) -> Bool {
        struct Answer: Decodable {
            package struct GoogleError: Decodable {
                struct Detail: Decodable { var errorCode: String? }
                var status: String?
                var details: [Detail]?
            }
            var error: GoogleError
        }
        guard status == 404 || status == 400, let answer = try? JSONDecoder().decode(Answer.self, from: body) else { return false }
        return answer.error.details?.contains { $0.errorCode == "UNREGISTERED" } ?? false
    }
}

enum FirebaseError: Error, CustomStringConvertible {
    case tokenRefused(status: Int, body: String)
    var description: String {
        switch self {
        case .tokenRefused(let status, let body): return "the OAuth token endpoint refused the service-account assertion (\(status)): \(body)"
        }
    }
}

/// The dispatcher's HTTP client is shut down with the server's service group.
extension FirebaseDispatcher: Service {
    package func run() async throws {
        try? await gracefulShutdown()
        await shutdown()
    }
}
