import FIDOAttestation
import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import Primitives
import TestSupport
import UAF
import X509
import XCTest

@testable import FIDOServerCore

/// The FIDO Metadata Service BLOB: a chain the test built itself verifies, and every way a BLOB can be wrong is
/// refused with the reason: tampered, signed under another root, unsigned, without its chain, past its signing
/// certificate. One unreadable entry costs only its authenticator.
final class MetadataBLOBTests: XCTestCase {
    let service = try! TestMetadataService()

    func roots(_ service: TestMetadataService) throws -> [Certificate] { [try Certificate(pemEncoded: try service.rootPEM)] }

    func verify(_ token: String, by service: TestMetadataService? = nil, now: Date = Date()) async throws(MetadataBLOB.Failure) -> MetadataBLOB {
        let roots = try! self.roots(service ?? self.service)
        return try await MetadataBLOB.verify(Data(token.utf8), roots: roots, now: now)
    }

    func assertRefused(
        _ token: String, by service: TestMetadataService? = nil, now: Date = Date(), file: StaticString = #filePath, line: UInt = #line,
        _ check: (MetadataBLOB.Failure) -> Bool
    ) async {
        do {
            _ = try await verify(token, by: service, now: now)
            XCTFail("the BLOB verified", file: file, line: line)
        } catch {
            XCTAssertTrue(check(error), "\(error)", file: file, line: line)
        }
    }

    func untrusted(_ reason: String) -> (MetadataBLOB.Failure) -> Bool {
        { failure in if case .untrusted(let text) = failure { return text.hasPrefix(reason) } else { return false } }
    }
    func isMalformed(_ failure: MetadataBLOB.Failure) -> Bool { if case .malformed = failure { return true } else { return false } }

    var entries: [String] {
        [
            TestMetadataService.entry(aaid: "ABCD#0002", statement: TestMetadataService.pinStatement(aaid: "ABCD#0002")),
            TestMetadataService.entry(aaid: "F1D0#1001", reports: [("FIDO_CERTIFIED", "2025-01-01"), ("REVOKED", "2026-03-01")]),
            TestMetadataService.fido2Entry,
        ]
    }

