import Crypto
import Foundation
import JWTKit
import Primitives
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The tokens the server signs, whose JSON ``WireJSONEncoder`` writes, read by jwt-kit's default parser (Foundation's
/// `JSONDecoder`), the independent reader a relying party would use.
final class TokenIssuerTests: XCTestCase {
    static let claims = IssuedTokenClaims(
        iss: "https://fido.example/a/b", sub: "zoë \"the\" user/🚀", aud: "rp", iat: 1_795_502_581,
        exp: 1_795_502_881, auth_time: 1_795_502_581, sid: "019a2b3c4d5e-sid", aaid: "F1D0#1001",
        keyid: "a2V5", txn_hash: nil)

    func issuer() async throws -> TokenIssuer {
        try await TokenIssuer(
            privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, issuer: "https://fido.example", audience: "rp", lifetime: 300)
    }

    /// A relying party's reader: jwt-kit with its defaults, trusting the published JWKS.
    func verifier(_ issuer: TokenIssuer) async throws -> JWTKeyCollection {
        try await JWTKeyCollection().add(jwksJSON: String(decoding: try JSONEncoder().encode(issuer.jwks), as: UTF8.self))
    }

    /// The token's header and claims segments as Foundation reads them.
    func segments(_ token: String) throws -> (header: [String: String], payload: Data) {
        let parts = token.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        let header = try JSONDecoder().decode([String: String].self, from: Data(try XCTUnwrap(Base64URL.decodeBytes(parts[0]))))
        return (header, Data(try XCTUnwrap(Base64URL.decodeBytes(parts[1]))))
    }

    func testAnIssuedTokenVerifiesWithJWTKitsDefaultReader() async throws {
        let issuer = try await issuer()
        let token = try issuer.sign(Self.claims)
        let read = try await verifier(issuer).verify(token, as: IssuedTokenClaims.self)
        XCTAssertEqual(read, Self.claims)
        XCTAssertEqual(try JSONDecoder().decode(IssuedTokenClaims.self, from: try segments(token).payload), Self.claims)
    }

    func testTheHeaderNamesES256TheKeyAndJWT() async throws {
        let issuer = try await issuer()
        let header = try segments(try issuer.sign(Self.claims)).header
        XCTAssertEqual(header, ["alg": "ES256", "typ": "JWT", "kid": issuer.kid])
    }

    func testTheClaimsAreWrittenAsFoundationWritesThemSorted() async throws {
        let issuer = try await issuer()
        let payload = try segments(try issuer.sign(Self.claims)).payload
        let foundation = foundationWireEncoder()
        foundation.dateEncodingStrategy = .secondsSince1970
        XCTAssertEqual(String(decoding: payload, as: UTF8.self), String(decoding: try foundation.encode(Self.claims), as: UTF8.self))
    }

    /// jwt-kit's own claims hold dates, which a JWT writes as seconds since 1970 (RFC 7519 NumericDate): one written
    /// as seconds since 2001 would read 31 years early and pass or fail an expiry check wrongly.
    func testJWTKitDateClaimsAreSecondsSince1970() async throws {
        struct Dated: JWTPayload, Equatable {
            var exp: ExpirationClaim
            var iat: IssuedAtClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let issuer = try await issuer()
        let dated = Dated(
            exp: ExpirationClaim(value: Date(timeIntervalSince1970: 1_795_502_881)),
            iat: IssuedAtClaim(value: Date(timeIntervalSince1970: 1_795_502_581)))
        let token = try issuer.sign(dated)
        XCTAssertEqual(String(decoding: try segments(token).payload, as: UTF8.self), #"{"exp":1795502881,"iat":1795502581}"#)
        let read = try await verifier(issuer).verify(token, as: Dated.self)
        XCTAssertEqual(read, dated)
    }
}
