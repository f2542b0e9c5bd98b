import FIDOServer
import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import MobileAuthentication
import MobileAuthenticationCore
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import XCTest

private typealias SDKRequest = MobileAuthenticationCore.HTTPRequest

/// The contract both of the SDK's transports keep (`HTTPTransport` on NIO, the client's on Linux, and
/// `URLSessionTransport`, the client's on Apple platforms), against servers on loopback: what a request carries, what
/// comes back, and how each way of failing is reported.
///
/// URLSession on Linux trusts only the system's roots (libcurl offers no trust hook), so the tests that need a
/// trusted server run it in `testURLSessionKeepsTheContractWhereTheSystemTrustsTheServer`: this class again, in a
/// child process in a user and mount namespace of its own whose system trust store is the development root alone.
final class TransportContractTests: XCTestCase {
    enum Kind: String, CaseIterable { case nio, urlSession }

    /// Set in the child process: the folder with the server's certificate, which its system trust store holds.
    static let namespaceVariable = "MAUTH_TRANSPORT_CONTRACT_CERTIFICATES"
    static var inNamespace: Bool { ProcessInfo.processInfo.environment[namespaceVariable] != nil }

    private var server: ContractServer!
    private var certificate: DevelopmentCertificate!

    override func setUp() async throws {
        if let folder = ProcessInfo.processInfo.environment[Self.namespaceVariable] {
            let read = { (name: String) in try String(contentsOfFile: folder + "/" + name, encoding: .utf8) }
            certificate = DevelopmentCertificate(
                certificatePEM: try read("leaf.pem"), privateKeyPEM: try read("key.pem"), trustAnchorPEM: try read("anchor.pem"))
        } else {
            certificate = try DevelopmentCertificate.generate()
        }
        server = try await ContractServer.start(certificate: certificate)
    }

    override func tearDown() async throws { await server.stop() }

    /// The transports that can reach the server with its certificate trusted: URLSession only where the system trusts it.
    private var trusting: [Kind] { Self.inNamespace ? Kind.allCases : [.nio] }

    private func transport(_ kind: Kind, timeout: Int = 10, trusted: Bool = true, base: URL? = nil) throws -> any ClientTransport {
        let configuration = Configuration(baseUrl: base ?? server.url, networkTimeoutInSeconds: timeout)
        switch kind {
        case .nio:
            return try HTTPTransport(
                configuration: trusted
                    ? configuration.withTransportSecurity(.debug(trustedCertificatesPEM: [certificate.trustAnchorPEM])) : configuration)
        case .urlSession:
            // Linux: the system's roots (the namespace's) decide; the release flavor adds none.
            return try URLSessionTransport(configuration: configuration, flavor: .release)
        }
    }

    private func send(
        _ kind: Kind, _ request: SDKRequest, timeout: Int = 10, trusted: Bool = true
    ) async throws -> Result<HTTPExchange, TransportFailure> {
        let transport = try transport(kind, timeout: timeout, trusted: trusted)
        defer { Task { await transport.shutdown() } }
        do throws(TransportFailure) { return .success(try await transport.send(request)) } catch { return .failure(error) }
    }

    private func request(_ method: SDKRequest.Method = .POST, _ path: String, body: Data? = nil, headers: [(String, String)] = []) -> SDKRequest {
        SDKRequest(method: method, url: server.url.appendingPathComponent(path), body: body, headers: headers)
    }

    // MARK: What goes out and what comes back