    func testABLOBSignedUnderTheConfiguredRootVerifies() async throws {
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries))
        XCTAssertEqual(blob.number, 7)
        XCTAssertEqual(blob.nextUpdate, MetadataBLOB.day("2026-12-01"))
        XCTAssertEqual(blob.statements.map(\.aaid), ["ABCD#0002"])
        XCTAssertEqual(blob.statusReports["F1D0#1001"]?.map(\.status), [.fidoCertified, .revoked])
        XCTAssertEqual(blob.statusReports["F1D0#1001"]?.last?.effectiveDate, MetadataBLOB.day("2026-03-01"))
        XCTAssertEqual(blob.fido2.map { AAGUID.text($0.aaguid) }, ["0132d110-bf4e-4208-a403-ab4f5f12efe5"])
        XCTAssertEqual(blob.fido2.first?.description, "A FIDO2 key")
        XCTAssertEqual(blob.fido2.first?.statusReports.map(\.status), [.fidoCertified])
        XCTAssertEqual(blob.skipped, [])
    }

    func testAFIDO2EntryKeepsItsRootsAndItsReportsEvenWhenItsStatementCannotBeRead() async throws {
        let root = Data([0x30, 0x03, 0x02, 0x01, 0x01]).base64EncodedString()
        let readable =
            #"{"aaguid":"11111111-2222-3333-4444-555555555555","metadataStatement":{"aaguid":"11111111-2222-3333-4444-555555555555","description":"A key","attestationTypes":["basic_full"],"attestationRootCertificates":["\#(root)","%%"]},"statusReports":[{"status":"FIDO_CERTIFIED"}]}"#
        let unreadable =
            #"{"aaguid":"66666666-2222-3333-4444-555555555555","metadataStatement":{"description":7},"statusReports":[{"status":"REVOKED"}]}"#
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: [readable, unreadable]))
        XCTAssertEqual(blob.fido2.count, 2)
        XCTAssertEqual(blob.fido2[0].attestationTypes, ["basic_full"])
        XCTAssertEqual(blob.fido2[0].attestationRootCertificates, [[0x30, 0x03, 0x02, 0x01, 0x01]])
        XCTAssertEqual(blob.fido2[1].statusReports.map(\.status), [.revoked], "an unreadable statement dropped a revocation")
        XCTAssertEqual(blob.fido2[1].attestationRootCertificates, [])
        XCTAssertEqual(blob.skipped.count, 2)
        XCTAssertTrue(
            blob.skipped[0].hasPrefix("11111111-2222-3333-4444-555555555555: attestationRootCertificates[1] is not base64"), blob.skipped[0])
        XCTAssertTrue(blob.skipped[1].hasPrefix("66666666-2222-3333-4444-555555555555: its statement:"), blob.skipped[1])
        let store = MetadataStore(uaf: try UAFMetadata([]), fido2: blob.fido2)
        XCTAssertEqual(
            store.fido2Metadata(aaguid: try XCTUnwrap(AAGUID.bytes("66666666-2222-3333-4444-555555555555")))?.statusReports.map(\.status), [.revoked])
        XCTAssertNil(store.fido2Metadata(aaguid: AAGUID.zero))
    }

    /// A U2F entry names no AAGUID: it is kept by its attestation certificate key identifiers (MDS3 §3.2), in either case.
    func testAU2FEntryIsFoundByItsAttestationCertificateKeyIdentifier() async throws {
        let key = "923881FE2F214EE465484371AEB72E97F5A58E0A"
        let u2f =
            #"{"attestationCertificateKeyIdentifiers":["\#(key)"],"metadataStatement":{"attestationCertificateKeyIdentifiers":["\#(key)"],"description":"A U2F key","attestationTypes":["basic_full"],"attestationRootCertificates":[]},"statusReports":[{"status":"FIDO_CERTIFIED"}]}"#
        let broken = #"{"attestationCertificateKeyIdentifiers":["not hex"],"statusReports":[]}"#
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: [u2f, broken]))
        XCTAssertEqual(blob.fido2.count, 1)
        XCTAssertEqual(blob.skipped, ["not hex: attestationCertificateKeyIdentifiers are not 40 hex digits each"])
        let store = MetadataStore(uaf: try UAFMetadata([]), fido2: blob.fido2)
        XCTAssertEqual(store.fido2Metadata(attestationCertificateKeyIdentifier: key.lowercased())?.description, "A U2F key")
        XCTAssertEqual(store.fido2Metadata(attestationCertificateKeyIdentifier: key)?.statusReports.map(\.status), [.fidoCertified])
        XCTAssertNil(store.fido2Metadata(aaguid: AAGUID.zero), "a U2F entry is no model with the zero AAGUID")
    }

    func testAnRS256BLOBVerifies() async throws {
        let rsa = try TestMetadataService(algorithm: .rs256)
        let blob = try await verify(try rsa.blob(number: 1, nextUpdate: "2026-12-01", entries: entries), by: rsa)
        XCTAssertEqual(blob.statements.map(\.aaid), ["ABCD#0002"])
    }

    func testATamperedPayloadIsUntrusted() async throws {
        let token = try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries)
        var parts = token.split(separator: ".").map(String.init)
        let payload = String(decoding: try XCTUnwrap(Base64URL.decode(parts[1])), as: UTF8.self)
        parts[1] = Base64URL.encode(Data(payload.replacingOccurrences(of: "REVOKED", with: "FIDO_CERTIFIED").utf8))
        await assertRefused(parts.joined(separator: "."), untrusted("the signature is not the signing certificate's"))
    }

    func testABLOBSignedUnderAnotherRootIsUntrusted() async throws {
        let other = try TestMetadataService(rootName: "Someone Else's Root")
        await assertRefused(
            try other.blob(number: 7, nextUpdate: "2026-12-01", entries: entries), untrusted("its x5c chain does not lead to a configured root"))
    }

    func testAnUnsignedBLOBIsRefused() async throws {
        let none = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let token = try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries)
        let parts = token.split(separator: ".").map(String.init)
        await assertRefused(none + "." + parts[1] + ".", untrusted("its header names no signature algorithm"))
    }

    func testABLOBWithoutItsCertificateChainIsUntrusted() async throws {
        await assertRefused(
            try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries, header: #"{"alg":"ES256","typ":"JWT"}"#),
            untrusted("its header carries no x5c certificate chain"))
    }

    func testABLOBPastItsSigningCertificateIsUntrusted() async throws {
        let expiring = try TestMetadataService(signerNotAfter: Date().addingTimeInterval(600))
        let token = try expiring.blob(number: 7, nextUpdate: "2026-12-01", entries: entries)
        _ = try await verify(token, by: expiring)
        await assertRefused(token, by: expiring, now: Date().addingTimeInterval(3600), untrusted("its x5c chain does not lead to a configured root"))
    }

    func testAWrongSignatureIsUntrusted() async throws {
        let token = try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries)
        let forged = try service.blob(
            number: 7, nextUpdate: "2026-12-01", entries: entries, signature: String(token.split(separator: ".")[2].reversed()))
        await assertRefused(forged, untrusted("the signature is not the signing certificate's"))
    }

    func testTextThatIsNotAJWSIsMalformed() async {
        await assertRefused("not a BLOB", isMalformed)
    }

    func testANextUpdateThatIsNotADateIsMalformed() async throws {
        await assertRefused(try service.blob(number: 7, nextUpdate: "2026-02-30", entries: entries), isMalformed)
        await assertRefused(try service.blob(number: 7, nextUpdate: "December", entries: entries), isMalformed)
    }

    func testAStatementWithAnUnknownAlgorithmCostsOnlyItsAuthenticator() async throws {
        let unknown = TestMetadataService.entry(
            aaid: "ABCD#0003", statement: TestMetadataService.pinStatement(aaid: "ABCD#0003", algorithm: "future_pq_sig"))
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries + [unknown]))
        XCTAssertEqual(blob.statements.map(\.aaid), ["ABCD#0002"])
        XCTAssertEqual(blob.skipped.count, 1)
        XCTAssertTrue(blob.skipped[0].contains("future_pq_sig"), blob.skipped[0])
        // Its status reports still count: a revocation is never lost with the statement.
        XCTAssertEqual(blob.statusReports["ABCD#0003"]?.map(\.status), [.fidoCertified])
    }

    func testARevocationWithAnUnreadableDateIsKeptInForceFromTheStart() async throws {
        let broken = TestMetadataService.entry(
            aaid: "ABCD#0004", statement: TestMetadataService.pinStatement(aaid: "ABCD#0004"),
            reports: [("FIDO_CERTIFIED", "2025-01-01"), ("REVOKED", "yesterday")])
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries + [broken]))
        let reports = try XCTUnwrap(blob.statusReports["ABCD#0004"], "the entry's reports were dropped")
        XCTAssertEqual(reports.map(\.status), [.fidoCertified, .revoked])
        XCTAssertNil(reports[1].effectiveDate)
        XCTAssertTrue(reports[1].isInForce(at: Date(timeIntervalSince1970: 0)))
        XCTAssertEqual(blob.skipped, [#"ABCD#0004: REVOKED: effectiveDate "yesterday" is not a YYYY-MM-DD date; in force from the start"#])
    }

    func testAReportWithoutAReadableStatusIsLeftOutAndTheOthersKept() async throws {
        let entry =
            #"{"aaid":"ABCD#0007","statusReports":[{"status":7},{"status":"REVOKED","certificate":"%%"}],"timeOfLastStatusChange":"2026-01-01"}"#
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: entries + [entry]))
        let reports = try XCTUnwrap(blob.statusReports["ABCD#0007"])
        XCTAssertEqual(reports.map(\.status), [.revoked])
        XCTAssertNil(reports[0].certificate, "a certificate that cannot be read makes the revocation cover every key")
        XCTAssertEqual(blob.skipped.count, 3, "\(blob.skipped)")
    }

    func testAStatementUnderAnotherEntrysAAIDIsSkipped() async throws {
        let mismatched = TestMetadataService.entry(aaid: "ABCD#0005", statement: TestMetadataService.pinStatement(aaid: "ABCD#0006"))
        let blob = try await verify(try service.blob(number: 7, nextUpdate: "2026-12-01", entries: [mismatched]))
        XCTAssertEqual(blob.statements, [])
        XCTAssertEqual(blob.skipped, ["ABCD#0005: its statement describes ABCD#0006"])
    }

    func testALateBLOBIsStaleOnlyAfterItsNextUpdateDay() throws {
        let blob = MetadataBLOB(
            number: 1, nextUpdate: try XCTUnwrap(MetadataBLOB.day("2026-12-01")), statements: [], statusReports: [:], fido2: [], skipped: [])
        XCTAssertFalse(blob.isStale(at: try XCTUnwrap(MetadataBLOB.day("2026-12-01")).addingTimeInterval(86399)))
        XCTAssertTrue(blob.isStale(at: try XCTUnwrap(MetadataBLOB.day("2026-12-02"))))
    }

    func testAURLIsFetchedAgainAtNextUpdateAndHourlyOnceItHasPassed() throws {
        let now = Date()
        XCTAssertEqual(MetadataWatcher.nextFetch(after: now, nextUpdate: now.addingTimeInterval(30 * 86400), refreshSeconds: 86400), 86400)
        XCTAssertEqual(MetadataWatcher.nextFetch(after: now, nextUpdate: now.addingTimeInterval(600), refreshSeconds: 86400), 600)
        XCTAssertEqual(MetadataWatcher.nextFetch(after: now, nextUpdate: now.addingTimeInterval(-5), refreshSeconds: 86400), 3600)
        XCTAssertEqual(MetadataWatcher.nextFetch(after: now, nextUpdate: now.addingTimeInterval(-5), refreshSeconds: 600), 600)
    }
}

