import FIDOServerTesting
import Foundation
import NIOCore
import XCTest

@testable import FIDOServerCore

/// A host the server downloads from (the relying party's JWKS, the Metadata Service BLOB) cannot hold the download:
/// the whole of it, body included, has one deadline.
final class HostileClientDownloadTests: XCTestCase {
    func testAHostThatTricklesItsBodyCannotHoldTheDownloadPastItsDeadline() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let host = try await TestHTTPSHost.start(directory: directory, path: "/jwks.json", body: String(repeating: "x", count: 100))
        let started = ContinuousClock.now
        do {
            // 100 bytes at one every 300 ms would take 30 s.
            _ = try await HTTPSDownload.get(
                host.url + "/trickle", trustedCertificatesPath: host.trustedCertificatesPath, maximumBytes: 1 << 20,
                timeout: .seconds(2))
            XCTFail("a trickled body was downloaded")
        } catch let failure as HTTPSDownload.Failure {
            XCTAssertTrue(failure.description.contains("not downloaded within 2 s"), failure.description)
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(4))
        // A prompt host is still served whole.
        let whole = try await HTTPSDownload.get(
            host.url, trustedCertificatesPath: host.trustedCertificatesPath, maximumBytes: 1 << 20, timeout: .seconds(2))
        XCTAssertEqual(whole.count, 100)
        try await host.stop()
    }
}