    func testARequestCarriesItsMethodHeadersAndBodyAndTheAnswerComesBackWhole() async throws {
        for kind in trusting {
            let body = Data(#"{"op":"Reg","context":"{}"}"#.utf8)
            let result = try await send(
                kind, request(.POST, "echo", body: body, headers: [("Authorization", "Bearer token-1"), ("X-Client", "a, b")]))
            let exchange = try result.get()
            XCTAssertEqual(exchange.status, 200, kind.rawValue)
            let echo = try JSONDecoder().decode(ContractServer.Echo.self, from: exchange.body)
            XCTAssertEqual(echo.method, "POST", kind.rawValue)
            XCTAssertEqual(echo.body, body, kind.rawValue)
            XCTAssertEqual(echo.headers["accept"], "application/fido+uaf;charset=UTF-8", kind.rawValue)
            XCTAssertEqual(echo.headers["content-type"], "application/fido+uaf;charset=UTF-8", kind.rawValue)
            XCTAssertEqual(echo.headers["authorization"], "Bearer token-1", kind.rawValue)
            XCTAssertEqual(echo.headers["x-client"], "a, b", kind.rawValue)
            XCTAssertNil(echo.headers["cookie"], kind.rawValue)
            XCTAssertEqual(exchange.headers.first { $0.0.lowercased() == "x-answer" }?.1, "yes", kind.rawValue)
        }
    }

    func testAGetSendsNoBodyAndNoContentType() async throws {
        for kind in trusting {
            let echo = try JSONDecoder().decode(ContractServer.Echo.self, from: try await send(kind, request(.GET, "echo")).get().body)
            XCTAssertEqual(echo.method, "GET", kind.rawValue)
            XCTAssertEqual(echo.body, Data(), kind.rawValue)
            XCTAssertNil(echo.headers["content-type"], kind.rawValue)
        }
    }

    /// A cookie the server sets is not sent back by the transport: the SDK carries the session itself.
    func testACookieTheServerSetsIsNotSentBack() async throws {
        for kind in trusting {
            let transport = try transport(kind)
            _ = try await transport.send(request(.GET, "cookie"))
            let echo = try JSONDecoder().decode(ContractServer.Echo.self, from: try await transport.send(request(.GET, "echo")).body)
            XCTAssertNil(echo.headers["cookie"], kind.rawValue)
            await transport.shutdown()
        }
    }

    func testARefusalIsAnAnswerNotAFailure() async throws {
        for kind in trusting {
            let exchange = try await send(kind, request(.POST, "status/401", body: Data("{}".utf8))).get()
            XCTAssertEqual(exchange.status, 401, kind.rawValue)
            XCTAssertEqual(String(decoding: exchange.body, as: UTF8.self), #"{"errorCode":"unauthorized"}"#, kind.rawValue)
        }
    }

    func testARedirectIsTheAnswerNotFollowed() async throws {
        for kind in trusting {
            let exchange = try await send(kind, request(.POST, "redirect", body: Data("{}".utf8))).get()
            XCTAssertEqual(exchange.status, 302, kind.rawValue)
            XCTAssertEqual(server.echoes, 0, "\(kind): the redirect was followed")
        }
    }

    func testAnAnswerThatDeclaresMoreThanAMebibyteIsRefused() async throws {
        for kind in trusting {
            guard case .failure(.network) = try await send(kind, request(.GET, "huge")) else { return XCTFail(kind.rawValue) }
        }
    }

    func testAStreamedAnswerOverAMebibyteIsRefused() async throws {
        for kind in trusting {
            guard case .failure(.network) = try await send(kind, request(.GET, "huge-streamed")) else { return XCTFail(kind.rawValue) }
        }
    }

    // MARK: How failing is reported

    func testPlainHTTPIsRefusedBeforeAnythingIsSent() async throws {
        for kind in Kind.allCases {
            let plain = SDKRequest(method: .POST, url: URL(string: "http://127.0.0.1:\(server.port)/echo")!, body: Data(), headers: [])
            guard case .failure(.insecure(let reason)) = try await send(kind, plain) else { return XCTFail(kind.rawValue) }
            XCTAssertTrue(reason.contains("HTTPS only"), reason)
        }
        XCTAssertEqual(server.echoes, 0)
    }

    func testAnUntrustedCertificateIsInsecureAtOnce() async throws {
        guard !Self.inNamespace else { return }  // there the system trusts it
        for kind in Kind.allCases {
            let started = ContinuousClock.now
            let result = try await send(kind, request(.GET, "echo"), timeout: 30, trusted: false)
            guard case .failure(.insecure(let reason)) = result else { return XCTFail("\(kind): \(result)") }
            XCTAssertTrue(reason.hasPrefix("the TLS handshake failed"), reason)
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(10), kind.rawValue)
        }
        XCTAssertEqual(server.echoes, 0)
    }

    func testNothingListeningIsANetworkFailureSaidInWords() async throws {
        let port = try await DatabaseFreePort.closed()
        for kind in Kind.allCases {
            let url = URL(string: "https://127.0.0.1:\(port)/echo")!
            let result = try await send(kind, SDKRequest(method: .GET, url: url, body: nil, headers: []))
            guard case .failure(.network(let error)) = result else { return XCTFail("\(kind): \(result)") }
            XCTAssertEqual(HttpError.reason(error, url: url), "nothing answers at 127.0.0.1:\(port) (connection refused)", kind.rawValue)
        }
    }

    func testAServerThatNeverAnswersIsANetworkFailureAfterTheTimeout() async throws {
        let silent = try await SilentServer.start()
        defer { Task { await silent.stop() } }
        for kind in Kind.allCases {
            let url = URL(string: "https://127.0.0.1:\(silent.port)/echo")!
            let started = ContinuousClock.now
            let result = try await send(kind, SDKRequest(method: .GET, url: url, body: nil, headers: []), timeout: 1)
            guard case .failure(.network(let error)) = result else { return XCTFail("\(kind): \(result)") }
            XCTAssertEqual(HttpError.reason(error, url: url), "127.0.0.1:\(silent.port) did not answer in time", kind.rawValue)
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(8), kind.rawValue)
        }
    }

