import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Primitives
import SwiftASN1
import TestSupport
import UAF
import X509
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// A certificate renewed on disk reaches new connections without a restart; a broken renewal changes nothing; the
/// replaced certificate stays accepted in ChannelBindings for `tls.previousCertificateSeconds`.
final class TLSReloadTests: XCTestCase {
    var directory: URL!
    var certificatePath: String { directory.appendingPathComponent("server.pem").path }
    var keyPath: String { directory.appendingPathComponent("server.key").path }
    let authority = try! TestAuthority()

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws { try? FileManager.default.removeItem(at: directory) }

    /// A CA of the test's own that issues server certificates for loopback, so a client trusting it trusts each
    /// renewal (as a client trusting a public CA does).
    struct TestAuthority {
        let key = P256.Signing.PrivateKey()
        let certificate: Certificate

        init() throws {
            let name = try DistinguishedName { CommonName("mauth TLS reload test CA \(UUID().uuidString.prefix(8))") }
            certificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date().addingTimeInterval(-3600),
                notValidAfter: Date().addingTimeInterval(86400), issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true))
                }, issuerPrivateKey: .init(key))
        }

        /// A server certificate and its key, as PEM: the chain (leaf, then this CA) and the key.
        struct Issued {
            let chainPEM: String
            let keyPEM: String
            let leafDER: [UInt8]
        }

        func issue(
            notBefore: Date = Date().addingTimeInterval(-300), notAfter: Date = Date().addingTimeInterval(3600),
            key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()
        ) throws -> Issued {
            let leaf = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: notBefore, notValidAfter: notAfter,
                issuer: certificate.subject, subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([.serverAuth])
                    SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
                }, issuerPrivateKey: .init(self.key))
            var serializer = DER.Serializer()
            try serializer.serialize(leaf)
            return Issued(
                chainPEM: try leaf.serializeAsPEM().pemString + "\n" + certificate.serializeAsPEM().pemString + "\n",
                keyPEM: key.pemRepresentation, leafDER: serializer.serializedBytes)
        }
    }

    func write(_ issued: TestAuthority.Issued) throws {
        try Data(issued.chainPEM.utf8).write(to: URL(fileURLWithPath: certificatePath))
        try Data(issued.keyPEM.utf8).write(to: URL(fileURLWithPath: keyPath))
    }

    func configuration(previousCertificateSeconds: Int = 600) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        configuration.tls = .init(certificatePath: certificatePath, privateKeyPath: keyPath, previousCertificateSeconds: previousCertificateSeconds)
        return configuration
    }

    /// The leaf the server presents to a new connection (read during the handshake; the probe trusts anything, it
    /// only looks).
    static func presentedLeaf(port: Int) async throws -> [UInt8] {
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let group = MultiThreadedEventLoopGroup.singleton
        let seen = group.next().makePromise(of: [UInt8].self)
        let completed = NIOLockedValueBox(false)
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: context, serverHostname: "localhost") { certificates, verdict in
                        if !completed.withLockedValue({ done in
                            let was = done
                            done = true
                            return was
                        }) {
                            seen.succeed((try? certificates[0].toDERBytes()) ?? [])
                        }
                        verdict.succeed(.certificateVerified)
                    }
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        channel.closeFuture.whenComplete { _ in
            if !completed.withLockedValue({ done in
                let was = done
                done = true
                return was
            }) {
                seen.fail(ChannelError.ioOnClosedChannel)
            }
        }
        defer { channel.close(promise: nil) }
        return try await seen.futureResult.get()
    }

    func register(_ loopback: LoopbackServer, username: String, reporting certificate: [UInt8]) async throws -> Int {
        let binding = ServerCertificateSource.channelBinding(leafDER: certificate, certificate: try Certificate(derEncoded: certificate))
        var authenticator = SoftwareAuthenticator()
        authenticator.channelBinding = ChannelBinding(serverEndPoint: binding.serverEndPoint, tlsServerCertificate: binding.tlsServerCertificate)
        let request = try await loopback.registrationRequest(username: username)
        return try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            .statusCode
    }

    // MARK: PKCS#12

    var pkcs12Path: String { directory.appendingPathComponent("server.p12").path }

    /// `issued` as a PKCS#12 file that OpenSSL makes (its default: PBES2, AES-256-CBC, PBKDF2, a SHA-256 MAC), or its
    /// `-legacy` 3DES form, at ``pkcs12Path``.
    func writePKCS12(_ issued: TestAuthority.Issued, password: String, legacy: Bool = false) throws {
        try write(issued)
        if case .skipped(let why) = try ExternalTool.require("openssl", probe: ["openssl", "version"]) { throw XCTSkip(why) }
        let run = try ExternalProgram.run(
            ["openssl", "pkcs12", "-export", "-in", certificatePath, "-inkey", keyPath, "-out", pkcs12Path, "-passout", "pass:\(password)"]
                + (legacy ? ["-legacy"] : []))
        XCTAssertEqual(run.status, 0, run.stderr)
    }

    func pkcs12Configuration(password: String) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        configuration.tls = .init(pkcs12Path: pkcs12Path, pkcs12Password: password)
        return configuration
    }

    func testAPKCS12FileOpenSSLMadeServesItsChainAndIsRenewedWithoutARestart() async throws {
        let first = try authority.issue()
        let second = try authority.issue()
        try writePKCS12(first, password: "correct horse")
        try await LoopbackServer.with(pkcs12Configuration(password: "correct horse")) { loopback in
            let before = try await Self.presentedLeaf(port: loopback.server.port)
            XCTAssertEqual(before, first.leafDER)
            let verified = try await LoopbackServer.verifiedStatus(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            XCTAssertEqual(verified, 200, "a client that verifies the chain (the CA in the file) connects")
            try writePKCS12(second, password: "correct horse")
            let renewed = try await eventually { try await Self.presentedLeaf(port: loopback.server.port) == second.leafDER }
            XCTAssertTrue(renewed, "the server still presents the first certificate")
        }
    }

    func testALegacyPKCS12FileIsRead() async throws {
        let issued = try authority.issue()
        try writePKCS12(issued, password: "old store", legacy: true)
        try await LoopbackServer.with(pkcs12Configuration(password: "old store")) { loopback in
            let presented = try await Self.presentedLeaf(port: loopback.server.port)
            XCTAssertEqual(presented, issued.leafDER)
        }
    }

    func testAWrongPKCS12PasswordStopsTheStartInWords() async throws {
        try writePKCS12(try authority.issue(), password: "right")
        do {
            let server = try await FIDOServerApplication.start(configuration: pkcs12Configuration(password: "wrong"))
            try await server.stop()
            XCTFail("started with a wrong PKCS#12 password")
        } catch {
            XCTAssertTrue("\(error)".contains("tls.pkcs12Path \(pkcs12Path) does not open with tls.pkcs12Password"), "\(error)")
        }
    }

    func testAPKCS12PasswordFromTheEnvironmentOpensTheFile() async throws {
        try writePKCS12(try authority.issue(), password: "from the environment")
        let file = directory.appendingPathComponent("mauth.json")
        try Data(#"{"tls": {"pkcs12Path": "server.p12", "pkcs12Password": "${env:P12_PASSWORD}"}}"#.utf8).write(to: file)
        let configuration = try ServerConfiguration.load(path: file.path, environment: ["P12_PASSWORD": "from the environment"])
        XCTAssertEqual(configuration.tls.pkcs12Path, pkcs12Path, "read from the file's folder")
        let check = await FIDOServerApplication.checkConfiguration(configuration)
        XCTAssertFalse(check.problems.contains { $0.contains("pkcs12") }, "\(check.problems)")
    }

    func testAPKCS12FileBesideAPEMPairIsRefused() {
        var configuration = ServerConfiguration()
        configuration.tls = .init(certificatePath: "a.pem", privateKeyPath: "a.key", pkcs12Path: "a.p12")
        XCTAssertTrue(configuration.problems().contains { $0.contains("tls.pkcs12Path replaces") })
        configuration.tls = .init(pkcs12Password: "orphan")
        XCTAssertTrue(configuration.problems().contains { $0.contains("tls.pkcs12Password is set without tls.pkcs12Path") })
    }

    func testARenewedCertificateReachesNewConnectionsWithoutARestart() async throws {
        let first = try authority.issue()
        let second = try authority.issue()
        try write(first)
        try await LoopbackServer.with(configuration()) { loopback in
            let before = try await Self.presentedLeaf(port: loopback.server.port)
            XCTAssertEqual(before, first.leafDER)
            // A connection opened before the renewal keeps working on the certificate it was opened with.
            let open = try await RawTLSConnection(port: loopback.server.port, trusting: loopback.server.certificatePEM)

            try write(second)
            let renewed = try await eventually { try await Self.presentedLeaf(port: loopback.server.port) == second.leafDER }
            XCTAssertTrue(renewed, "the server still presents the first certificate")
            try await open.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let line = await open.statusLine(within: 5)
            XCTAssertEqual(line, "HTTP/1.1 200 OK")
            await open.close()
            // A client that verifies the chain (the CA's) connects to the renewed certificate.
            let fresh = try await LoopbackServer.verifiedStatus(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            XCTAssertEqual(fresh, 200)
            let metrics = String(decoding: try await loopback.exchange(.GET, "/metrics", body: nil).body, as: UTF8.self)
            XCTAssertTrue(metrics.contains(#"mauth_tls_reloads_total{outcome="installed"} 1"#), metrics)
        }
    }

    func testACertificateRenewedByASymlinkSwapAsKubernetesDoesReachesNewConnections() async throws {
        // As a Kubernetes secret volume: server.pem -> ..data/server.pem, ..data -> a dated directory, renewed by
        // writing a new directory and swapping the ..data link in one rename.
        let first = try authority.issue()
        let second = try authority.issue()
        let manager = FileManager.default
        for (name, issued) in [("..2026_01", first), ("..2026_02", second)] {
            let folder = directory.appendingPathComponent(name)
            try manager.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data(issued.chainPEM.utf8).write(to: folder.appendingPathComponent("server.pem"))
            try Data(issued.keyPEM.utf8).write(to: folder.appendingPathComponent("server.key"))
        }
        try manager.createSymbolicLink(atPath: directory.appendingPathComponent("..data").path, withDestinationPath: "..2026_01")
        for file in ["server.pem", "server.key"] {
            try manager.createSymbolicLink(atPath: directory.appendingPathComponent(file).path, withDestinationPath: "..data/\(file)")
        }
        try await LoopbackServer.with(configuration()) { loopback in
            let before = try await Self.presentedLeaf(port: loopback.server.port)
            XCTAssertEqual(before, first.leafDER)
            let swap = directory.appendingPathComponent("..data_tmp").path
            try manager.createSymbolicLink(atPath: swap, withDestinationPath: "..2026_02")
            XCTAssertEqual(rename(swap, directory.appendingPathComponent("..data").path), 0)
            let renewed = try await eventually { try await Self.presentedLeaf(port: loopback.server.port) == second.leafDER }
            XCTAssertTrue(renewed, "the server still presents the first certificate after the link swap")
        }
    }

    func testARenewalWrittenCertificateFirstWaitsForItsKey() async throws {
        let first = try authority.issue()
        let second = try authority.issue()
        try write(first)
        try await LoopbackServer.with(configuration()) { loopback in
            // The new certificate beside the old key: what a renewal looks like between its two writes.
            try Data(second.chainPEM.utf8).write(to: URL(fileURLWithPath: certificatePath))
            // The server has read the half-written pair once it counts a refused reload.
            let read = try await eventually { loopback.server.metrics.value(of: #"mauth_tls_reloads_total{outcome="refused"}"#) == 1 }
            XCTAssertTrue(read, "the new certificate file was never read")
            let during = try await Self.presentedLeaf(port: loopback.server.port)
            XCTAssertEqual(during, first.leafDER, "a certificate without its key was installed")
            let status = try await LoopbackServer.verifiedStatus(port: loopback.server.port, trusting: loopback.server.certificatePEM)
            XCTAssertEqual(status, 200)

            try Data(second.keyPEM.utf8).write(to: URL(fileURLWithPath: keyPath))
            let renewed = try await eventually { try await Self.presentedLeaf(port: loopback.server.port) == second.leafDER }
            XCTAssertTrue(renewed, "the completed renewal was never installed")
            let metrics = String(decoding: try await loopback.exchange(.GET, "/metrics", body: nil).body, as: UTF8.self)
            XCTAssertTrue(metrics.contains(#"mauth_tls_reloads_total{outcome="refused"} 1"#), metrics)
            XCTAssertTrue(metrics.contains(#"mauth_tls_reloads_total{outcome="installed"} 1"#), metrics)
        }
    }

    func testTheReplacedCertificateIsAcceptedInChannelBindingsForPreviousCertificateSeconds() async throws {
        let first = try authority.issue()
        let second = try authority.issue()
        try write(first)
        try await LoopbackServer.with(configuration(previousCertificateSeconds: 600)) { loopback in
            try write(second)
            let renewed = try await eventually { try await Self.presentedLeaf(port: loopback.server.port) == second.leafDER }
            XCTAssertTrue(renewed)
            let replacedSoon = try await register(loopback, username: "alice", reporting: first.leafDER)
            XCTAssertEqual(replacedSoon, 1200)
            loopback.clock.advance(601)
            let replacedLate = try await register(loopback, username: "bob", reporting: first.leafDER)
            XCTAssertEqual(replacedLate, 1490)
            let current = try await register(loopback, username: "carol", reporting: second.leafDER)
            XCTAssertEqual(current, 1200)
        }
    }

    func testWithPreviousCertificateSecondsZeroTheReplacedCertificateIsRefusedAtOnce() async throws {
        let first = try authority.issue()
        let second = try authority.issue()
        try write(first)
        try await LoopbackServer.with(configuration(previousCertificateSeconds: 0)) { loopback in
            try write(second)
            let renewed = try await eventually { try await Self.presentedLeaf(port: loopback.server.port) == second.leafDER }
            XCTAssertTrue(renewed)
            let replaced = try await register(loopback, username: "alice", reporting: first.leafDER)
            XCTAssertEqual(replaced, 1490)
        }
    }

    // The rules of a reload, on the source itself.

    func source(previousCertificateSeconds: Int = 600) throws -> ServerCertificateSource {
        try ServerCertificateSource(certificatePath: certificatePath, keyPath: keyPath, previousCertificateSeconds: previousCertificateSeconds)
    }

    func testAnExpiredCertificateIsNotInstalled() throws {
        let first = try authority.issue()
        try write(first)
        let source = try source()
        try write(try authority.issue(notBefore: Date().addingTimeInterval(-7200), notAfter: Date().addingTimeInterval(-60)))
        XCTAssertEqual(source.reload(now: Date(), logger: Logger(label: "test")), .refused)
        XCTAssertEqual(try source.current.chain[0].toDERBytes(), first.leafDER)
    }

    func testACertificateNotValidYetIsNotInstalled() throws {
        let first = try authority.issue()
        try write(first)
        let source = try source()
        try write(try authority.issue(notBefore: Date().addingTimeInterval(3600), notAfter: Date().addingTimeInterval(7200)))
        XCTAssertEqual(source.reload(now: Date(), logger: Logger(label: "test")), .refused)
        XCTAssertEqual(try source.current.chain[0].toDERBytes(), first.leafDER)
    }

    func testACertificateFileThatIsNotPEMIsNotInstalled() throws {
        let first = try authority.issue()
        try write(first)
        let source = try source()
        try Data("-----BEGIN CERTIFICATE-----\nnot base64\n".utf8).write(to: URL(fileURLWithPath: certificatePath))
        XCTAssertEqual(source.reload(now: Date(), logger: Logger(label: "test")), .refused)
        XCTAssertEqual(try source.current.chain[0].toDERBytes(), first.leafDER)
    }

    func testAMissingKeyFileIsNotInstalled() throws {
        try write(try authority.issue())
        let source = try source()
        try FileManager.default.removeItem(atPath: keyPath)
        XCTAssertEqual(source.reload(now: Date(), logger: Logger(label: "test")), .refused)
    }

    func testFilesRewrittenWithTheSameBytesChangeNothing() throws {
        let first = try authority.issue()
        try write(first)
        let source = try source()
        try write(first)
        XCTAssertEqual(source.reload(now: Date(), logger: Logger(label: "test")), .unchanged)
        XCTAssertEqual(source.channelBinding(now: Date()).previous, [])
    }

    func testAKeyThatIsNotTheCertificatesStopsTheStartNamingTheSetting() async throws {
        let first = try authority.issue()
        try Data(first.chainPEM.utf8).write(to: URL(fileURLWithPath: certificatePath))
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        let refusal = await StartupErrorTests.startError(configuration())
        XCTAssertEqual(
            refusal,
            "invalid configuration: tls.privateKeyPath \(keyPath) is not the key of the certificate in tls.certificatePath \(certificatePath)")
    }
}

extension LoopbackServer {
    /// The status of `GET /health/live` on a new connection that verifies the server's chain against `pem`.
    static func verifiedStatus(port: Int, trusting pem: String) async throws -> Int {
        let connection = try await RawTLSConnection(port: port, trusting: pem)
        defer { Task { await connection.close() } }
        try await connection.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
        guard let line = await connection.statusLine(within: 5) else { return 0 }
        return Int(line.split(separator: " ")[1]) ?? 0
    }
}
