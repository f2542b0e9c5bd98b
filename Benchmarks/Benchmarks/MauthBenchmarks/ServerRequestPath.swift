import Benchmark
import FIDOServer
import FIDOSimulation
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NevisProtocol
import UAF

/// The server's request path in process: the router, its middleware, the services and a real SQLite file, without
/// sockets or TLS (HummingbirdTesting's router client). One benchmark per flow the load figures measure, a UAF login
/// (the authentication request and the signed response) and a passkey sign-in (options and result); each iteration is
/// one whole flow of one registered user. The device's share (signing, its JSON) is in the count too, the same in
/// every run; one allocation more per request on the server's path fails the gate (Benchmarks/README.md).
func serverRequestPath() {
    let flowsPerSample = 8
    let router = InProcessRouter()
    let appID = "https://127.0.0.1:8443/nevisfido/uaf/1.1/facets"
    nonisolated(unsafe) var device = SoftwareAuthenticator()
    nonisolated(unsafe) var passkeys = SoftwarePasskeyAuthenticator(origin: "https://localhost", backupEligible: false, counts: true)
    let loginBody = try! JSONEncoder().encode(
        GetUAFRequest(op: .authentication, context: try! UAFMessageCodec.encodeObject(["username": "bench"])))
    let passkeyOptionsBody = try! JSONEncoder().encode(FIDO2API.OptionsRequest(username: "bench"))

    let setUp: Benchmark.BenchmarkSetupHook = {
        try await router.start(appID: appID)
        // The user's UAF key and passkey, registered over the same router (the relying party's token authorizes both).
        let request = try await router.uafRequest(
            RegistrationRequest.self, "/nevisfido/uaf/1.1/request/registration",
            body: try JSONEncoder().encode(
                GetUAFRequest(op: .registration, context: try UAFMessageCodec.encodeObject(["username": "bench"]))),
            authorized: "bench")
        try await router.sendUAF("/nevisfido/uaf/1.1/registration", try device.register(request, serverAppID: appID))
        let creation = try await router.json(
            FIDO2API.CreationOptions.self, FIDO2API.attestationOptionsPath,
            body: try JSONEncoder().encode(FIDO2API.OptionsRequest(username: "bench", displayName: "bench")), authorized: "bench")
        try await router.fido2Result(FIDO2API.attestationResultPath, try passkeys.create(for: creation))
    }
    let tearDown: Benchmark.BenchmarkTeardownHook = { try await router.stop() }
    // A sample is eight flows (fewer than the 10,000 allocations past which the tool prints thousands). The tolerance,
    // 8 over the committed p90, is half what one allocation more per request adds (16) and lets the count move one
    // step of the tool's histogram; the database's own growth (a page split, a new page in the cache) and how the
    // group commits fall move it by a few allocations from sample to sample.
    let configuration = Benchmark.Configuration(
        warmupIterations: 5, maxIterations: 200, thresholds: [.mallocCountTotal: .init(absolute: [.p90: 8])],
        setup: setUp, teardown: tearDown)

    Benchmark("ServerUAFLogin", configuration: configuration) { benchmark async throws in
        for _ in 0..<flowsPerSample {
            let request = try await router.uafRequest(AuthenticationRequest.self, "/nevisfido/uaf/1.1/request/authentication", body: loginBody)
            try await router.sendUAF("/nevisfido/uaf/1.1/authentication", try device.authenticate(request, serverAppID: appID))
        }
    }
    Benchmark("ServerPasskeySignIn", configuration: configuration) { benchmark async throws in
        for _ in 0..<flowsPerSample {
            let options = try await router.json(FIDO2API.RequestOptions.self, FIDO2API.assertionOptionsPath, body: passkeyOptionsBody)
            try await router.fido2Result(FIDO2API.assertionResultPath, try passkeys.get(for: options))
        }
    }
}

/// A server built as `mauth server` builds it (SQLite file, relying-party JWT keys, the audit trail on), its router
/// open to HummingbirdTesting's in-process client until ``stop()``.
final class InProcessRouter: @unchecked Sendable {
    // @unchecked: set once by start() in the benchmark's set-up, before any iteration reads them, and cleared by stop().
    private var built: FIDOServerApplication.Built?
    private var client: (any TestClientProtocol)?
    private var ended: AsyncStream<Void>.Continuation?
    private var framework: Task<Void, any Error>?
    private let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-benchmark-router-\(UUID().uuidString)")
    private let relyingParty = LocalRelyingParty(issuer: "https://rp.bench.example", audience: "mauth-benchmarks")

    struct Refused: Error, CustomStringConvertible { var description: String }

