import Crypto
import FIDOServerTesting
import Foundation
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// `mauth server --check-config`: the production sample, copied where none of its files exist, lists every missing
/// file in one run; with its files in place it checks clean; every rule is reported, not only the first.
final class ConfigurationCheckTests: XCTestCase {
    var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: folder) }

    /// The production sample copied into the test's folder, `change` applied to its JSON object, and loaded.
    func productionSample(_ change: (inout [String: Any]) -> Void = { _ in }) throws -> ServerConfiguration {
        let sample = SampleConfigurationTests.samples.appendingPathComponent("mauth.production.json")
        var object = try XCTUnwrap(try JSONSerialization.jsonObject(with: try Data(contentsOf: sample)) as? [String: Any])
        change(&object)
        let path = folder.appendingPathComponent("mauth.json")
        try JSONSerialization.data(withJSONObject: object).write(to: path)
        return try ServerConfiguration.load(path: path.path, environment: [:])
    }

    func write(_ text: String, _ name: String) throws {
        let url = folder.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    func testTheProductionSampleWithoutItsFilesListsEveryMissingOneInOneRun() async throws {
        let check = await FIDOServerApplication.checkConfiguration(try productionSample())
        let text = check.problems.joined(separator: "\n")
        for setting in [
            "tls.certificatePath", "facets.json", "metadataService.rootCertificatesPath", "appAttestation.android.decryptionKeyPath",
            "appAttestation.android.verificationKeyPath", "observability.auditLogPath",
        ] {
            XCTAssertTrue(text.contains(setting), "\(setting) is not among the problems:\n\(text)")
        }
        XCTAssertEqual(check.problems.count, 6, text)
        XCTAssertEqual(check.notChecked.count, 3, "the database, the BLOB's URL and the JWKS URL: \(check.notChecked)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder.appendingPathComponent("tls").path), "checking writes nothing")
    }

    func testTheProductionSampleChecksCleanOnceItsFilesExist() async throws {
        let development = try DevelopmentCertificate.generate()
        try write(development.certificatePEM, "tls/server-chain.pem")
        try write(development.privateKeyPEM, "tls/server-key.pem")
        try write(#"["ios:bundle-id:com.bank.example.app"]"#, "facets.json")
        try write(development.trustAnchorPEM, "fido-mds-root.pem")
        try write(SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString(), "play-integrity-decryption.key")
        try write(P256.Signing.PrivateKey().publicKey.derRepresentation.base64EncodedString(), "play-integrity-verification.key")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("log"), withIntermediateDirectories: true)
        // The one absolute path of the sample, moved into the test's folder.
        let configuration = try productionSample { object in
            var observability = object["observability"] as? [String: Any] ?? [:]
            observability["auditLogPath"] = self.folder.appendingPathComponent("log/audit.log").path
            object["observability"] = observability
        }
        let check = await FIDOServerApplication.checkConfiguration(configuration)
        XCTAssertEqual(check.problems, [])
    }

    func testEveryBrokenRuleIsReportedNotOnlyTheFirst() throws {
        var configuration = ServerConfiguration()
        configuration.port = 70_000
        configuration.requestLifetimeSeconds = 0
        configuration.acceptedVersions = ["1.3"]
        let problems = configuration.problems()
        XCTAssertEqual(problems.count, 3, "\(problems)")
        XCTAssertThrowsError(try configuration.validate()) { XCTAssertEqual("\($0)", problems.first) }
    }
}
