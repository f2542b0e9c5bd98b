import Crypto
import Foundation
import JWTKit
import Primitives

/// A relying party's backend in miniature: it holds a P-256 key, publishes it as a JWKS file the server is
/// configured to trust, and mints the bearer JWTs that authorize registration for one user. `mauth demo` and
/// `mauth load` play the relying party with it, and tests build valid and invalid tokens with it (one changed claim
/// each).
public struct LocalRelyingParty: Sendable {
    public let issuer: String
    public let audience: String
    public let kid: String
    private let key: P256.Signing.PrivateKey

    public init(
        issuer: String = "https://rp.example", audience: String = "mauth-server", kid: String = "rp-key-1",
        key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()
    ) {
        self.issuer = issuer
        self.audience = audience
        self.kid = kid
        self.key = key
    }

    /// The claims of a minted token; each test changes one.
    public struct Claims: JWTPayload {
        public var iss: String
        public var aud: String
        public var sub: String
        public var exp: Int64
        public var nbf: Int64?
        public var iat: Int64
        public var scope: String?
        public func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Valid claims for `subject`, issued at `now`, valid for `lifetime` seconds.
    public func claims(subject: String, now: Date = Date(), lifetime: TimeInterval = 300) -> Claims {
        let t = Int64(now.timeIntervalSince1970)
        return Claims(iss: issuer, aud: audience, sub: subject, exp: t + Int64(lifetime), nbf: t - 1, iat: t, scope: nil)
    }

    /// Signs `claims` with the relying party's key (ES256, `kid` in the header).
    public func sign(_ claims: some JWTPayload) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// A valid token for `subject`.
    public func token(for subject: String, now: Date = Date()) async throws -> String {
        try await sign(claims(subject: subject, now: now))
    }

    /// The JWKS (RFC 7517) with the public key.
    public var jwksJSON: String {
        let raw = Array(key.publicKey.rawRepresentation)
        return
            #"{"keys":[{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"\#(kid)","x":"\#(Base64URL.encode(raw[0..<32]))","y":"\#(Base64URL.encode(raw[32..<64]))"}]}"#
    }

    /// Writes the JWKS to `path`.
    public func writeJWKS(to path: String) throws {
        try Data(jwksJSON.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// The PEM of the public key (for servers configured with PEM keys).
    public var publicKeyPEM: String { key.publicKey.pemRepresentation }
}