    func start(appID: String) async throws {
        var configuration = try benchmarkServerConfiguration(in: directory, relyingParty: relyingParty)
        configuration.appID = appID
        configuration.port = 8443
        configuration.fido2 = .init(rpId: "localhost", origins: ["https://localhost"])
        let built = try await FIDOServerApplication.buildApplication(
            configuration: configuration, dependencies: ServerDependencies(logger: quietLogger, auditLogger: quietLogger))
        // HummingbirdTesting hands its client to a closure and tears the router down when it returns: the closure
        // hands the client out and waits for stop().
        let (clients, handOut) = AsyncStream<any TestClientProtocol>.makeStream()
        let (stopped, ended) = AsyncStream<Void>.makeStream()
        framework = Task {
            defer { handOut.finish() }
            try await built.application.test(.router) { client in
                handOut.yield(client)
                for await _ in stopped {}
            }
        }
        var iterator = clients.makeAsyncIterator()
        guard let client = await iterator.next() else { throw Refused(description: "the router test framework handed out no client") }
        (self.built, self.client, self.ended) = (built, client, ended)
    }

    func stop() async throws {
        ended?.finish()
        _ = await framework?.result
        try await built?.stores.database.close()
        (built, client, ended, framework) = (nil, nil, nil, nil)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Posts `body` and returns the answer's body when the status is 200.
    func post(_ path: String, body: Data, contentType: String, authorized username: String? = nil) async throws -> ByteBuffer {
        guard let client else { throw Refused(description: "the router is not started") }
        var headers: HTTPFields = [.contentType: contentType]
        if let username { headers[.authorization] = "Bearer " + (try await relyingParty.token(for: username)) }
        let answer = try await client.executeRequest(uri: path, method: .post, headers: headers, body: ByteBuffer(bytes: body))
        guard answer.status == .ok else { throw Refused(description: "\(path) answered \(answer.status.code): \(String(buffer: answer.body))") }
        return answer.body
    }

    /// A UAF request endpoint's first message, from a 1200 answer.
    func uafRequest<Message: Decodable>(_: Message.Type, _ path: String, body: Data, authorized username: String? = nil) async throws -> Message {
        let answer = try JSONDecoder().decode(
            ReturnUAFRequest.self, from: Data(buffer: try await post(path, body: body, contentType: "application/fido+uaf", authorized: username)))
        guard answer.statusCode == 1200, let request = answer.uafRequest else { throw Refused(description: "\(path): \(answer.statusCode)") }
        return try UAFMessageCodec.decode(Message.self, from: request)[0]
    }

    /// Posts a UAF response, which must be answered 1200.
    func sendUAF(_ path: String, _ response: some Encodable) async throws {
        let body = try JSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response])))
        let answer = try JSONDecoder().decode(
            ServerResponse.self, from: Data(buffer: try await post(path, body: body, contentType: "application/fido+uaf")))
        guard answer.statusCode == 1200 else { throw Refused(description: "\(path): \(answer.statusCode)") }
    }

    func json<Answer: Decodable>(_: Answer.Type, _ path: String, body: Data, authorized username: String? = nil) async throws -> Answer {
        try JSONDecoder().decode(
            Answer.self, from: Data(buffer: try await post(path, body: body, contentType: "application/json", authorized: username)))
    }

    /// Posts a passkey credential to a result endpoint, which must answer `ok`.
    func fido2Result(_ path: String, _ credential: FIDO2API.Credential) async throws {
        let answer = try await json(FIDO2API.ServerResponse.self, path, body: try JSONEncoder().encode(credential))
        guard answer.status == "ok" else { throw Refused(description: "\(path): \(answer.status) \(answer.errorMessage)") }
    }
}

/// The configuration of a server the benchmarks start: an SQLite file in `directory` (created), the virtual devices'
/// facet trusted, `relyingParty`'s JWKS written there and trusted, and no rate limit (one client makes every request).
func benchmarkServerConfiguration(in directory: URL, relyingParty: LocalRelyingParty) throws -> ServerConfiguration {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let jwks = directory.appendingPathComponent("jwks.json").path
    try relyingParty.writeJWKS(to: jwks)
    var configuration = ServerConfiguration(
        facets: [SoftwareAuthenticator.virtualDeviceFacetID], database: .sqlite(path: directory.appendingPathComponent("server.sqlite").path))
    configuration.authorization.jwt = .init(jwksPath: jwks, issuer: relyingParty.issuer, audience: relyingParty.audience)
    configuration.limits.requestsPerMinutePerAddress = 0
    return configuration
}

/// The benchmark servers' logger: errors only.
let quietLogger: Logger = {
    var logger = Logger(label: "mauth.benchmark")
    logger.logLevel = .error
    return logger
}()