/// The metadata in force with a Metadata Service: what the server starts with, what a reload installs, and what it
/// keeps when the new BLOB is worse.
final class MetadataSourceTests: XCTestCase {
    var directory: URL!
    let service = try! TestMetadataService()
    let logger = Logger(label: "test")

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-mds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws { try? FileManager.default.removeItem(at: directory) }

    var blobPath: String { directory.appendingPathComponent("blob.jwt").path }

    func configuration(requireCurrent: Bool = false, root: TestMetadataService? = nil) throws -> ServerConfiguration {
        let rootPath = directory.appendingPathComponent("root.pem").path
        try Data(try (root ?? service).rootPEM.utf8).write(to: URL(fileURLWithPath: rootPath))
        var configuration = ServerConfiguration()
        configuration.metadataService = .init(blob: blobPath, rootCertificatesPath: rootPath, requireCurrent: requireCurrent)
        return configuration
    }

    func write(number: Int, nextUpdate: String = TestMetadataService.day(30), entries: [String]) throws {
        try Data(try service.blob(number: number, nextUpdate: nextUpdate, entries: entries).utf8).write(to: URL(fileURLWithPath: blobPath))
    }

    func load(_ configuration: ServerConfiguration) async throws -> MetadataSource {
        try await MetadataSource.load(configuration, clock: { Date() }, logger: logger)
    }

