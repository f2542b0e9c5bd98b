import JWTKit
import XCTest

@testable import FIDOServerCore

/// A refused JWT is named in words in the 401 and the audit trail, never with JWTKit's or Foundation's internals.
final class TokenRefusalTests: XCTestCase {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var auth_time: Int
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
    struct Partial: JWTPayload {
        var sub: SubjectClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    func refusal(_ token: String, keys: JWTKeyCollection) async -> String? {
        do {
            _ = try await keys.verify(token, as: Claims.self)
            return nil
        } catch { return TokenRefusal.reason(error) }
    }

    func testATokenThatIsNotAJWTIsSaidSo() async throws {
        let keys = await JWTKeyCollection().add(ecdsa: ES256PrivateKey())
        let said = await refusal("not-a-jwt", keys: keys)
        XCTAssertEqual(said, "it is not a compact JWT (three base64url parts, a JSON header and claims)")
    }

    func testAMissingClaimIsNamed() async throws {
        let keys = await JWTKeyCollection().add(ecdsa: ES256PrivateKey())
        let token = try await keys.sign(Partial(sub: "alice"))
        let said = await refusal(token, keys: keys)
        XCTAssertEqual(said, "its claim auth_time is missing")
    }

    func testAnotherKeysSignatureIsSaidSo() async throws {
        let signer = await JWTKeyCollection().add(ecdsa: ES256PrivateKey())
        let token = try await signer.sign(Claims(sub: "alice", auth_time: 1))
        let keys = await JWTKeyCollection().add(ecdsa: ES256PrivateKey())
        let said = await refusal(token, keys: keys)
        XCTAssertEqual(said, "its signature does not verify with a trusted key")
    }

    func testNoRefusalShowsInternals() async throws {
        let keys = await JWTKeyCollection().add(ecdsa: ES256PrivateKey())
        for token in ["", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", try await keys.sign(Partial(sub: "x"))] {
            let said = await refusal(token, keys: keys) ?? ""
            XCTAssertFalse(said.contains("JWTKitError") || said.contains("DecodingError") || said.contains("CodingKeys"), said)
        }
    }
}
