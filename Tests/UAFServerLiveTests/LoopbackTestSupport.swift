import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOSSL
import UAF
import UAFSimulation
import XCTest
import NIOHTTP1
@testable import UAFServer
@testable import UAFServerCore

let testFacet = SoftwareAuthenticator.virtualDeviceFacetID

/// A settable clock for expiry tests.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var offset: TimeInterval = 0
    func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
    var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
}

/// Starts a real server on a loopback port with TLS and talks to it with AsyncHTTPClient trusting its certificate.
/// The server trusts ``relyingParty``'s JWT key (unless the configuration sets its own authorization), and
/// ``registrationRequest(username:)`` sends that relying party's token for the user.
final class LoopbackServer {
    let server: RunningUAFServer
    let client: HTTPClient
    let clock: TestClock
    let relyingParty: LocalRelyingParty
    let directory: URL

    static func configuration(database: ServerConfiguration.Database = .sqliteInMemory) -> ServerConfiguration {
        ServerConfiguration(facets: [testFacet], database: database)
    }

    init(configuration: ServerConfiguration = LoopbackServer.configuration(), relyingParty: LocalRelyingParty = LocalRelyingParty()) async throws {
        clock = TestClock()
        self.relyingParty = relyingParty
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-loopback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = configuration
        if configuration.authorization == ServerConfiguration.Authorization() {
            let jwks = directory.appendingPathComponent("jwks.json").path
            try relyingParty.writeJWKS(to: jwks)
            configuration.authorization.jwt = .init(jwksPath: jwks, issuer: relyingParty.issuer, audience: relyingParty.audience, adminScope: "mauth:admin")
        }
        let clock = self.clock
        server = try await UAFServerApplication.start(configuration: configuration, dependencies: ServerDependencies(clock: { clock.now }))
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    }

    /// Runs `body` against a fresh loopback server and shuts the server down whether `body` succeeds or throws.
    static func with(_ configuration: ServerConfiguration = LoopbackServer.configuration(), _ body: (LoopbackServer) async throws -> Void) async throws {
        let loopback = try await LoopbackServer(configuration: configuration)
        do { try await body(loopback) } catch { try await loopback.shutdown(); throw error }
        try await loopback.shutdown()
    }

    func shutdown() async throws {
        try await client.shutdown()
        try await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    struct Answer {
        var status: Int
        var body: Data
        var headers: HTTPHeaders
        var contentType: String? { headers.first(name: "Content-Type") }
    }

    func exchange(_ method: HTTPMethod = .POST, _ path: String, body: Data?, contentType: String = "application/fido+uaf;charset=UTF-8",
                  headers: [(String, String)] = []) async throws -> Answer {
        var request = HTTPClientRequest(url: server.baseURL.absoluteString + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        request.headers.add(name: "Accept", value: "application/fido+uaf")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), body: Data(bytes.readableBytesView), headers: response.headers)
    }

    func post(_ path: String, body: Data, contentType: String = "application/fido+uaf;charset=UTF-8", headers: [(String, String)] = []) async throws -> (Int, Data, String?) {
        let answer = try await exchange(.POST, path, body: body, contentType: contentType, headers: headers)
        return (answer.status, answer.body, answer.contentType)
    }

    func post<Body: Encodable, Answer: Decodable>(_ path: String, _ body: Body, as: Answer.Type, headers: [(String, String)] = []) async throws -> Answer {
        let (status, data, _) = try await post(path, body: try JSONEncoder().encode(body), headers: headers)
        XCTAssertEqual(status, 200, String(decoding: data, as: UTF8.self))
        return try JSONDecoder().decode(Answer.self, from: data)
    }

    func bearer(_ username: String) async throws -> [(String, String)] {
        [("Authorization", "Bearer \(try await relyingParty.sign(relyingParty.claims(subject: username, now: clock.now)))")]
    }

    static func registrationBody(_ username: String) throws -> Data {
        try JSONEncoder().encode(GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": username])))
    }

    // MARK: UAF steps

    func registrationRequest(username: String, headers: [(String, String)]? = nil) async throws -> RegistrationRequest {
        let credentials: [(String, String)]
        if let headers { credentials = headers } else { credentials = try await bearer(username) }
        let answer = try await post("/nevisfido/uaf/1.1/request/registration",
                                    GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": username])),
                                    as: ReturnUAFRequest.self, headers: credentials)
        XCTAssertEqual(answer.statusCode, 1200)
        return try UAFMessageCodec.decode(RegistrationRequest.self, from: try XCTUnwrap(answer.uafRequest))[0]
    }

    func authenticationRequest(username: String?, transaction: [Transaction]? = nil) async throws -> (ReturnUAFRequest, AuthenticationRequest?) {
        struct Context: Encodable { var username: String?; var transaction: [Transaction]? }
        let context = try UAFMessageCodec.encodeObject(Context(username: username, transaction: transaction))
        let answer = try await post("/nevisfido/uaf/1.1/request/authentication", GetUAFRequest(op: .authentication, context: context), as: ReturnUAFRequest.self)
        return (answer, try answer.uafRequest.map { try UAFMessageCodec.decode(AuthenticationRequest.self, from: $0)[0] })
    }

    func send(_ path: String, _ response: some Encodable) async throws -> ServerResponse {
        try await post(path, SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])), as: ServerResponse.self)
    }
}
