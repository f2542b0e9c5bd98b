import FIDOServerTesting
import FIDOSimulation
import Foundation
import JWTKit
import WireJSON
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// What makes a relying party's token an admin's (the scope, however the issuer spells the claim, and never a token
/// that names nobody), and which user an admin's query names.
final class HostileClientAdminTests: XCTestCase {
    /// Claims with `scope` and `scp` of any JSON shape, and `sub` optional.
    struct Claims: JWTPayload {
        var iss: String
        var aud: String
        var sub: String?
        var exp: Int64
        var scope: JSONValue?
        var scp: JSONValue?
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func claims(_ loopback: InProcessServer, sub: String? = "operator", scope: JSONValue? = nil, scp: JSONValue? = nil) -> Claims {
        Claims(
            iss: loopback.relyingParty.issuer, aud: loopback.relyingParty.audience, sub: sub,
            exp: Int64(loopback.clock.now.timeIntervalSince1970) + 300, scope: scope, scp: scp)
    }

    /// The status of a registration request for alice made with `claims`.
    static func status(_ loopback: InProcessServer, _ claims: Claims) async throws -> Int {
        let token = try await loopback.relyingParty.sign(claims)
        return try await loopback.exchange(
            .POST, "/nevisfido/uaf/1.1/request/registration", body: try InProcessServer.registrationBody("alice"),
            headers: [("Authorization", "Bearer \(token)")]
        ).status
    }

    func testAnAdminTokenThatNamesNoSubjectIsRefused() async throws {
        try await InProcessServer.with { loopback in
            let status = try await Self.status(loopback, Self.claims(loopback, sub: nil, scope: .string("mauth:admin")))
            XCTAssertEqual(status, 401, "an admin token without sub acts unnamed in the audit trail")
        }
    }

    func testScopeAndScpGrantTheAdminScopeAlikeAsAStringOrAnArray() async throws {
        try await InProcessServer.with { loopback in
            for value: JSONValue in [.string("profile mauth:admin"), .array([.string("profile"), .string("mauth:admin")])] {
                let byScope = try await Self.status(loopback, Self.claims(loopback, scope: value))
                let byScp = try await Self.status(loopback, Self.claims(loopback, scp: value))
                XCTAssertEqual([byScope, byScp], [200, 200], "\(value)")
            }
            for value: JSONValue in [.string("profile"), .array([.string("profile")]), .number(1), .string("mauth:admin2")] {
                let byScope = try await Self.status(loopback, Self.claims(loopback, scope: value))
                let byScp = try await Self.status(loopback, Self.claims(loopback, scp: value))
                XCTAssertEqual([byScope, byScp], [403, 403], "\(value) granted the admin scope")
            }
        }
    }

    func testAFormEncodedSpaceInTheQueryNamesTheUserWithTheSpace() async throws {
        try await InProcessServer.with { loopback in
            try await loopback.server.stores.registrations.insert([
                RegistrationRecord(
                    username: "alice smith", aaid: "F1D0#1001", keyID: "key-1", publicKey: [4, 1, 2, 3], publicKeyEncoding: .eccX962DER,
                    signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
                    attestationType: .basicSurrogate, createdAt: loopback.clock.now, deviceId: nil)
            ])
            let admin = [("Authorization", "Bearer \(try await loopback.relyingParty.sign(Self.claims(loopback, scope: .string("mauth:admin"))))")]
            let spaced = try await loopback.exchange(.GET, "/nevisfido/admin/user?username=alice+smith", body: nil, headers: admin)
            XCTAssertEqual(spaced.status, 200, "alice+smith did not name alice smith")
            XCTAssertTrue(String(decoding: spaced.body, as: UTF8.self).contains("key-1"))
            let plus = try await loopback.exchange(.GET, "/nevisfido/admin/user?username=alice%2Bsmith", body: nil, headers: admin)
            XCTAssertFalse(String(decoding: plus.body, as: UTF8.self).contains("key-1"), "alice%2Bsmith named alice smith")
            let malformed = try await loopback.exchange(.GET, "/nevisfido/admin/user?username=alice%ZZ", body: nil, headers: admin)
            XCTAssertEqual(malformed.status, 400)
        }
    }
}
