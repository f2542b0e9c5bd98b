import DevelopmentStandIns
import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The server's calls out through an HTTP proxy (`outboundProxy`): the relying party's JWKS and Firebase (the OAuth
/// token and FCM's send, to a local stand-in) are reached through a local `CONNECT` proxy that the test starts
/// (Python's asyncio), with the proxy's credentials; a wrong password stops the start in words; a `noProxy` host is
/// reached directly; and the settings' rules.
final class OutboundProxyLiveTests: XCTestCase {
    static let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/connect_proxy.py").path
    var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws { try? FileManager.default.removeItem(at: directory) }

    /// The proxy process: its port and what it logged (one line per tunnel asked for). It ends with the test.
    final class Proxy: @unchecked Sendable {
        let process = Process()
        let input = Pipe()
        let log: URL
        var port = 0

        init(credentials: String?, directory: URL) throws {
            if case .skipped(let why) = try ExternalTool.require("python3", probe: ["python3", "--version"]) { throw XCTSkip(why) }
            log = directory.appendingPathComponent("proxy-\(UUID().uuidString).log")
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", OutboundProxyLiveTests.script, log.path] + (credentials.map { [$0] } ?? [])
            process.standardInput = input
            try process.run()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let line = lines.first(where: { $0.hasPrefix("PORT ") }), let port = Int(line.dropFirst(5)) {
                    self.port = port
                    return
                }
                Thread.sleep(forTimeInterval: 0.05)
            }
            stop()
            throw XCTSkip("the CONNECT proxy did not start within 10 s")
        }

        var lines: [String] { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        var tunnels: [String] { lines.filter { !$0.hasPrefix("PORT ") } }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    func configuration(_ host: TestHTTPSHost, proxy: ServerConfiguration.OutboundProxy) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        let party = LocalRelyingParty()
        configuration.authorization.jwt = .init(
            issuer: party.issuer, audience: party.audience, jwksURL: host.url, jwksTrustedCertificatesPath: host.trustedCertificatesPath)
        configuration.outboundProxy = proxy
        return configuration
    }

    func jwksHost() async throws -> TestHTTPSHost {
        try await TestHTTPSHost.start(directory: directory, path: "/jwks.json", body: LocalRelyingParty().jwksJSON)
    }

    func testTheJWKSIsFetchedThroughTheProxyWithItsCredentials() async throws {
        let proxy = try Proxy(credentials: "mauth:s3cr3t", directory: directory)
        defer { proxy.stop() }
        let host = try await jwksHost()
        let hostPort = try XCTUnwrap(URL(string: host.url)?.port)
        try await LoopbackServer.with(configuration(host, proxy: .init(url: "http://mauth:s3cr3t@127.0.0.1:\(proxy.port)"))) { _ in
            XCTAssertEqual(host.fetches, 1, "the JWKS was fetched at start")
        }
        XCTAssertEqual(proxy.tunnels.count, 1, "\(proxy.tunnels)")
        XCTAssertTrue(
            proxy.tunnels.first?.hasPrefix("CONNECT ") == true && proxy.tunnels.first?.hasSuffix(":\(hostPort)") == true, "\(proxy.tunnels)")
    }

    func testAWrongProxyPasswordStopsTheStartInWords() async throws {
        let proxy = try Proxy(credentials: "mauth:s3cr3t", directory: directory)
        defer { proxy.stop() }
        let host = try await jwksHost()
        do {
            let server = try await FIDOServerApplication.start(
                configuration: configuration(host, proxy: .init(url: "http://mauth:wrong@127.0.0.1:\(proxy.port)")))
            try await server.stop()
            XCTFail("started without the relying party's keys")
        } catch {
            XCTAssertTrue("\(error)".contains("authorization.jwt.jwksURL"), "\(error)")
            XCTAssertFalse("\(error)".contains("wrong"), "the proxy password is not repeated: \(error)")
        }
        XCTAssertEqual(host.fetches, 0)
        XCTAssertTrue(proxy.tunnels.allSatisfy { $0.hasPrefix("REFUSED ") } && !proxy.tunnels.isEmpty, "\(proxy.tunnels)")
    }

    func testANoProxyHostIsReachedDirectly() async throws {
        let proxy = try Proxy(credentials: nil, directory: directory)
        defer { proxy.stop() }
        let host = try await jwksHost()
        let name = try XCTUnwrap(URL(string: host.url)?.host)
        try await LoopbackServer.with(configuration(host, proxy: .init(url: "http://127.0.0.1:\(proxy.port)", noProxy: [name]))) { _ in
            XCTAssertEqual(host.fetches, 1)
        }
        XCTAssertEqual(proxy.tunnels, [], "the exempt host went through the proxy")
    }

    func testFirebaseIsReachedThroughTheProxyWithItsCredentials() async throws {
        let proxy = try Proxy(credentials: "mauth:s3cr3t", directory: directory)
        defer { proxy.stop() }
        let firebase = try await FirebaseStandIn.start(directory: directory.appendingPathComponent("firebase"))
        let firebasePort = try XCTUnwrap(URL(string: firebase.configuration.endpointBaseURL)?.port)
        let dispatcher = try FirebaseDispatcher(
            configuration: firebase.configuration, logger: Logger(label: "test.firebase"), clock: { Date() },
            proxy: .init(url: "http://mauth:s3cr3t@127.0.0.1:\(proxy.port)"))
        let outcome = await dispatcher.send(registrationToken: "fcm-through-proxy", data: ["dispatchTokenResponse": "x"], notification: nil)
        await dispatcher.shutdown()
        let messages = firebase.messages
        let exchanges = firebase.tokenExchanges
        try await firebase.stop()
        guard case .sent = outcome else { return XCTFail("FCM through the proxy: \(outcome)") }
        XCTAssertEqual(messages.map(\.registrationToken), ["fcm-through-proxy"])
        XCTAssertEqual(exchanges, 1, "the OAuth token was fetched through the proxy too")
        // The token endpoint and FCM (one host here) were reached only through CONNECT tunnels with the credentials.
        XCTAssertFalse(proxy.tunnels.isEmpty)
        XCTAssertTrue(proxy.tunnels.allSatisfy { $0.hasPrefix("CONNECT ") && $0.hasSuffix(":\(firebasePort)") }, "\(proxy.tunnels)")
    }

    // MARK: The settings

    func testNoProxyMatchesAHostItsSubdomainsAndEverythingForAStar() {
        let proxy = ServerConfiguration.OutboundProxy(
            url: "http://proxy.bank.internal:3128", noProxy: ["bank.internal", ".corp.example", "10.1.2.3"])
        XCTAssertTrue(proxy.exempts("bank.internal"))
        XCTAssertTrue(proxy.exempts("jwks.bank.internal"))
        XCTAssertTrue(proxy.exempts("idp.corp.example"))
        XCTAssertTrue(proxy.exempts("corp.example"))
        XCTAssertTrue(proxy.exempts("10.1.2.3"))
        XCTAssertTrue(proxy.exempts("JWKS.BANK.INTERNAL"))
        XCTAssertFalse(proxy.exempts("notbank.internal"), "a suffix that is not a label is not a subdomain")
        XCTAssertFalse(proxy.exempts("fcm.googleapis.com"))
        XCTAssertTrue(ServerConfiguration.OutboundProxy(url: "http://p:1", noProxy: ["*"]).exempts("fcm.googleapis.com"))
    }

    func testAProxyThatIsNotAnHTTPURLIsRefused() {
        for url in ["https://proxy:3128", "proxy:3128", "http://proxy:3128/path", "http://:3128", "http://proxy:70000"] {
            var configuration = ServerConfiguration()
            configuration.outboundProxy = .init(url: url)
            XCTAssertTrue(configuration.problems().contains { $0.contains("outboundProxy.url") }, url)
        }
        var configuration = ServerConfiguration()
        configuration.outboundProxy = .init(url: "http://proxy:3128", noProxy: ["has space"])
        XCTAssertTrue(configuration.problems().contains { $0.contains("outboundProxy.noProxy") })
    }

    func testTheEnvironmentsProxyServesWhenTheFileNamesNone() throws {
        let file = directory.appendingPathComponent("mauth.json")
        try Data("{}".utf8).write(to: file)
        let fromEnvironment = try ServerConfiguration.load(
            path: file.path, environment: ["HTTPS_PROXY": "http://proxy.bank.internal:3128", "NO_PROXY": "localhost, .bank.internal"])
        XCTAssertEqual(fromEnvironment.outboundProxy, .init(url: "http://proxy.bank.internal:3128", noProxy: ["localhost", ".bank.internal"]))
        try Data(#"{"outboundProxy": {"url": "http://file.proxy:8080"}}"#.utf8).write(to: file)
        let fromFile = try ServerConfiguration.load(path: file.path, environment: ["HTTPS_PROXY": "http://proxy.bank.internal:3128"])
        XCTAssertEqual(fromFile.outboundProxy?.url, "http://file.proxy:8080", "the file wins")
    }
}
