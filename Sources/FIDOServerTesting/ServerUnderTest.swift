import FIDOServer
import FIDOSimulation
import Foundation
import NIOHTTP1
import UAF

/// The facet the test servers trust: the software authenticator's (the virtual device's).
public let testFacet = SoftwareAuthenticator.virtualDeviceFacetID

/// The `Cookie` header a client sends back for a `Set-Cookie` value: its first `name=value` pair.
public func cookieHeader(_ setCookie: String) -> (String, String) {
    ("Cookie", String(setCookie.split(separator: ";")[0]))
}

/// An answer of the server under test.
public struct TestAnswer: Sendable {
    public var status: Int
    public var body: Data
    public var headers: HTTPHeaders
    public var contentType: String? { headers.first(name: "Content-Type") }
    public init(status: Int, body: Data, headers: HTTPHeaders) {
        self.status = status
        self.body = body
        self.headers = headers
    }
}

/// An answer that was not the one a UAF step needs (a status other than 200, or no UAF request in it).
public struct UnexpectedAnswer: Error, CustomStringConvertible {
    public let description: String
}

/// A server a test talks to: ``InProcessServer`` (its router, no socket) or ``LoopbackServer`` (on loopback over
/// TLS). The UAF steps below are written once for both; a test uses the live one only when TLS or a connection is
/// what it checks.
public protocol ServerUnderTest: AnyObject {
    init(configuration: ServerConfiguration, relyingParty: LocalRelyingParty) async throws
    func shutdown() async throws
    var clock: TestClock { get }
    var relyingParty: LocalRelyingParty { get }
    /// The appID the server expects in every response.
    var appID: String { get }
    func exchange(_ method: HTTPMethod, _ path: String, body: Data?, contentType: String, headers: [(String, String)]) async throws -> TestAnswer
}

extension ServerUnderTest {
    /// The configuration the test servers start from: the virtual device's facet, SQLite in memory.
    public static func configuration(database: ServerConfiguration.Database = .sqliteInMemory) -> ServerConfiguration {
        ServerConfiguration(facets: [testFacet], database: database)
    }

    /// Runs `body` against a fresh server and shuts it down whether `body` succeeds or throws.
    public static func with(_ configuration: ServerConfiguration = Self.configuration(), _ body: (Self) async throws -> Void) async throws {
        let server = try await Self(configuration: configuration, relyingParty: LocalRelyingParty())
        do { try await body(server) } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    public func exchange(
        _ method: HTTPMethod = .POST, _ path: String, body: Data?, contentType: String = "application/fido+uaf;charset=UTF-8",
        headers: [(String, String)] = []
    ) async throws -> TestAnswer {
        try await exchange(method, path, body: body, contentType: contentType, headers: headers)
    }

    public func post(
        _ path: String, body: Data, contentType: String = "application/fido+uaf;charset=UTF-8",
        headers: [(String, String)] = []
    ) async throws -> (Int, Data, String?) {
        let answer = try await exchange(.POST, path, body: body, contentType: contentType, headers: headers)
        return (answer.status, answer.body, answer.contentType)
    }

    /// Posts `body` as JSON and decodes a 200 answer (anything else throws ``UnexpectedAnswer``).
    public func post<Body: Encodable, Answer: Decodable>(
        _ path: String, _ body: Body, as: Answer.Type,
        headers: [(String, String)] = []
    ) async throws -> Answer {
        let (status, data, _) = try await post(path, body: try JSONEncoder().encode(body), headers: headers)
        guard status == 200 else { throw UnexpectedAnswer(description: "\(path) answered \(status): \(String(decoding: data, as: UTF8.self))") }
        return try JSONDecoder().decode(Answer.self, from: data)
    }

    /// The relying party's token for `username`, as an `Authorization` header.
    public func bearer(_ username: String) async throws -> [(String, String)] {
        [("Authorization", "Bearer \(try await relyingParty.sign(relyingParty.claims(subject: username, now: clock.now)))")]
    }

    public static func registrationBody(_ username: String) throws -> Data {
        try JSONEncoder().encode(GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": username])))
    }

    /// A registration request for `username`, authorized by the relying party's token (or `headers`), under the
    /// configured policy `policy` names (or the default).
    public func registrationRequest(username: String, headers: [(String, String)]? = nil, policy: String? = nil) async throws -> RegistrationRequest {
        let credentials: [(String, String)]
        if let headers { credentials = headers } else { credentials = try await bearer(username) }
        var context = ["username": username]
        if let policy { context["policy"] = policy }
        let answer = try await post(
            "/nevisfido/uaf/1.1/request/registration",
            GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(context)),
            as: ReturnUAFRequest.self, headers: credentials)
        guard answer.statusCode == 1200, let request = answer.uafRequest else {
            throw UnexpectedAnswer(description: "registration request for \(username): \(answer.statusCode)")
        }
        return try UAFMessageCodec.decode(RegistrationRequest.self, from: request)[0]
    }

    /// An authentication request, by a caller without credentials unless `headers` carry some.
    public func authenticationRequest(
        username: String?, transaction: [Transaction]? = nil, policy: String? = nil,
        headers: [(String, String)] = []
    ) async throws -> (ReturnUAFRequest, AuthenticationRequest?) {
        let context = try UAFMessageCodec.encodeObject(AuthenticationContext(username: username, transaction: transaction, policy: policy))
        let answer = try await post(
            "/nevisfido/uaf/1.1/request/authentication", GetUAFRequest(op: .authentication, context: context),
            as: ReturnUAFRequest.self, headers: headers)
        return (answer, try answer.uafRequest.map { try UAFMessageCodec.decode(AuthenticationRequest.self, from: $0)[0] })
    }

    public func send(_ path: String, _ response: some Encodable) async throws -> ServerResponse {
        try await post(path, SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])), as: ServerResponse.self)
    }
}

/// The test servers' relying party: its JWKS is written to a file the server trusts, unless the configuration sets
/// its own credentials (internal dispatch networks are no credential, and keep it).
func trustingRelyingParty(_ configuration: ServerConfiguration, _ relyingParty: LocalRelyingParty, in directory: URL) throws -> ServerConfiguration {
    var configuration = configuration
    var unset = configuration.authorization
    unset.internalDispatchNetworks = []
    if unset == ServerConfiguration.Authorization() {
        let jwks = directory.appendingPathComponent("jwks.json").path
        try relyingParty.writeJWKS(to: jwks)
        configuration.authorization.jwt = .init(
            jwksPath: jwks, issuer: relyingParty.issuer, audience: relyingParty.audience, adminScope: "mauth:admin")
    }
    return configuration
}

/// The GetUAFRequest context of an authentication request.
private struct AuthenticationContext: Encodable {
    var username: String?
    var transaction: [Transaction]?
    var policy: String?
}