    func testTheBLOBsStatementsJoinTheLocalOnesAndItsReportsApplyToBoth() async throws {
        try write(
            number: 3,
            entries: [
                TestMetadataService.entry(aaid: "ABCD#0002", statement: TestMetadataService.pinStatement(aaid: "ABCD#0002")),
                TestMetadataService.entry(aaid: "F1D0#1001", reports: [("REVOKED", nil)]),
            ])
        let source = try await load(try configuration())
        let store = source.store.uaf
        XCTAssertNotNil(store.statement(for: "ABCD#0002"))
        // The Nevis default's statement is kept, and the BLOB's report still refuses it.
        XCTAssertEqual(
            store.statement(for: "F1D0#1001")?.description, try ServerConfiguration().loadMetadata().statement(for: "F1D0#1001")?.description)
        XCTAssertEqual(store.registrationRefusal(aaid: "F1D0#1001", attestationCertificates: [], at: Date())?.status, .revoked)
        XCTAssertEqual(source.blob?.number, 3)
    }

    func testALocalStatementWinsOverTheBLOBsForItsAAID() async throws {
        try write(number: 3, entries: [TestMetadataService.entry(aaid: "F1D0#1001", statement: TestMetadataService.pinStatement(aaid: "F1D0#1001"))])
        let store = try await load(try configuration()).store.uaf
        XCTAssertNotEqual(store.statement(for: "F1D0#1001")?.description, "Test PIN authenticator F1D0#1001")
    }

