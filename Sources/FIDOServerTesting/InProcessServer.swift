import FIDOServer
import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1

/// The server in process: its router driven by HummingbirdTesting, no socket and no TLS. The default for route
/// rules; the same requests and the same life cycle as ``LoopbackServer``.
public final class InProcessServer: ServerUnderTest, @unchecked Sendable {
    // @unchecked: every stored property is a `let` of a Sendable type, or the test client, which HummingbirdTesting
    // hands out for the life of its test closure (kept running until `shutdown()`).
    public let server: FIDOServerApplication.Built
    public let client: any TestClientProtocol
    public let clock: TestClock
    public let relyingParty: LocalRelyingParty
    private let directory: URL
    private let stop: AsyncStream<Void>.Continuation
    private let framework: Task<Void, any Error>

    public var appID: String { server.appID }

    /// Builds the server (port 8443 in its appID unless the configuration names one; nothing listens) and opens its
    /// router to requests until ``shutdown()``.
    public convenience init(
        configuration: ServerConfiguration = InProcessServer.configuration(), relyingParty: LocalRelyingParty = LocalRelyingParty()
    ) async throws {
        try await self.init(configuration: configuration, relyingParty: relyingParty, logger: ServerDependencies().logger)
    }

    /// As ``init(configuration:relyingParty:)``, with the server logging to `logger`.
    public init(
        configuration: ServerConfiguration = InProcessServer.configuration(), relyingParty: LocalRelyingParty = LocalRelyingParty(),
        logger: Logger
    ) async throws {
        let clock = TestClock()
        self.clock = clock
        self.relyingParty = relyingParty
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-inprocess-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = try trustingRelyingParty(configuration, relyingParty, in: directory)
        if configuration.port == 0 { configuration.port = 8443 }
        let built = try await FIDOServerApplication.buildApplication(
            configuration: configuration, dependencies: ServerDependencies(logger: logger, clock: { clock.now }))
        server = built
        // HummingbirdTesting hands its client to a closure and tears the router down when the closure returns; the
        // closure here hands the client out and waits until `shutdown()`, so a test keeps the server as long as it
        // wants, as with a live one.
        let (clients, handOut) = AsyncStream<any TestClientProtocol>.makeStream()
        let (stopped, stop) = AsyncStream<Void>.makeStream()
        self.stop = stop
        framework = Task {
            defer { handOut.finish() }
            try await built.application.test(.router) { client in
                handOut.yield(client)
                for await _ in stopped {}
            }
        }
        var handedOut = clients.makeAsyncIterator()
        guard let client = await handedOut.next() else {
            try? await framework.value
            try? await built.close()
            try? FileManager.default.removeItem(at: directory)
            throw UnexpectedAnswer(description: "the router test framework ended before it handed out a client")
        }
        self.client = client
    }

    public func shutdown() async throws {
        stop.finish()
        let ended = await framework.result
        try await server.close()
        try? FileManager.default.removeItem(at: directory)
        try ended.get()
    }

    public func exchange(
        _ method: HTTPMethod, _ path: String, body: Data?, contentType: String, headers: [(String, String)]
    ) async throws -> TestAnswer {
        var fields = HTTPFields()
        if body != nil { fields[.contentType] = contentType }
        fields[.accept] = "application/fido+uaf"
        for (name, value) in headers {
            // A test's own Content-Type or Accept replaces the default one.
            guard let field = HTTPField.Name(name) else { continue }
            if field == .accept || field == .contentType { fields[field] = value } else { fields.append(HTTPField(name: field, value: value)) }
        }
        let response = try await client.executeRequest(
            uri: path, method: HTTPRequest.Method(rawValue: method.rawValue) ?? .post,
            headers: fields, body: body.map { ByteBuffer(bytes: $0) })
        var answerHeaders = HTTPHeaders()
        for field in response.headers { answerHeaders.add(name: field.name.rawName, value: field.value) }
        return TestAnswer(status: Int(response.status.code), body: Data(buffer: response.body), headers: answerHeaders)
    }
}
