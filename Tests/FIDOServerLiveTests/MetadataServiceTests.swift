import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NevisProtocol
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
        var entries = [
            TestMetadataService.entry(
                aaid: Self.testAuthenticator, statement: TestMetadataService.pinStatement(aaid: Self.testAuthenticator),
                reports: revoked.contains(Self.testAuthenticator) ? [("FIDO_CERTIFIED", "2025-01-01"), ("REVOKED", nil)] : [("FIDO_CERTIFIED", nil)])
        ]
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
            var own = SoftwareAuthenticator()
            own.aaid = Self.testAuthenticator
            let registered = try await self.register(loopback, own)
            XCTAssertEqual(registered, 1200)
        }
    }

    func testARevocationWrittenWhileTheServerRunsStopsAuthentication() async throws {
        try Data(try blob(number: 1).utf8).write(to: URL(fileURLWithPath: blobPath))
        try await LoopbackServer.with(configuration(blob: blobPath)) { loopback in
            var authenticator = SoftwareAuthenticator()
            authenticator.aaid = Self.testAuthenticator
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

    // MARK: Passkeys, and a server without its BLOB

    static let fido2Model = "0132d110-bf4e-4208-a403-ab4f5f12efe5"

    /// A BLOB with the FIDO2 model's entry, its reports as given (status, effective date).
    func fido2BLOB(number: Int, reports: [(String, String?)]) throws -> String {
        let list = reports.map { #"{"status":"\#($0.0)""# + ($0.1.map { #","effectiveDate":"\#($0)""# } ?? "") + "}" }.joined(separator: ",")
        let entry =
            #"{"aaguid":"\#(Self.fido2Model)","metadataStatement":{"aaguid":"\#(Self.fido2Model)","description":"A FIDO2 key"},"statusReports":[\#(list)]}"#
        return try service.blob(number: number, nextUpdate: TestMetadataService.day(30), entries: [entry])
    }

    func passkeyConfiguration(blob: String) -> ServerConfiguration {
        var configuration = PasskeyLiveTests.configuration()
        configuration.metadataService = .init(blob: blob, rootCertificatesPath: rootPath)
        return configuration
    }

    /// Before, a passkey sign-in never looked at the model's status: a model revoked after registration kept signing
    /// in. Now the newest BLOB's status refuses it, with the reason in the audit trail; a revocation a newer report
    /// superseded does not.
    func testAPasskeyModelRevokedAfterRegistrationSignsNoOneIn() async throws {
        try Data(try fido2BLOB(number: 1, reports: [("FIDO_CERTIFIED", "2024-01-01")]).utf8).write(to: URL(fileURLWithPath: blobPath))
        try await LoopbackServer.with(passkeyConfiguration(blob: blobPath)) { loopback in
            var key = SoftwarePasskeyAuthenticator(
                origin: PasskeyLiveTests.origin, aaguid: withUnsafeBytes(of: try XCTUnwrap(UUID(uuidString: Self.fido2Model)).uuid) { Array($0) })
            let registered = try await loopback.registerPasskey(&key, username: "alice")
            XCTAssertEqual(registered.status, 200, String(decoding: registered.body, as: UTF8.self))
            let before = try await loopback.signInWithPasskey(&key, username: "alice")
            XCTAssertEqual(before.status, 200)
            // Revoked, listed before an older certification: the date decides, not the order.
            try Data(try self.fido2BLOB(number: 2, reports: [("REVOKED", "2025-06-01"), ("FIDO_CERTIFIED", "2024-01-01")]).utf8)
                .write(to: URL(fileURLWithPath: self.blobPath))
            var answer: TestAnswer?
            // Polled slowly: each try is an anonymous audit event, and the address's budget (60 a minute) must keep
            // room for the refusal this test reads.
            let refused = try await eventually(within: .seconds(10), every: .milliseconds(500)) {
                answer = try await loopback.signInWithPasskey(&key, username: "alice")
                return answer?.status == 400
            }
            XCTAssertTrue(refused, "the revocation never took effect")
            XCTAssertEqual(
                try fido2Response(try XCTUnwrap(answer)).errorMessage, "the FIDO Metadata Service reports this authenticator model REVOKED")
            let stores = loopback.server.stores
            let audited = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
                try await stores.audit.events(username: "alice", limit: 20).contains {
                    $0.detail.contains("reports model \(Self.fido2Model) REVOKED")
                }
            }
            XCTAssertTrue(audited, "no audit reason")
            // Certified again after the revocation: she signs in again.
            try Data(try self.fido2BLOB(number: 3, reports: [("REVOKED", "2025-06-01"), ("FIDO_CERTIFIED", "2025-09-01")]).utf8)
                .write(to: URL(fileURLWithPath: self.blobPath))
            let signsInAgain = try await eventually(within: .seconds(10), every: .milliseconds(500)) {
                try await loopback.signInWithPasskey(&key, username: "alice").status == 200
            }
            XCTAssertTrue(signsInAgain, "a superseded revocation still refused")
        }
    }

    /// The server starts without its BLOB, serves (a UAF registration on the local statements), says on
    /// `/health/ready` that metadata is unavailable, and takes the BLOB when it appears.
    func testTheServerStartsWithoutItsBLOBAndSaysSoOnReady() async throws {
        try await LoopbackServer.with(configuration(blob: blobPath)) { loopback in
            let ready = try await loopback.exchange(.GET, "/health/ready", body: nil)
            XCTAssertEqual(ready.status, 200)
            XCTAssertTrue(
                String(decoding: ready.body, as: UTF8.self).contains(#""metadata":"UNAVAILABLE""#), String(decoding: ready.body, as: UTF8.self))
            let registered = try await self.register(loopback, SoftwareAuthenticator())
            XCTAssertEqual(registered, 1200)
            try Data(try self.blob(number: 1).utf8).write(to: URL(fileURLWithPath: self.blobPath))
            let loaded = try await eventually {
                String(decoding: try await loopback.exchange(.GET, "/health/ready", body: nil).body, as: UTF8.self).contains(
                    #""metadata":"UP (BLOB no 1)""#)
            }
            XCTAssertTrue(loaded, "the BLOB written later was never read")
        }
    }

    /// With `cachePath`, a BLOB fetched from the URL is kept on disk; a server started while the service is down
    /// starts with it in force.
    func testAServerStartedWhileTheServiceIsDownUsesTheCachedBLOB() async throws {
        let cache = directory.appendingPathComponent("cache/blob.jwt").path
        try FileManager.default.createDirectory(atPath: (cache as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let host = try await TestHTTPSHost.start(directory: directory, path: "/blob.jwt", body: try blob(number: 4))
        var configuration = configuration(blob: host.url, trusting: host.trustedCertificatesPath)
        configuration.metadataService?.cachePath = cache
        do {
            try await LoopbackServer.with(configuration) { loopback in
                let ready = String(decoding: try await loopback.exchange(.GET, "/health/ready", body: nil).body, as: UTF8.self)
                XCTAssertTrue(ready.contains(#""metadata":"UP (BLOB no 4)""#), ready)
            }
        } catch {
            try? await host.stop()
            throw error
        }
        try await host.stop()
        XCTAssertTrue(FileManager.default.fileExists(atPath: cache), "nothing was cached")
        XCTAssertFalse(FileManager.default.fileExists(atPath: cache + ".tmp"))
        try await LoopbackServer.with(configuration) { loopback in
            let ready = String(decoding: try await loopback.exchange(.GET, "/health/ready", body: nil).body, as: UTF8.self)
            XCTAssertTrue(ready.contains(#""metadata":"UP (BLOB no 4)""#), "the cached BLOB is not in force: \(ready)")
            var authenticator = SoftwareAuthenticator()
            authenticator.aaid = Self.testAuthenticator
            let registered = try await self.register(loopback, authenticator)
            XCTAssertEqual(registered, 1200, "the cached BLOB's statement serves")
        }
    }

    func testABLOBFromAnHTTPSURLIsFetchedAndRefreshedOnSchedule() async throws {
        let host = try await TestHTTPSHost.start(directory: directory, path: "/blob.jwt", body: try blob(number: 1))
        do {
            var configuration = configuration(blob: host.url, trusting: host.trustedCertificatesPath)
            configuration.metadataService?.refreshSeconds = 60
            try await LoopbackServer.with(configuration) { loopback in
                var authenticator = SoftwareAuthenticator()
                authenticator.aaid = Self.testAuthenticator
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
            try? await host.stop()
            throw error
        }
        try await host.stop()
    }
}