    func assertDoesNotStart(_ configuration: ServerConfiguration, saying reason: String, file: StaticString = #filePath, line: UInt = #line) async {
        do {
            _ = try await load(configuration)
            XCTFail("started", file: file, line: line)
        } catch {
            XCTAssertTrue(
                (error as? ServerConfiguration.ConfigurationError)?.description.contains(reason) ?? false, "\(error)", file: file, line: line)
        }
    }

    /// A BLOB under another root is as good as none: the server starts on its local statements and says why.
    func testTheServerStartsWithoutABLOBUnderAnotherRootAndSaysWhy() async throws {
        try write(number: 3, entries: [])
        let source = try await load(try configuration(root: try TestMetadataService(rootName: "Other Root")))
        XCTAssertNil(source.blob)
        XCTAssertTrue(source.unavailable?.contains("signature does not verify") ?? false, source.unavailable ?? "")
        XCTAssertNotNil(source.store.uaf.statement(for: "F1D0#1001"), "the local statements serve")
    }

    /// Before, the server did not start without its BLOB; now it does, on its local metadata, and `requireCurrent`
    /// keeps the old refusal for an operator who wants it.
    func testTheServerStartsWithoutItsBLOBUnlessACurrentOneIsRequired() async throws {
        let source = try await load(try configuration())
        XCTAssertNil(source.blob)
        XCTAssertTrue(source.unavailable?.contains("metadataService.blob \(blobPath): no such file") ?? false, source.unavailable ?? "")
        await assertDoesNotStart(try configuration(requireCurrent: true), saying: "metadataService.blob \(blobPath): no such file")
        // The BLOB written later is read by the next reload, and the reason is gone.
        try write(number: 3, entries: [])
        let installed = await source.reload(logger: logger)
        XCTAssertEqual(installed, .installed(3))
        XCTAssertNil(source.unavailable)
    }

