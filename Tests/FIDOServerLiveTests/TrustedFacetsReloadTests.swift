import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Trusted facets from a file are hot-reloaded when the file changes; a broken edit keeps the previous list.
final class TrustedFacetsReloadTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("facets.json").path }

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-facets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws { try? FileManager.default.removeItem(at: directory) }

    func write(_ text: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }

    func facets(_ loopback: LoopbackServer) async throws -> [String] {
        let answer = try await loopback.exchange(.GET, "/nevisfido/uaf/1.1/facets", body: nil)
        return try JSONDecoder().decode(TrustedFacets.self, from: answer.body).trustedFacets.flatMap(\.ids)
    }

    func testAChangedFacetsFileTakesEffectWithoutARestart() async throws {
        try write(#"["ios:bundle-id:com.example.other"]"#)
        var configuration = LoopbackServer.configuration()
        configuration.facetsPath = path
        try await LoopbackServer.with(configuration) { loopback in
            let before = try await facets(loopback)
            XCTAssertEqual(before, ["ios:bundle-id:com.example.other"])
            // The test authenticator's facet is not trusted yet.
            let request = try await loopback.registrationRequest(username: "alice")
            let refused = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try SoftwareAuthenticator().register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(refused.statusCode, 1498)

            try write(#"{"trustedFacets": [{"version": {"major": 1, "minor": 1}, "ids": ["ios:bundle-id:com.example.other", "\#(testFacet)"]}]}"#)
            var reloaded: [String] = []
            _ = try await eventually(every: .milliseconds(200)) {
                reloaded = try await facets(loopback)
                return reloaded.contains(testFacet)
            }
            XCTAssertEqual(reloaded, ["ios:bundle-id:com.example.other", testFacet])
            let again = try await loopback.registrationRequest(username: "alice")
            let accepted = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try SoftwareAuthenticator().register(again, serverAppID: loopback.server.appID))
            XCTAssertEqual(accepted.statusCode, 1200)
        }
    }

    func testABrokenFacetsFileKeepsThePreviousList() throws {
        try write(#"["ios:bundle-id:a"]"#)
        let source = try TrustedFacetsSource(path: path, allowWildcards: false)
        try write("{ not json")
        XCTAssertFalse(source.reload(logger: Logger(label: "test")))
        XCTAssertEqual(source.facets, ["ios:bundle-id:a"])
        try write("[]")
        XCTAssertFalse(source.reload(logger: Logger(label: "test")))
        XCTAssertEqual(source.facets, ["ios:bundle-id:a"])
    }

    func testAWildcardInTheFacetsFileNeedsDevelopmentMode() throws {
        try write(#"["ios:bundle-id:a"]"#)
        let source = try TrustedFacetsSource(path: path, allowWildcards: false)
        try write(#"["ios:bundle-id:*"]"#)
        XCTAssertFalse(source.reload(logger: Logger(label: "test")))
        XCTAssertEqual(source.facets, ["ios:bundle-id:a"])
        XCTAssertThrowsError(try TrustedFacetsSource(path: path, allowWildcards: false))
    }
}