    func testCancellingTheTaskEndsTheRequestAtOnce() async throws {
        let silent = try await SilentServer.start()
        defer { Task { await silent.stop() } }
        for kind in Kind.allCases {
            let transport = try transport(kind, timeout: 60, base: URL(string: "https://127.0.0.1:\(silent.port)")!)
            let url = URL(string: "https://127.0.0.1:\(silent.port)/echo")!
            let started = ContinuousClock.now
            let task = Task { () -> Result<HTTPExchange, TransportFailure> in
                do throws(TransportFailure) {
                    return .success(try await transport.send(SDKRequest(method: .GET, url: url, body: nil, headers: [])))
                } catch {
                    return .failure(error)
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            task.cancel()
            guard case .failure(.network) = await task.value else { return XCTFail(kind.rawValue) }
            XCTAssertLessThan(ContinuousClock.now - started, .seconds(5), kind.rawValue)
            // Not awaited: AsyncHTTPClient's shutdown waits out the abandoned connection attempt (its connect timeout).
            Task { await transport.shutdown() }
        }
    }

    // MARK: URLSession with a trusted server, where Linux allows it

    /// Runs this class again in a child process whose system trust store holds only the development root (a user and
    /// mount namespace of its own: `unshare`, the store bind-mounted), so URLSession on libcurl trusts the server and
    /// every test above runs for it too.
    func testURLSessionKeepsTheContractWhereTheSystemTrustsTheServer() async throws {
        guard !Self.inNamespace else { return }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-contract-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(certificate.certificatePEM.utf8).write(to: folder.appendingPathComponent("leaf.pem"))
        try Data(certificate.privateKeyPEM.utf8).write(to: folder.appendingPathComponent("key.pem"))
        try Data(certificate.trustAnchorPEM.utf8).write(to: folder.appendingPathComponent("anchor.pem"))
        let store = "/etc/ssl/certs/ca-certificates.crt"
        XCTAssertTrue(FileManager.default.fileExists(atPath: store), "libcurl's trust store is not at \(store)")

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        child.arguments = [
            "--user", "--map-root-user", "--mount", "sh", "-c", #"mount --bind "$1" "$2" && shift 2 && exec "$@""#, "sh",
            folder.appendingPathComponent("anchor.pem").path, store, CommandLine.arguments[0], "EndToEndTests.TransportContractTests",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment[Self.namespaceVariable] = folder.path
        child.environment = environment
        let output = Pipe()
        child.standardOutput = output
        child.standardError = output
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        XCTAssertEqual(child.terminationStatus, 0, text)
        XCTAssertTrue(text.contains("Executed 13 tests, with 0 failures"), text)
    }
}

/// The server of the contract on loopback over TLS (Hummingbird): an echo, a status, a redirect, a cookie, and
/// answers too long to take.
final class ContractServer: Sendable {
    struct Echo: Codable {
        let method: String
        let headers: [String: String]
        let body: Data
    }

    let port: Int
    var url: URL { URL(string: "https://127.0.0.1:\(port)")! }
    private let task: Task<Void, any Error>
    private let counter: NIOLockedValueBox<Int>
    /// How many requests reached the echo.
    var echoes: Int { counter.withLockedValue { $0 } }

    private init(port: Int, task: Task<Void, any Error>, counter: NIOLockedValueBox<Int>) {
        self.port = port
        self.task = task
        self.counter = counter
    }

    static func start(certificate: DevelopmentCertificate) async throws -> ContractServer {
        let counter = NIOLockedValueBox(0)
        let router = Router()
        let echo: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            counter.withLockedValue { $0 += 1 }
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers {
                headers[field.name.canonicalName, default: ""] += (headers[field.name.canonicalName] == nil ? "" : ", ") + field.value
            }
            let echo = Echo(method: request.method.rawValue, headers: headers, body: Data(buffer: body))
            return Response(
                status: .ok, headers: [.contentType: "application/json", .init("X-Answer")!: "yes"],
                body: .init(byteBuffer: ByteBuffer(data: try JSONEncoder().encode(echo))))
        }
        router.get("/echo", use: echo)
        router.post("/echo", use: echo)
        router.post("/status/:code") { _, context -> Response in
            let code = Int(context.parameters.get("code") ?? "") ?? 500
            return Response(status: .init(code: code), body: .init(byteBuffer: ByteBuffer(string: #"{"errorCode":"unauthorized"}"#)))
        }
        router.post("/redirect") { _, _ -> Response in Response(status: .found, headers: [.location: "/echo"]) }
        router.get("/cookie") { _, _ -> Response in Response(status: .ok, headers: [.setCookie: "session=abc; Path=/; Secure"]) }
        let mebibyte = ByteBuffer(repeating: UInt8(ascii: "x"), count: 1 << 20)
        router.get("/huge") { _, _ -> Response in
            Response(status: .ok, body: .init(contentsOf: [mebibyte, ByteBuffer(string: "and more")]))
        }
        router.get("/huge-streamed") { _, _ -> Response in
            Response(
                status: .ok,
                body: ResponseBody { writer in
                    for _ in 0..<3 { try await writer.write(ByteBuffer(repeating: UInt8(ascii: "x"), count: 512 << 10)) }
                    try await writer.finish(nil)
                })
        }
        let (started, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: "contract-server")
        logger.logLevel = .critical
        let application = Application(
            router: router, server: try .tls(.http1(), tlsConfiguration: try certificate.serverTLSConfiguration()),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "contract"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: logger)
        let task = Task { try await application.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await bound in started {
            port = bound
            break
        }
        guard port != 0 else {
            task.cancel()
            throw XCTSkip("the contract server did not start")
        }
        return ContractServer(port: port, task: task, counter: counter)
    }

    func stop() async {
        task.cancel()
        _ = await task.result
    }
}

/// A loopback port that accepts connections and never says a word (not even TLS's).
final class SilentServer: Sendable {
    let port: Int
    private let channel: any Channel

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
    }

    static func start() async throws -> SilentServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        return SilentServer(port: channel.localAddress?.port ?? 0, channel: channel)
    }

    func stop() async { try? await channel.close() }
}

/// A loopback port nothing listens on: bound, then closed.
enum DatabaseFreePort {
    static func closed() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }
}
