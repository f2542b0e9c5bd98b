import FIDOServerTesting
import Foundation
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Every start-up error names the file, port or setting and the reason, before anything says "listening".
final class StartupErrorTests: XCTestCase {
    static func startError(_ configuration: ServerConfiguration) async -> String? {
        do {
            let server = try await FIDOServerApplication.start(configuration: configuration)
            try? await server.stop()
            return nil
        } catch {
            return "\(error)"
        }
    }

    func testAMissingJWKSFileIsNamedWithItsSetting() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.authorization.jwt = .init(jwksPath: "/nonexistent/jwks.json", issuer: "i", audience: "a")
        let error = await Self.startError(configuration)
        XCTAssertEqual(error, "cannot read authorization.jwt.jwksPath /nonexistent/jwks.json: no such file")
    }

    func testACertificateFileThatIsNotPEMIsNamedWithItsSetting() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-notpem-\(UUID().uuidString).pem").path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = LoopbackServer.configuration()
        configuration.tls = .init(certificatePath: path, privateKeyPath: path)
        let refusal = await Self.startError(configuration)
        let error = try XCTUnwrap(refusal)
        XCTAssertEqual(
            error, "invalid configuration: tls.certificatePath \(path) is not a PEM certificate chain (BEGIN CERTIFICATE blocks, the server's first)")
    }

    func testACertificateNamedAsTheKeyIsNamedInWords() async throws {
        let development = try DevelopmentCertificate.generate()
        let (folder, path) = try Self.folder(with: "server.pem", contents: Data(development.certificatePEM.utf8))
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = LoopbackServer.configuration()
        configuration.tls = .init(certificatePath: path, privateKeyPath: path)
        let error = await Self.startError(configuration)
        XCTAssertEqual(error, "invalid configuration: tls.privateKeyPath \(path) holds a certificate, not a private key: name the key's PEM file")
    }

    func testAKeyFileThatIsNotPEMSaysWhatItShouldHold() async throws {
        let development = try DevelopmentCertificate.generate()
        let (folder, certificate) = try Self.folder(with: "server.pem", contents: Data(development.certificatePEM.utf8))
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = folder.appendingPathComponent("server.key").path
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: key))
        var configuration = LoopbackServer.configuration()
        configuration.tls = .init(certificatePath: certificate, privateKeyPath: key)
        let error = await Self.startError(configuration)
        XCTAssertEqual(
            error, "invalid configuration: tls.privateKeyPath \(key) is not a PEM private key (a BEGIN PRIVATE KEY or BEGIN EC PRIVATE KEY block)")
    }

    /// A folder with one file in it; removed afterwards by the caller.
    static func folder(with name: String, contents: Data) throws -> (folder: URL, file: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-startup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name)
        try contents.write(to: file)
        return (folder, file.path)
    }

    func testAFileThatIsNotADatabaseIsRefusedBeforeAnythingIsWritten() async throws {
        let (folder, path) = try Self.folder(with: "notes.sqlite", contents: Data("these are my notes, not a database\n".utf8))
        defer { try? FileManager.default.removeItem(at: folder) }
        let error = await Self.startError(LoopbackServer.configuration(database: .sqlite(path: path)))
        XCTAssertEqual(
            error,
            "invalid configuration: database \(path): not an SQLite database (another kind of file): name the server's database file, or a new path")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["notes.sqlite"], "nothing is written beside it")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), Data("these are my notes, not a database\n".utf8))
    }

    func testADatabaseFolderAFileStandsInIsNamed() async throws {
        let (folder, file) = try Self.folder(with: "mauth-data", contents: Data("a file, not a folder".utf8))
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = file + "/mauth.sqlite"
        let error = await Self.startError(LoopbackServer.configuration(database: .sqlite(path: path)))
        XCTAssertEqual(error, "invalid configuration: database \(path): cannot make its folder \(file): a file of that name is in the way")
    }

    func testADamagedDatabaseIsNamedWithItsPath() async throws {
        let damaged = Data("SQLite format 3\0".utf8) + Data(repeating: 0xA5, count: 4096)
        let (folder, path) = try Self.folder(with: "mauth.sqlite", contents: damaged)
        defer { try? FileManager.default.removeItem(at: folder) }
        let refusal = await Self.startError(LoopbackServer.configuration(database: .sqlite(path: path)))
        let error = try XCTUnwrap(refusal)
        XCTAssertTrue(error.hasPrefix("invalid configuration: database \(path): "), error)
        XCTAssertFalse(error.contains("SQLite error"), "the reason in words: \(error)")
        XCTAssertTrue(
            error.hasSuffix(": the database file is damaged (it starts as SQLite, but its schema cannot be read): restore it from a backup"), error)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: folder.path), ["mauth.sqlite"],
            "no development certificate written beside a damaged database")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), damaged, "the damaged file is left as it was")
    }

    func testATakenPortIsNamedInTheStartError() async throws {
        let (folder, _) = try Self.folder(with: "keep", contents: Data())
        defer { try? FileManager.default.removeItem(at: folder) }
        try await LoopbackServer.with { loopback in
            var configuration = LoopbackServer.configuration(database: .sqlite(path: folder.appendingPathComponent("mauth.sqlite").path))
            configuration.port = loopback.server.port
            let refusal = await Self.startError(configuration)
            let error = try XCTUnwrap(refusal)
            XCTAssertTrue(error.contains("cannot listen on 127.0.0.1:\(loopback.server.port)"), error)
            XCTAssertTrue(error.hasSuffix(": the port is already in use by another program: stop it, or choose another port"), error)
            XCTAssertFalse(error.contains("errno") || error.contains("descriptor"), error)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["keep"], "no database, no certificate written")
        }
    }
}
