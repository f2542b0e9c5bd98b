import FIDOServerTesting
import Foundation
import SwiftASN1
import X509
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

final class DevelopmentCertificateTests: XCTestCase {
    func testTheDevelopmentCertificateIsNotACertificateAuthority() throws {
        let generated = try DevelopmentCertificate.generate(hosts: ["localhost", "127.0.0.1"])
        let certificate = try Certificate(pemEncoded: generated.certificatePEM)
        let constraints = try XCTUnwrap(try certificate.extensions.basicConstraints)
        XCTAssertEqual(constraints, .notCertificateAuthority)
        let usage = try XCTUnwrap(try certificate.extensions.keyUsage)
        XCTAssertFalse(usage.keyCertSign)
        XCTAssertTrue(usage.digitalSignature)
        // The leaf is issued by the one-off trust anchor clients are given.
        let anchor = try Certificate(pemEncoded: generated.trustAnchorPEM)
        XCTAssertEqual(certificate.issuer, anchor.subject)
        XCTAssertTrue(anchor.publicKey.isValidSignature(certificate.signature, for: certificate))
    }

    func testTheDevelopmentCertificateNamesItsHosts() throws {
        let generated = try DevelopmentCertificate.generate(hosts: ["localhost", "127.0.0.1"])
        let names = try XCTUnwrap(try Certificate(pemEncoded: generated.certificatePEM).extensions.subjectAlternativeNames)
        XCTAssertTrue(names.contains(.dnsName("localhost")))
        XCTAssertTrue(names.contains(.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))))
    }
}

/// The development certificate is kept beside the SQLite file and reused on restart, so devices that trusted the
/// server keep trusting it; it is replaced when it no longer fits, or on request.
final class KeptDevelopmentCertificateTests: XCTestCase {
    var directory: URL!
    override func setUp() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-devcert-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// The trust anchor a server on `database` presents after a start.
    func trustAnchor(host: String = "127.0.0.1", regenerate: Bool = false) async throws -> String {
        var configuration = ServerConfiguration(
            host: host, port: 0, facets: [testFacet], database: .sqlite(path: directory.appendingPathComponent("m.sqlite").path))
        configuration.tls.regenerateDevelopmentCertificate = regenerate
        let server = try await FIDOServerApplication.start(configuration: configuration)
        try await server.stop()
        return server.certificatePEM
    }

