import FIDOServerTesting
import FIDOSimulation
import Foundation
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The relying party's keys from an HTTPS URL (`authorization.jwt.jwksURL`): a key the relying party adds verifies
/// at once, made-up key ids cost no more than one fetch per 30 seconds, and a key it removes stops verifying at the
/// next scheduled refresh.
final class RelyingPartyJWKSTests: XCTestCase {
    var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-rp-jwks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws { try? FileManager.default.removeItem(at: directory) }

    /// One JWKS document with the keys of `parties`.
    func jwks(_ parties: [LocalRelyingParty]) -> String {
        let keys = parties.map { party -> Substring in
            let json = party.jwksJSON
            return json[json.index(after: json.firstIndex(of: "[")!)..<json.lastIndex(of: "]")!]
        }
        return #"{"keys":[\#(keys.joined(separator: ","))]}"#
    }

    func configuration(_ host: TestHTTPSHost, refreshSeconds: Int = 60) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration()
        let party = LocalRelyingParty()
        configuration.authorization.jwt = .init(
            issuer: party.issuer, audience: party.audience, jwksURL: host.url,
            jwksRefreshSeconds: refreshSeconds, jwksTrustedCertificatesPath: host.trustedCertificatesPath)
        return configuration
    }

    /// Whether a registration request for `username` authorized by `party`'s token is answered.
    func authorizes(_ loopback: LoopbackServer, _ party: LocalRelyingParty, _ username: String) async throws -> Bool {
        let token = try await party.token(for: username)
        return (try? await loopback.registrationRequest(username: username, headers: [("Authorization", "Bearer \(token)")])) != nil
    }

    func testTheRelyingPartyRotatesItsKeysWithoutAFailure() async throws {
        let first = LocalRelyingParty(kid: "rp-key-1")
        let second = LocalRelyingParty(kid: "rp-key-2")
        let stranger = LocalRelyingParty(kid: "made-up")
        let host = try await TestHTTPSHost.start(directory: directory, path: "/jwks.json", body: jwks([first]))
        do {
            try await LoopbackServer.with(configuration(host)) { loopback in
                let firstBefore = try await self.authorizes(loopback, first, "ann")
                XCTAssertTrue(firstBefore)
                XCTAssertEqual(host.fetches, 1)

                // The relying party publishes a second key and signs with it: verified at once, one fetch later.
                host.serve(self.jwks([first, second]))
                let secondAtOnce = try await self.authorizes(loopback, second, "bob")
                XCTAssertTrue(secondAtOnce)
                XCTAssertEqual(host.fetches, 2)

                // Tokens naming a key nobody published are refused, and cost no fetch within 30 seconds of the last.
                for index in 0..<5 {
                    let refused = try await self.authorizes(loopback, stranger, "eve-\(index)")
                    XCTAssertFalse(refused)
                }
                XCTAssertEqual(host.fetches, 2)

                // The relying party withdraws its first key: refused after the next scheduled refresh.
                host.serve(self.jwks([second]))
                loopback.clock.advance(61)
                var attempt = 0
                let withdrawn = try await eventually(every: .milliseconds(200)) {
                    attempt += 1
                    return try await !self.authorizes(loopback, first, "cid-\(attempt)")
                }
                XCTAssertTrue(withdrawn, "the withdrawn key still verified")
                let secondAfter = try await self.authorizes(loopback, second, "dan")
                XCTAssertTrue(secondAfter)
            }
        } catch {
            try? await host.stop()
            throw error
        }
        try await host.stop()
    }

    func testTheServerDoesNotStartWithoutTheRelyingPartysKeys() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.authorization.jwt = .init(issuer: "https://rp.example", audience: "mauth-server", jwksURL: "https://127.0.0.1:1/jwks.json")
        do {
            try await LoopbackServer.with(configuration) { _ in XCTFail("started") }
        } catch let error as ServerConfiguration.ConfigurationError {
            XCTAssertTrue(
                error.description.hasPrefix("invalid configuration: authorization.jwt.jwksURL: https://127.0.0.1:1/jwks.json"), error.description)
        }
    }

    func testAPlainHTTPJWKSURLIsRefused() {
        var configuration = LoopbackServer.configuration()
        configuration.authorization.jwt = .init(issuer: "https://rp.example", audience: "mauth-server", jwksURL: "http://rp.example/jwks.json")
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual(
                error as? ServerConfiguration.ConfigurationError,
                .invalid("authorization.jwt.jwksURL must be an https:// URL, not http://rp.example/jwks.json"))
        }
    }
}
