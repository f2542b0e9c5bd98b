import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import TestSupport
import UAF
import XCTest
@testable import FIDOServer
@testable import FIDOServerCore

/// A server on loopback with a FIDO Metadata Service BLOB the test signed itself: a revoked authenticator registers
/// no key (1493); a revocation that arrives while the server runs (the file changes, or the URL serves a newer
/// BLOB) stops authentication with keys already registered; an older BLOB served again changes nothing.
final class MetadataServiceTests: XCTestCase {
    var directory: URL!
    let service = try! TestMetadataService()
    var blobPath: String { directory.appendingPathComponent("blob.jwt").path }
    var rootPath: String { directory.appendingPathComponent("mds-root.pem").path }

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-mds-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(try service.rootPEM.utf8).write(to: URL(fileURLWithPath: rootPath))
    }

    override func tearDown() async throws { try? FileManager.default.removeItem(at: directory) }

    static let testAuthenticator = "ABCD#0002"

    func blob(number: Int, revoking revoked: [String] = []) throws -> String {
        var entries = [TestMetadataService.entry(aaid: Self.testAuthenticator, statement: TestMetadataService.pinStatement(aaid: Self.testAuthenticator),
                                                 reports: revoked.contains(Self.testAuthenticator) ? [("FIDO_CERTIFIED", "2025-01-01"), ("REVOKED", nil)] : [("FIDO_CERTIFIED", nil)])]
        if revoked.contains("F1D0#1001") { entries.append(TestMetadataService.entry(aaid: "F1D0#1001", reports: [("REVOKED", nil)])) }
        entries.append(TestMetadataService.fido2Entry)
        return try service.blob(number: number, nextUpdate: TestMetadataService.day(30), entries: entries)
    }

    func configuration(blob: String, trusting: String? = nil) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        configuration.metadataService = .init(blob: blob, rootCertificatesPath: rootPath, trustedCertificatesPath: trusting)
        return configuration
    }

    func register(_ loopback: LoopbackServer, _ authenticator: SoftwareAuthenticator, username: String = "alice") async throws -> Int {
        let request = try await loopback.registrationRequest(username: username)
        return try await loopback.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.appID)).statusCode
    }

    func authenticate(_ loopback: LoopbackServer, _ authenticator: inout SoftwareAuthenticator, username: String = "alice") async throws -> Int {
        let (_, request) = try await loopback.authenticationRequest(username: username)
        let response = try authenticator.authenticate(try XCTUnwrap(request), serverAppID: loopback.appID)
        return try await loopback.send("/nevisfido/uaf/1.1/authentication", response).statusCode
    }

    func testARevokedAuthenticatorRegistersNoKeyAndTheBLOBsOwnAuthenticatorDoes() async throws {
        try Data(try blob(number: 1, revoking: ["F1D0#1001"]).utf8).write(to: URL(fileURLWithPath: blobPath))
        try await LoopbackServer.with(configuration(blob: blobPath)) { loopback in
            // F1D0#1001's statement is the local Nevis default; the BLOB's report revokes it all the same.
            let revoked = try await self.register(loopback, SoftwareAuthenticator())
            XCTAssertEqual(revoked, 1493)
            var own = SoftwareAuthenticator(); own.aaid = Self.testAuthenticator
            let registered = try await self.register(loopback, own)
            XCTAssertEqual(registered, 1200)
        }
    }

    func testARevocationWrittenWhileTheServerRunsStopsAuthentication() async throws {
        try Data(try blob(number: 1).utf8).write(to: URL(fileURLWithPath: blobPath))
        try await LoopbackServer.with(configuration(blob: blobPath)) { loopback in
            var authenticator = SoftwareAuthenticator(); authenticator.aaid = Self.testAuthenticator
            let registered = try await self.register(loopback, authenticator)
            XCTAssertEqual(registered, 1200)
            let before = try await self.authenticate(loopback, &authenticator)
            XCTAssertEqual(before, 1200)

            try Data(try self.blob(number: 2, revoking: [Self.testAuthenticator]).utf8).write(to: URL(fileURLWithPath: self.blobPath))
            let reloaded = try await eventually {
                try await self.authenticate(loopback, &authenticator) == 1493
            }
            XCTAssertTrue(reloaded, "the revocation never took effect")

            // The previous BLOB written back (a rollback) is ignored: the revocation stands.
            try Data(try self.blob(number: 1).utf8).write(to: URL(fileURLWithPath: self.blobPath))
            // What an operator's alerting reads tells when the server has read it: one reload that was not newer.
            var metrics = ""
            let readBack = try await eventually {
                metrics = String(decoding: try await loopback.exchange(.GET, "/metrics", body: nil).body, as: UTF8.self)
                return metrics.contains(#"mauth_metadata_reloads_total{outcome="not_newer"} 1"#)
            }
            XCTAssertTrue(readBack, "the rolled-back file was never read: \(metrics)")
            let after = try await self.authenticate(loopback, &authenticator)
            XCTAssertEqual(after, 1493)
            // The BLOB in force and each reload's outcome.
            XCTAssertTrue(metrics.contains("mauth_metadata_blob_number 2"), metrics)
            XCTAssertTrue(metrics.contains(#"mauth_metadata_reloads_total{outcome="installed"} 2"#), metrics)
            XCTAssertTrue(metrics.contains(#"mauth_metadata_reloads_total{outcome="not_newer"} 1"#), metrics)
        }
    }

    func testABLOBFromAnHTTPSURLIsFetchedAndRefreshedOnSchedule() async throws {
        let host = try await TestHTTPSHost.start(directory: directory, path: "/blob.jwt", body: try blob(number: 1))
        do {
            var configuration = configuration(blob: host.url, trusting: host.trustedCertificatesPath)
            configuration.metadataService?.refreshSeconds = 60
            try await LoopbackServer.with(configuration) { loopback in
                var authenticator = SoftwareAuthenticator(); authenticator.aaid = Self.testAuthenticator
                let registered = try await self.register(loopback, authenticator)
                XCTAssertEqual(registered, 1200)
                XCTAssertEqual(host.fetches, 1)
                host.serve(try self.blob(number: 2, revoking: [Self.testAuthenticator]))
                // Not due yet: nothing is fetched again while the server's clock stands (watched for 3 s), and the
                // authenticator still works.
                let fetchedEarly = try await eventually(within: .seconds(3)) { host.fetches > 1 }
                XCTAssertFalse(fetchedEarly, "the BLOB was fetched again before it was due")
                let notYet = try await self.authenticate(loopback, &authenticator)
                XCTAssertEqual(notYet, 1200)
                XCTAssertEqual(host.fetches, 1)
                // The next fetch is due refreshSeconds after the last, on the server's clock: move it instead of waiting.
                loopback.clock.advance(61)
                let reloaded = try await eventually {
                    try await self.authenticate(loopback, &authenticator) == 1493
                }
                XCTAssertTrue(reloaded, "the newer BLOB was never fetched")
                XCTAssertEqual(host.fetches, 2)
            }
        } catch {
            try? await host.stop(); throw error
        }
        try await host.stop()
    }
}
