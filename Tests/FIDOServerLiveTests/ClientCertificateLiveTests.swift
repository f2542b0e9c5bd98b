import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import SwiftASN1
import TestSupport
import X509
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Mutual TLS for the relying party's calls (`authorization.clientCertificates`), on a real server over loopback
/// TLS, with curl (OpenSSL) as the client: a mapped certificate acts as its principal (any user, one user, the
/// operator's endpoints) on the routes a JWT with that scope reaches and no others; no certificate, an unmapped one,
/// one of another authority, an expired one and one not for client authentication are refused; a phone's
/// connection, which presents none, is not asked to.
final class ClientCertificateLiveTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        if case .skipped(let why) = try ExternalTool.require("curl", probe: ["curl", "--version"]) { throw XCTSkip(why) }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-mtls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    /// A private CA of the relying party's, issuing client certificates.
    struct Authority {
        let key = P256.Signing.PrivateKey()
        let certificate: Certificate

        init(_ name: String) throws {
            let subject = try DistinguishedName {
                OrganizationName("Example Bank")
                CommonName(name)
            }
            certificate = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date().addingTimeInterval(-3600),
                notValidAfter: Date().addingTimeInterval(86400), issuer: subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true))
                }, issuerPrivateKey: .init(key))
        }

        /// Writes a client certificate for `commonName` and its key into `directory`; returns the paths and the
        /// certificate's SHA-256 (hex).
        func issue(
            _ commonName: String, in directory: URL, usage: ExtendedKeyUsage.Usage = .clientAuth,
            notAfter: Date = Date().addingTimeInterval(3600)
        ) throws -> (certificate: String, key: String, sha256: String) {
            let key = P256.Signing.PrivateKey()
            let leaf = try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: Date().addingTimeInterval(-7200),
                notValidAfter: notAfter, issuer: certificate.subject,
                subject: try DistinguishedName {
                    OrganizationName("Example Bank")
                    CommonName(commonName)
                }, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try .init {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                    try ExtendedKeyUsage([usage])
                }, issuerPrivateKey: .init(self.key))
            var serializer = DER.Serializer()
            try serializer.serialize(leaf)
            let certificatePath = directory.appendingPathComponent("\(commonName).pem").path
            let keyPath = directory.appendingPathComponent("\(commonName).key").path
            try Data(try leaf.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: certificatePath))
            try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
            return (certificatePath, keyPath, SHA256.hash(data: serializer.serializedBytes).map { String(format: "%02x", $0) }.joined())
        }

        func write(to path: String) throws { try Data(try certificate.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: path)) }
    }

    /// curl's answer: the HTTP status, or nil when the TLS handshake failed (curl's exit code in `failure`).
    struct Answer {
        let status: Int?
        let failure: String
    }

    func curl(
        _ server: LoopbackServer, _ method: String, _ path: String, body: Data? = nil,
        certificate: (certificate: String, key: String, sha256: String)?
    )
        throws -> Answer
    {
        let trust = directory.appendingPathComponent("server-ca.pem").path
        try Data(server.server.certificatePEM.utf8).write(to: URL(fileURLWithPath: trust))
        var arguments = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", trust, "-X", method]
        if let certificate { arguments += ["--cert", certificate.certificate, "--key", certificate.key] }
        if let body {
            let file = directory.appendingPathComponent("body-\(UUID().uuidString).json").path
            try body.write(to: URL(fileURLWithPath: file))
            arguments += ["-H", "Content-Type: application/json", "-H", "Accept: application/fido+uaf", "--data-binary", "@\(file)"]
        }
        arguments.append(server.server.baseURL.absoluteString + path)
        let output = try ExternalProgram.run(arguments)
        let status = Int(output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).flatMap { $0 == 0 ? nil : $0 }
        return Answer(status: status, failure: "exit \(output.status): \(output.stderr)")
    }

    /// A loopback server without JWT keys whose relying party's calls are authorized by client certificates of
    /// `authority`, mapped by `principals`.
    func configuration(
        trusting authority: Authority, _ principals: [ServerConfiguration.Authorization.ClientCertificates.Mapping]
    ) throws -> ServerConfiguration {
        let authorityPath = directory.appendingPathComponent("rp-ca.pem").path
        try authority.write(to: authorityPath)
        var configuration = LoopbackServer.configuration()
        configuration.authorization.jwt = nil
        configuration.authorization.clientCertificates = .init(certificateAuthoritiesPath: authorityPath, principals: principals)
        return configuration
    }

    func testAMappedCertificateActsAsItsPrincipalOnTheRoutesItsScopeReaches() async throws {
        let authority = try Authority("Example Bank RP CA")
        let backend = try authority.issue("backend.bank.example", in: directory)
        let operations = try authority.issue("ops.bank.example", in: directory)
        let alicesShop = try authority.issue("shop.bank.example", in: directory)
        let stranger = try authority.issue("intern.bank.example", in: directory)
        let configuration = try configuration(
            trusting: authority,
            [
                .init(name: "backend", subject: "CN=backend.bank.example,O=Example Bank", admin: true),
                .init(name: "ops", sha256: operations.sha256.uppercased(), operator: true),
                .init(name: "shop", subject: "CN=shop.bank.example,O=Example Bank", username: "alice"),
            ])
        try await LoopbackServer.with(configuration) { server in
            let alice = try LoopbackServer.registrationBody("alice")
            let bob = try LoopbackServer.registrationBody("bob")
            let registration = "/nevisfido/uaf/1.1/request/registration"
            // Acting for users: the admin certificate for anyone, the shop's for Alice only, the operator's for nobody.
            XCTAssertEqual(try curl(server, "POST", registration, body: alice, certificate: backend).status, 200)
            XCTAssertEqual(try curl(server, "POST", registration, body: bob, certificate: backend).status, 200)
            XCTAssertEqual(try curl(server, "POST", registration, body: alice, certificate: alicesShop).status, 200)
            XCTAssertEqual(try curl(server, "POST", registration, body: bob, certificate: alicesShop).status, 403)
            XCTAssertEqual(try curl(server, "POST", registration, body: alice, certificate: operations).status, 403)
            // The operator's endpoints: the operator's certificate only (the admin one has no operator scope).
            let audit = "/nevisfido/admin/audit?username=alice"
            XCTAssertEqual(try curl(server, "GET", audit, certificate: operations).status, 200)
            XCTAssertEqual(try curl(server, "GET", audit, certificate: backend).status, 403)
            // No certificate, or one of the authority that no mapping names: no credential.
            XCTAssertEqual(try curl(server, "POST", registration, body: alice, certificate: nil).status, 401)
            XCTAssertEqual(try curl(server, "POST", registration, body: alice, certificate: stranger).status, 401)
            // A phone presents none and is not asked to: its open endpoints answer as before.
            XCTAssertEqual(try curl(server, "GET", "/health/live", certificate: nil).status, 200)
            // The audit trail names the certificate's principal (written within a second).
            for principal in ["client-certificate:backend+admin", "client-certificate:shop:alice"] {
                let event = try await AuditLiveTests.waitForEvent(server.server.stores) {
                    $0.principal == principal && $0.operation == "registration request" && $0.statusCode == 1200
                }
                XCTAssertEqual(event.clientAddress, "127.0.0.1")
            }
        }
    }

    func testACertificateTheHandshakeCannotVerifyEndsTheConnection() async throws {
        let authority = try Authority("Example Bank RP CA")
        let other = try Authority("Someone Else CA")
        let foreign = try other.issue("backend.bank.example", in: directory.appendingPathComponent("other", isDirectory: true).creatingDirectory())
        let expired = try authority.issue("expired.bank.example", in: directory, notAfter: Date().addingTimeInterval(-60))
        let serverOnly = try authority.issue("server.bank.example", in: directory, usage: .serverAuth)
        let configuration = try configuration(
            trusting: authority,
            [
                .init(name: "backend", subject: "CN=backend.bank.example,O=Example Bank", admin: true),
                .init(name: "expired", subject: "CN=expired.bank.example,O=Example Bank", admin: true),
                .init(name: "server", subject: "CN=server.bank.example,O=Example Bank", admin: true),
            ])
        try await LoopbackServer.with(configuration) { server in
            let body = try LoopbackServer.registrationBody("alice")
            for (what, certificate) in [("another authority's", foreign), ("an expired", expired), ("a server-only", serverOnly)] {
                let answer = try curl(server, "POST", "/nevisfido/uaf/1.1/request/registration", body: body, certificate: certificate)
                XCTAssertNil(answer.status, "\(what) certificate was answered \(answer.status.map(String.init) ?? "")")
                // curl 35/56: the server's TLS alert ended the handshake (not a missing file or a refused connection).
                XCTAssertTrue(answer.failure.hasPrefix("exit 35") || answer.failure.hasPrefix("exit 56"), "\(what): \(answer.failure)")
            }
        }
    }

    func testAClientCertificateSettingIsCheckedAtStart() async throws {
        var settings = ServerConfiguration.Authorization.ClientCertificates(
            certificateAuthoritiesPath: directory.appendingPathComponent("missing.pem").path,
            principals: [.init(name: "backend", subject: "CN=backend", admin: true)])
        var configuration = LoopbackServer.configuration()
        configuration.authorization.clientCertificates = settings
        let missing = await FIDOServerApplication.checkConfiguration(configuration).problems
        XCTAssertTrue(missing.contains { $0.contains("authorization.clientCertificates.certificateAuthoritiesPath") }, "\(missing)")
        let refusals: [(ServerConfiguration.Authorization.ClientCertificates.Mapping, String)] = [
            (.init(name: "backend", subject: "CN=backend"), "give admin, operator or username"),
            (.init(name: "backend", subject: "CN=b", sha256: String(repeating: "a", count: 64), admin: true), "exactly one of subject and sha256"),
            (.init(name: "backend", sha256: "abcd", admin: true), "sha256 must be 32 bytes in hex"),
            (.init(name: "back end", subject: "CN=b", admin: true), "must be 1...64 letters"),
            (.init(name: "backend", subject: "CN=b", admin: true, username: "alice"), "username and admin exclude each other"),
        ]
        for (mapping, expected) in refusals {
            settings.principals = [mapping]
            configuration.authorization.clientCertificates = settings
            XCTAssertThrowsError(try configuration.validate(), expected) { error in
                XCTAssertTrue("\(error)".contains(expected), "\(error)")
            }
        }
    }
}

extension URL {
    fileprivate func creatingDirectory() throws -> URL {
        try FileManager.default.createDirectory(at: self, withIntermediateDirectories: true)
        return self
    }
}