    /// A configured revocation list of the intermediate CA (Python's cryptography writes it) that revokes the BLOB's
    /// signing certificate makes the BLOB untrusted; one that revokes another serial number changes nothing.
    func testABLOBWhoseSigningCertificateItsIssuerRevokedIsUntrusted() async throws {
        let script = ExternalTool.repositoryRoot(fromTestFile: #filePath).appendingPathComponent("Tests/Interop/crl_interop.py").path
        if case .skipped(let why) = try ExternalTool.require("python3 with cryptography", probe: ["python3", script, "check"]) { throw XCTSkip(why) }
        try write(number: 3, entries: [])
        let (certificate, key) = try service.intermediatePEM
        let certificatePath = directory.appendingPathComponent("intermediate.pem").path
        let keyPath = directory.appendingPathComponent("intermediate-key.pem").path
        try Data(certificate.utf8).write(to: URL(fileURLWithPath: certificatePath))
        try Data(key.utf8).write(to: URL(fileURLWithPath: keyPath))
        for (serial, revoked) in [("0a0b0c", false), (service.signerSerialHex, true)] {
            let crl = directory.appendingPathComponent("crl-\(serial).pem").path
            let run = try ExternalProgram.run(["python3", script, "write", certificatePath, keyPath, crl, serial])
            XCTAssertEqual(run.status, 0, run.stderr)
            var configuration = try configuration()
            configuration.metadataService?.revocationListsPath = crl
            let source = try await load(configuration)
            if revoked {
                XCTAssertNil(source.blob)
                XCTAssertTrue(
                    source.unavailable?.contains("its issuer's revocation list revokes the signing chain's certificate") ?? false,
                    source.unavailable ?? "")
            } else {
                XCTAssertEqual(source.blob?.number, 3)
            }
        }
    }

    func testALateBLOBIsRefusedOnlyWhereACurrentOneIsRequired() async throws {
        try write(number: 3, nextUpdate: TestMetadataService.day(-2), entries: [])
        let lenient = try await load(try configuration())
        XCTAssertEqual(lenient.blob?.number, 3)
        await assertDoesNotStart(try configuration(requireCurrent: true), saying: "is late")
    }

    func testAReloadInstallsANewerBLOBAndNeverAnOlderOne() async throws {
        try write(number: 3, entries: [TestMetadataService.entry(aaid: "ABCD#0002", statement: TestMetadataService.pinStatement(aaid: "ABCD#0002"))])
        let source = try await load(try configuration())
        try write(
            number: 4,
            entries: [
                TestMetadataService.entry(
                    aaid: "ABCD#0002", statement: TestMetadataService.pinStatement(aaid: "ABCD#0002"),
                    reports: [("REVOKED", nil)])
            ])
        let installed = await source.reload(logger: logger)
        XCTAssertEqual(installed, .installed(4))
        XCTAssertEqual(source.store.uaf.authenticationRefusal(aaid: "ABCD#0002", at: Date())?.status, .revoked)
        // Serving BLOB 3 again (a rollback by whoever controls the transport or the file) does not take the revocation back.
        try write(number: 3, entries: [TestMetadataService.entry(aaid: "ABCD#0002", statement: TestMetadataService.pinStatement(aaid: "ABCD#0002"))])
        let rolledBack = await source.reload(logger: logger)
        XCTAssertEqual(rolledBack, .notNewer(3))
        XCTAssertEqual(source.store.uaf.authenticationRefusal(aaid: "ABCD#0002", at: Date())?.status, .revoked)
    }

    func testABrokenBLOBKeepsTheMetadataInForce() async throws {
        try write(number: 3, entries: [TestMetadataService.entry(aaid: "ABCD#0002", statement: TestMetadataService.pinStatement(aaid: "ABCD#0002"))])
        let source = try await load(try configuration())
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: blobPath))
        guard case .refused = await source.reload(logger: logger) else { return XCTFail("a broken BLOB was installed") }
        XCTAssertNotNil(source.store.uaf.statement(for: "ABCD#0002"))
        XCTAssertEqual(source.blob?.number, 3)
    }

    func testTheConfigurationRefusesAPlainHTTPURL() throws {
        var configuration = ServerConfiguration()
        configuration.metadataService = .init(blob: "http://mds.example/blob.jwt", rootCertificatesPath: "/root.pem")
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual(
                error as? ServerConfiguration.ConfigurationError,
                .invalid("metadataService.blob must be a file path or an https:// URL, not http://mds.example/blob.jwt"))
        }
    }

    func testTheEnvironmentNamesTheBLOBAndItsRoot() throws {
        let configuration = try ServerConfiguration.load(
            path: nil, environment: ["MAUTH_METADATA_BLOB": "/var/mds/blob.jwt", "MAUTH_METADATA_BLOB_ROOT": "/var/mds/root.pem"])
        XCTAssertEqual(configuration.metadataService, .init(blob: "/var/mds/blob.jwt", rootCertificatesPath: "/var/mds/root.pem"))
        XCTAssertThrowsError(try ServerConfiguration.load(path: nil, environment: ["MAUTH_METADATA_BLOB": "/var/mds/blob.jwt"]))
    }
}
