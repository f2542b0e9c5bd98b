import FIDOServer
import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// An HTTPS host on loopback that serves one document at one path, which the test may change, and counts the
/// fetches: the Metadata Service's BLOB or a relying party's JWKS, as the server under test downloads them.
public final class TestHTTPSHost: Sendable {
    private let state: NIOLockedValueBox<(body: String, fetches: Int)>
    /// The document's URL.
    public let url: String
    /// The PEM the server must trust to fetch it (`trustedCertificatesPath`).
    public let trustedCertificatesPath: String
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(
        state: NIOLockedValueBox<(body: String, fetches: Int)>, url: String, trustedCertificatesPath: String, group: ServiceGroup,
        task: Task<Void, any Error>
    ) {
        self.state = state
        self.url = url
        self.trustedCertificatesPath = trustedCertificatesPath
        self.group = group
        self.task = task
    }

    /// How many times the document was fetched.
    public var fetches: Int { state.withLockedValue { $0.fetches } }
    /// Serves `body` from now on.
    public func serve(_ body: String) { state.withLockedValue { $0.body = body } }

    /// Starts the host with a development certificate whose anchor it writes into `directory`.
    public static func start(directory: URL, path: String, body: String) async throws -> TestHTTPSHost {
        let certificate = try DevelopmentCertificate.generate(hosts: ["127.0.0.1"])
        let caPath = directory.appendingPathComponent("test-host-ca-\(UUID().uuidString.prefix(8)).pem").path
        try Data(certificate.trustAnchorPEM.utf8).write(to: URL(fileURLWithPath: caPath))
        let state = NIOLockedValueBox((body: body, fetches: 0))
        let router = Router()
        router.get(RouterPath(path)) { _, _ -> String in
            state.withLockedValue { state in
                state.fetches += 1
                return state.body
            }
        }
        // The same document at `path` + `/trickle`, one byte every 300 ms: a body that never quite ends, as a slow
        // or hostile host sends it (at most 100 bytes, so the host stops by itself).
        router.get(RouterPath(path + "/trickle")) { _, _ -> Response in
            let body = state.withLockedValue { state in
                state.fetches += 1
                return Array(state.body.utf8.prefix(100))
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: ResponseBody { writer in
                    for byte in body {
                        try await writer.write(ByteBuffer(bytes: [byte]))
                        try await Task.sleep(for: .milliseconds(300))
                    }
                    try await writer.finish(nil)
                })
        }
        var logger = Logger(label: "test.https-host")
        logger.logLevel = .warning
        let (started, continuation) = AsyncStream<Int>.makeStream()
        let application = Application(
            router: router, server: try .tls(.http1(), tlsConfiguration: try certificate.serverTLSConfiguration()),
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "test-host"),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let task = Task { try await group.run() }
        var port = 0
        for await bound in started {
            port = bound
            break
        }
        guard port != 0 else {
            try await task.value
            throw CancellationError()
        }
        return TestHTTPSHost(state: state, url: "https://127.0.0.1:\(port)\(path)", trustedCertificatesPath: caPath, group: group, task: task)
    }

    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
