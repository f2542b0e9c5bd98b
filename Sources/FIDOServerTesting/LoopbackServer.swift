import AsyncHTTPClient
import FIDOServer
import FIDOSimulation
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// A real server on a loopback port with TLS, and an AsyncHTTPClient that trusts its certificate: for what needs the
/// network (TLS, connections, deadlines, several instances, a database server).
public final class LoopbackServer: ServerUnderTest {
    public let server: RunningFIDOServer
    public let client: HTTPClient
    public let clock: TestClock
    public let relyingParty: LocalRelyingParty
    let directory: URL

    public var appID: String { server.appID }

    public init(
        configuration: ServerConfiguration = LoopbackServer.configuration(), relyingParty: LocalRelyingParty = LocalRelyingParty()
    ) async throws {
        let clock = TestClock()
        self.clock = clock
        self.relyingParty = relyingParty
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-loopback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let configuration = try trustingRelyingParty(configuration, relyingParty, in: directory)
        server = try await FIDOServerApplication.start(configuration: configuration, dependencies: ServerDependencies(clock: { clock.now }))
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
    }

    public func shutdown() async throws {
        try await client.shutdown()
        try await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    public func exchange(
        _ method: HTTPMethod, _ path: String, body: Data?, contentType: String, headers: [(String, String)]
    ) async throws -> TestAnswer {
        var request = HTTPClientRequest(url: server.baseURL.absoluteString + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        request.headers.add(name: "Accept", value: "application/fido+uaf")
        // A test's own Content-Type or Accept replaces the default one.
        for (name, value) in headers {
            if ["content-type", "accept"].contains(name.lowercased()) {
                request.headers.replaceOrAdd(name: name, value: value)
            } else {
                request.headers.add(name: name, value: value)
            }
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return TestAnswer(status: Int(response.status.code), body: Data(bytes.readableBytesView), headers: response.headers)
    }
}
