import FIDOServerTesting
import FIDOSimulation
import Foundation
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The sample configurations in `config/` are what an operator copies: the development one starts a server as it
/// is (but for its port and database, which a test must not share), the production one loads with every path it
/// names beside it; and a configuration file's relative paths are read from its own folder.
final class SampleConfigurationTests: XCTestCase {
    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config")

    func testTheDevelopmentSampleStartsAServer() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-sample-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = try ServerConfiguration.load(path: Self.samples.appendingPathComponent("mauth.development.json").path, environment: [:])
        XCTAssertEqual(
            configuration.database, .sqlite(path: Self.samples.deletingLastPathComponent().appendingPathComponent("mauth-data/mauth.sqlite").path),
            "the sample's database is read from its folder")
        configuration.port = 0
        configuration.database = .sqlite(path: folder.appendingPathComponent("mauth.sqlite").path)
        let server = try await FIDOServerApplication.start(configuration: configuration)
        XCTAssertTrue(server.usesDevelopmentCertificate)
        XCTAssertNotNil(configuration.fido2, "passkeys are on in the development sample")
        // The apps it names are the virtual device's, so `mauth device passkey` works on either profile.
        XCTAssertEqual(configuration.fido2?.apps?.android.first?.certificateSha256Digests, [SoftwarePlayIntegrity.virtualDeviceCertificateDigest])
        XCTAssertEqual(configuration.fido2?.apps?.apple.first?.appID, SoftwareAppAttestAuthority.virtualDeviceAppID)
        try await server.stop()
    }

    func testTheProductionSampleLoadsWithItsPathsBesideIt() throws {
        let configuration = try ServerConfiguration.load(path: Self.samples.appendingPathComponent("mauth.production.json").path, environment: [:])
        let folder = Self.samples.path
        XCTAssertEqual(configuration.tls.certificatePath, folder + "/tls/server-chain.pem")
        XCTAssertEqual(configuration.tls.privateKeyPath, folder + "/tls/server-key.pem")
        XCTAssertEqual(configuration.facetsPath, folder + "/facets.json")
        XCTAssertEqual(configuration.metadataService?.blob, "https://mds3.fidoalliance.org/", "a URL is not a path")
        XCTAssertEqual(configuration.observability.auditLogPath, "/var/log/mauth/audit.log", "an absolute path stays")
        XCTAssertFalse(configuration.authorization.developmentMode)
        XCTAssertEqual(configuration.appAttestation?.android?.decryptionKeyPath, folder + "/play-integrity-decryption.key")
        XCTAssertEqual(configuration.appAttestation?.apple?.environments, ["production"])
        XCTAssertEqual(configuration.policies["default"]?.appAttestation?.registration, .report, "report first, as the checklist says")
        guard case .postgres = configuration.database else { return XCTFail("the production sample shares PostgreSQL") }
    }

    func testMauthConfigNamesTheFileWhenNoOptionDoes() throws {
        let sample = Self.samples.appendingPathComponent("mauth.production.json").path
        let configuration = try ServerConfiguration.load(path: nil, environment: ["MAUTH_CONFIG": sample])
        XCTAssertEqual(configuration.appID, "https://login.bank.example/nevisfido/uaf/1.1/facets")
        let given = try ServerConfiguration.load(
            path: Self.samples.appendingPathComponent("mauth.development.json").path,
            environment: ["MAUTH_CONFIG": sample])
        XCTAssertEqual(given.port, 8443)
        XCTAssertTrue(given.authorization.developmentMode, "--config wins over MAUTH_CONFIG")
    }

    func testRelativePathsAreReadFromTheFilesFolderAndTheEnvironmentsFromTheWorkingDirectory() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-paths-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("mauth.json")
        try Data(
            #"""
            {"facets": ["https://a.example"], "database": "data/mauth.sqlite", "tls": {"certificatePath": "../certs/chain.pem", "privateKeyPath": "key.pem"},
             "authorization": {"jwt": {"publicKeyPaths": ["keys/rp.pem", "/etc/mauth/rp2.pem"], "issuer": "i", "audience": "a"}},
             "tokens": {"signingKeyPath": "./signing.pem"}}
            """#.utf8
        ).write(to: file)
        let configuration = try ServerConfiguration.load(path: file.path, environment: ["MAUTH_TLS_KEY": "relative/key.pem"])
        let base = folder.standardizedFileURL.path
        XCTAssertEqual(configuration.database, .sqlite(path: base + "/data/mauth.sqlite"))
        XCTAssertEqual(configuration.tls.certificatePath, folder.deletingLastPathComponent().standardizedFileURL.path + "/certs/chain.pem")
        XCTAssertEqual(configuration.authorization.jwt?.publicKeyPaths, [base + "/keys/rp.pem", "/etc/mauth/rp2.pem"])
        XCTAssertEqual(configuration.tokens.signingKeyPath, base + "/signing.pem")
        XCTAssertEqual(configuration.tls.privateKeyPath, "relative/key.pem", "the environment's paths stay the working directory's, as a shell's")
    }
}
