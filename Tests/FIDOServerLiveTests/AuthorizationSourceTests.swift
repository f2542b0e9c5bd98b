import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import JWTKit
import NIOCore
import Primitives
import UAF
import XCTest
import _CryptoExtras

@testable import FIDOServer
@testable import FIDOServerCore

/// The other credential sources: RS256 tokens from PEM keys, and the trusted proxy header.
final class AuthorizationSourceTests: XCTestCase {
    func withServer(_ configure: (inout ServerConfiguration, URL) throws -> Void, _ body: (LoopbackServer) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-auth-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = LoopbackServer.configuration()
        try configure(&configuration, directory)
        try await LoopbackServer.with(configuration, body)
    }

    func registration(_ loopback: LoopbackServer, _ username: String, headers: [(String, String)]) async throws -> Int {
        try await loopback.exchange(
            .POST, "/nevisfido/uaf/1.1/request/registration", body: try LoopbackServer.registrationBody(username), headers: headers
        ).status
    }

    func testAnRS256TokenVerifiesWithAPEMPublicKey() async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try await withServer({ configuration, directory in
            let pem = directory.appendingPathComponent("rp-rsa.pem")
            try Data(rsa.publicKey.pemRepresentation.utf8).write(to: pem)
            configuration.authorization.jwt = .init(publicKeyPaths: [pem.path], issuer: "https://rp.rsa", audience: "mauth")
        }) { loopback in
            let keys = JWTKeyCollection()
            await keys.add(rsa: try Insecure.RSA.PrivateKey(pem: rsa.pemRepresentation), digestAlgorithm: .sha256)
            var claims = LocalRelyingParty(issuer: "https://rp.rsa", audience: "mauth").claims(subject: "alice", now: loopback.clock.now)
            let token = try await keys.sign(claims)
            let ok = try await registration(loopback, "alice", headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(ok, 200)
            claims.aud = "other"
            let wrong = try await registration(loopback, "alice", headers: [("Authorization", "Bearer \(try await keys.sign(claims))")])
            XCTAssertEqual(wrong, 401)
        }
    }

    func testAnRSAKeyOver4096BitsIsRefusedAtStartUp() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-rsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let pem = directory.appendingPathComponent("big.pem")
        try Data(try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 4608)).publicKey.pemRepresentation.utf8).write(to: pem)
        var configuration = ServerConfiguration(facets: [testFacet], database: .sqliteInMemory)
        configuration.authorization.jwt = .init(publicKeyPaths: [pem.path], issuer: "i", audience: "a")
        do {
            let server = try await FIDOServerApplication.start(configuration: configuration)
            try await server.stop()
            XCTFail("a 4608-bit RSA key was accepted")
        } catch let error as ServerConfiguration.ConfigurationError {
            XCTAssertTrue(error.description.contains("4096"), error.description)
        }
    }

    func testTheTrustedProxyHeaderIsBelievedFromTheProxy() async throws {
        try await withServer({ configuration, _ in
            configuration.authorization.trustedProxy = .init(header: "X-Authenticated-User", addresses: ["127.0.0.1"])
        }) { loopback in
            let own = try await registration(loopback, "alice", headers: [("X-Authenticated-User", "alice")])
            XCTAssertEqual(own, 200)
            let other = try await registration(loopback, "bob", headers: [("X-Authenticated-User", "alice")])
            XCTAssertEqual(other, 403)
        }
    }

    func testTheTrustedProxyHeaderIsRefusedFromAnyoneElse() async throws {
        try await withServer({ configuration, _ in
            configuration.authorization.trustedProxy = .init(header: "X-Authenticated-User", addresses: ["192.0.2.10"])
        }) { loopback in
            let status = try await registration(loopback, "alice", headers: [("X-Authenticated-User", "alice")])
            XCTAssertEqual(status, 401)
            let outstanding = try await loopback.server.stores.uafCeremonies.outstanding(username: "alice", now: loopback.clock.now)
            XCTAssertEqual(outstanding, 0)
        }
    }
}