    func testARestartedServerPresentsTheSameTrustAnchor() async throws {
        let first = try await trustAnchor()
        let second = try await trustAnchor()
        XCTAssertEqual(first, second)
        let key = directory.appendingPathComponent("m.sqlite-development-tls.key").path
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o077, 0, "the kept private key is readable by others")
    }

    func testRegenerateMakesANewTrustAnchorThatIsThenKept() async throws {
        let first = try await trustAnchor()
        let regenerated = try await trustAnchor(regenerate: true)
        XCTAssertNotEqual(first, regenerated)
        let after = try await trustAnchor()
        XCTAssertEqual(after, regenerated)
    }

    /// `mauth server --certificate-host 192.168.1.20`: a phone on the LAN reaches the Mac by an address the
    /// certificate names, besides localhost and the loopback addresses; naming another set replaces the kept one.
    func testTheCertificateNamesTheFurtherHostsAskedFor() async throws {
        var configuration = ServerConfiguration(
            host: "0.0.0.0", port: 0, facets: [testFacet], database: .sqlite(path: directory.appendingPathComponent("m.sqlite").path))
        configuration.tls.developmentCertificateHosts = ["192.168.1.20", "mac.example"]
        let server = try await FIDOServerApplication.start(configuration: configuration)
        try await server.stop()
        // The kept file holds the leaf, then the trust anchor.
        let kept = try String(contentsOfFile: directory.appendingPathComponent("m.sqlite-development-tls.pem").path, encoding: .utf8)
        let leaf = try Certificate(derEncoded: try XCTUnwrap(try PEMDocument.parseMultiple(pemString: kept).first).derBytes)
        let names = try XCTUnwrap(try leaf.extensions.subjectAlternativeNames)
        XCTAssertTrue(names.contains(.ipAddress(ASN1OctetString(contentBytes: [192, 168, 1, 20]))), "\(names)")
        XCTAssertTrue(names.contains(.dnsName("mac.example")), "\(names)")
        XCTAssertTrue(names.contains(.dnsName("localhost")), "\(names)")
        XCTAssertTrue(names.contains(.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))), "\(names)")
        let fewer = try await trustAnchor(host: "0.0.0.0")
        XCTAssertNotEqual(fewer, server.certificatePEM, "a certificate for other hosts is replaced")
    }

    func testAFurtherHostThatIsNoNameStopsTheStart() async throws {
        var configuration = ServerConfiguration(
            port: 0, facets: [testFacet], database: .sqlite(path: directory.appendingPathComponent("m.sqlite").path))
        configuration.tls.developmentCertificateHosts = ["*.example"]
        do {
            let server = try await FIDOServerApplication.start(configuration: configuration)
            try await server.stop()
            XCTFail("a wildcard became a development certificate's name")
        } catch {
            XCTAssertTrue("\(error)".contains("development certificate host \"*.example\" is not a DNS name or an IP address"), "\(error)")
        }
    }

    func testHostNamesAreAddressesOrDNSNames() {
        for name in ["192.168.1.20", "::1", "fe80::1", "mac.local", "my-mac.example", "localhost"] {
            XCTAssertTrue(DevelopmentCertificate.isHostName(name), name)
        }
        for name in ["", "*.example", "-mac.example", "mac-.example", "a..b", "mac example", "mac_1.example", "mac.example.", "192.168.1.20:8443"] {
            XCTAssertFalse(DevelopmentCertificate.isHostName(name), name)
        }
    }

    func testAKeptCertificateForOtherHostsIsReplaced() async throws {
        let first = try await trustAnchor(host: "127.0.0.1")
        let other = try await trustAnchor(host: "0.0.0.0")
        XCTAssertNotEqual(first, other)
    }

    func testAKeptCertificateThatExpiresWithinADayIsReplaced() throws {
        let base = directory.appendingPathComponent("x").path
        var notes: [String] = []
        let now = Date()
        let first = try DevelopmentCertificate.kept(at: base, hosts: ["localhost"], regenerate: false, now: now) { notes.append($0) }
        let reused = try DevelopmentCertificate.kept(at: base, hosts: ["localhost"], regenerate: false, now: now.addingTimeInterval(28 * 24 * 3600)) {
            notes.append($0)
        }
        XCTAssertEqual(reused.trustAnchorPEM, first.trustAnchorPEM)
        let replaced = try DevelopmentCertificate.kept(
            at: base, hosts: ["localhost"], regenerate: false, now: now.addingTimeInterval(29.5 * 24 * 3600)
        ) { notes.append($0) }
        XCTAssertNotEqual(replaced.trustAnchorPEM, first.trustAnchorPEM)
        XCTAssertEqual(notes.count, 2)
        XCTAssertTrue(notes.last?.contains("expires within a day") ?? false, "\(notes)")
    }

    func testUnreadableKeptFilesAreReplacedWithAReason() throws {
        let base = directory.appendingPathComponent("y").path
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: base + ".pem"))
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: base + ".key"))
        var notes: [String] = []
        let made = try DevelopmentCertificate.kept(at: base, hosts: ["localhost"], regenerate: false) { notes.append($0) }
        XCTAssertTrue(notes.first?.contains("do not parse") ?? false, "\(notes)")
        let again = try DevelopmentCertificate.kept(at: base, hosts: ["localhost"], regenerate: false) { notes.append($0) }
        XCTAssertEqual(again.trustAnchorPEM, made.trustAnchorPEM)
    }
}
