import FIDOServerTesting
import Foundation
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// `${env:NAME}` and `${file:PATH}` in a configuration file: resolved in any string value, whole or inside a longer
/// one, before the settings are read; every unresolvable reference reported at once, by its place, never its value.
final class ConfigurationReferenceTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-references-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    /// Loads `json` as the file `mauth.json` in the test's directory, under `environment`.
    func load(_ json: String, environment: [String: String] = [:]) throws -> ServerConfiguration {
        let path = directory.appendingPathComponent("mauth.json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try ServerConfiguration.load(path: path, environment: environment)
    }

    func refusal(_ json: String, environment: [String: String] = [:]) -> String {
        do {
            _ = try load(json, environment: environment)
            XCTFail("accepted: \(json)")
            return ""
        } catch { return "\(error)" }
    }

    func write(_ text: String, to name: String) throws { try Data(text.utf8).write(to: directory.appendingPathComponent(name)) }

    func testAnEnvironmentReferenceInsideALongerValueIsResolved() throws {
        let configuration = try load(
            #"{"database": "postgres://mauth:${env:PGPASSWORD}@db.example/mauth"}"#, environment: ["PGPASSWORD": "s3cr\"et\\"])
        XCTAssertEqual(configuration.database.text, #"postgres://mauth:s3cr"et\@db.example/mauth"#)
    }

    func testAFileReferenceIsResolvedRelativeToTheConfigurationWithoutItsFinalLineBreak() throws {
        try write("mauth-issuer\n", to: "issuer.txt")
        let configuration = try load(#"{"tokens": {"issuer": "${file:issuer.txt}"}}"#)
        XCTAssertEqual(configuration.tokens.issuer, "mauth-issuer")
    }

    func testAnAbsoluteFileReferenceIsRead() throws {
        try write("https://rp.example\r\n", to: "rp.txt")
        let configuration = try load(#"{"tokens": {"issuer": "${file:\#(directory.appendingPathComponent("rp.txt").path)}"}}"#)
        XCTAssertEqual(configuration.tokens.issuer, "https://rp.example")
    }

    func testADoubledDollarIsALiteralReference() throws {
        let configuration = try load(#"{"tokens": {"issuer": "$${env:NOT_A_REFERENCE}"}}"#)
        XCTAssertEqual(configuration.tokens.issuer, "${env:NOT_A_REFERENCE}")
    }

    func testACommentShowsAReferenceWithoutResolvingIt() throws {
        let configuration = try load(
            #"{"_about": "use ${env:NAME} for secrets", "tokens": {"_issuer": ["${file:x}", {"a": "${env:B}"}], "issuer": "${env:ISSUER}"}}"#,
            environment: ["ISSUER": "https://rp.example"])
        XCTAssertEqual(configuration.tokens.issuer, "https://rp.example")
    }

    func testEveryUnresolvableReferenceIsReportedAtOnceByItsPlaceNotItsValue() throws {
        let text = refusal(
            """
            {"database": "postgres://mauth:${env:PGPASSWORD}@db/mauth",
             "tokens": {"issuer": "${file:missing.txt}", "cookieName": "${vault:secret}"}}
            """, environment: ["OTHER": "hunter2"])
        XCTAssertTrue(text.contains("line 1, column 32: ${env:PGPASSWORD} is not set"), text)
        XCTAssertTrue(text.contains("line 2, column 24: ${file:missing.txt} cannot be read"), text)
        XCTAssertTrue(text.contains("${vault:secret} is neither env:NAME nor file:PATH"), text)
        XCTAssertFalse(text.contains("hunter2"))
    }

    func testAResolvedValueIsNeverRepeatedInAnError() throws {
        let text = refusal(#"{"port": "${env:PORT}"}"#, environment: ["PORT": "super-secret-value"])
        XCTAssertTrue(text.contains("port must be a whole number"), text)
        XCTAssertFalse(text.contains("super-secret-value"), text)
    }

    func testAnUnclosedReferenceIsRefused() {
        XCTAssertTrue(refusal(#"{"tokens": {"issuer": "${env:ISSUER"}}"#).contains("an unclosed ${"))
    }

    func testAVariableNameWithOtherCharactersIsRefused() {
        XCTAssertTrue(refusal(#"{"tokens": {"issuer": "${env:A-B}"}}"#).contains("is not a variable name"))
    }

    func testAnOversizedSecretFileIsRefused() throws {
        try write(String(repeating: "x", count: ConfigurationReferences.maximumFileBytes + 1), to: "big.txt")
        XCTAssertTrue(refusal(#"{"tokens": {"issuer": "${file:big.txt}"}}"#).contains("is longer than"))
    }

    func testAFileThatIsNotTextIsRefused() throws {
        try Data([0xFF, 0xFE, 0x00]).write(to: directory.appendingPathComponent("binary"))
        XCTAssertTrue(refusal(#"{"tokens": {"issuer": "${file:binary}"}}"#).contains("is not UTF-8 text"))
    }
}
