import Primitives
import Crypto
import Foundation
import JOSE
import JWTKit
import UAF
import WireJSON

/// The claims of the JWT this server issues after a successful authentication. A relying party verifies it
/// with the keys at `/.well-known/jwks.json`; this server also accepts it as a session credential.
public struct IssuedTokenClaims: JWTPayload, Equatable {
    public var iss: String
    public var sub: String
    public var aud: String?
    public var iat: Int64
    public var exp: Int64
    /// When the user verified on the authenticator (the UAF authentication), seconds since the epoch.
    public var auth_time: Int64
    /// The session this token belongs to; revoking the session revokes the token.
    public var sid: String
    public var aaid: String
    public var keyid: String
    /// base64url SHA-256 of the confirmed transaction content, present only when a transaction was confirmed.
    public var txn_hash: String?
    /// What the token is: `authentication` (a login: a session credential) or `registration` (handed to the device
    /// after it registered a key: it only creates that device's dispatch target). A relying party that takes our
    /// JWT as proof of a login checks this is `authentication`. Absent in tokens of servers before the claim.
    public var token_use: String?
    /// The device a `registration` token was issued to, when the registration named one: the only device it may
    /// create a dispatch target for.
    public var device_id: String?

    /// The values of `token_use`.
    public enum Use: String, Sendable { case authentication, registration }

    /// Claims are checked explicitly by `TokenIssuer/verify(_:now:)` with the server's clock.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Signs the tokens a successful authentication hands out (ES256 with the server's P-256 key) and publishes the
/// verification key as a JWKS. The key is the configured PEM, or one generated once and shared via the database.
public struct TokenIssuer: Sendable {
    public let kid: String
    package let issuer: String
    let audience: String?
    let lifetime: TimeInterval
    private let publicKey: P256.Signing.PublicKey
    private let keys: JWTKeyCollection

    init(privateKeyPEM: String, issuer: String, audience: String?, lifetime: TimeInterval) async throws {
        let key: P256.Signing.PrivateKey
        do { key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM) } catch {
            throw ServerConfiguration.ConfigurationError.invalid("the token signing key is not a PEM P-256 private key")
        }
        publicKey = key.publicKey
        kid = JOSE.JWK(publicKey: key.publicKey).thumbprint
        keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PrivateKey(backing: key), kid: JWKIdentifier(string: kid),
                       serializer: DefaultJWTSerializer(jsonEncoder: WireJWTEncoder()))
        self.issuer = issuer; self.audience = audience; self.lifetime = lifetime
    }

    package static func load(_ configuration: ServerConfiguration.Tokens, issuer: String, stores: Stores, now: Date) async throws -> TokenIssuer {
        let pem: String
        if let path = configuration.signingKeyPath {
            let data = try ServerConfiguration.readFile(path, setting: "tokens.signingKeyPath")
            pem = String(decoding: data, as: UTF8.self)
        } else {
            let candidate = P256.Signing.PrivateKey()
            pem = try await stores.signingKeys.sharedKey(candidate: (JOSE.JWK(publicKey: candidate.publicKey).thumbprint, candidate.pemRepresentation), now: now).pem
        }
        return try await TokenIssuer(privateKeyPEM: pem, issuer: configuration.issuer ?? issuer, audience: configuration.audience,
                                     lifetime: TimeInterval(configuration.tokenLifetimeSeconds))
    }

    /// The JWKS served at `/.well-known/jwks.json`.
    public var jwks: JWKSDocument { JWKSDocument(keys: [JOSE.JWK(publicKey: publicKey, kid: kid, use: "sig", alg: "ES256")]) }

    func issue(session: SessionRecord, authenticatedAt: Date, transactionContentHash: [UInt8], use: IssuedTokenClaims.Use = .authentication,
               deviceId: String? = nil) async throws -> String {
        let now = authenticatedAt.timeIntervalSince1970
        let claims = IssuedTokenClaims(
            iss: issuer, sub: session.username, aud: audience, iat: Int64(now), exp: Int64(now + min(lifetime, session.expiresAt.timeIntervalSince(authenticatedAt))),
            auth_time: Int64(now), sid: session.id, aaid: session.aaid, keyid: session.keyID,
            txn_hash: transactionContentHash.isEmpty ? nil : Base64URL.encode(transactionContentHash), token_use: use.rawValue, device_id: deviceId)
        return try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// Verifies a token this server issued: signature, issuer and expiry (no leeway: we wrote `exp` ourselves).
    /// The caller still checks that the session `sid` is live.
    package func verify(_ token: String, now: Date) async throws(AuthorizationFailure) -> IssuedTokenClaims {
        let claims: IssuedTokenClaims
        do { claims = try await keys.verify(token, as: IssuedTokenClaims.self) } catch {
            throw .unauthenticated("server token rejected: \(error)")
        }
        guard claims.iss == issuer else { throw .unauthenticated("server token has the wrong issuer") }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw .unauthenticated("server token expired") }
        return claims
    }

    /// Signs another kind of token this server hands out (the Auth Cloud status and result tokens). None of their
    /// claim sets has `sid` and `auth_time`, so none decodes as ``IssuedTokenClaims``: they are never session
    /// credentials, and each kind names its own `aud`, which ``verify(_:as:now:)`` checks.
    func sign<Claims: JWTPayload>(_ claims: Claims) async throws -> String {
        try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// Verifies a token signed by ``sign(_:)``: signature, issuer, audience and expiry; nil when any fails.
    func verify<Claims: JWTPayload & AudienceBound>(_ token: String, as type: Claims.Type, now: Date) async -> Claims? {
        guard token.utf8.count <= 4096, let claims = try? await keys.verify(token, as: Claims.self) else { return nil }
        guard claims.iss == issuer, claims.aud == Claims.audience, Double(claims.exp) > now.timeIntervalSince1970 else { return nil }
        return claims
    }

    /// Whether `token` names this server's key in its header (so it is ours to verify, not the relying party's).
    package func isOurs(_ token: String) -> Bool {
        guard let header = token.split(separator: ".", omittingEmptySubsequences: false).first,
              let data = Base64URL.decode(String(header)),
              let fields = try? JSONDecoder().decode([String: JSONValue].self, from: data) else { return false }
        return fields["kid"]?.string == kid
    }
}

/// A claim set that names the one audience its kind of token is for, so that a token of one kind is never
/// accepted as another.
protocol AudienceBound {
    static var audience: String { get }
    var iss: String { get }
    var aud: String { get }
    var exp: Int64 { get }
}

/// A JSON Web Key Set (RFC 7517 §5).
public struct JWKSDocument: Codable, Sendable, Equatable {
    public var keys: [JOSE.JWK]
    public init(keys: [JOSE.JWK]) { self.keys = keys }
}

/// The JSON of the tokens this server signs (header and claims), written by ``WireJSONEncoder`` instead of jwt-kit's
/// default, Foundation's `JSONEncoder`: every login signs a token, and `JSONEncoder` was 2 % of the server's CPU
/// under authentication load (profile of `mauth load`). Dates as seconds since 1970, as jwt-kit's own encoder writes
/// them (a JWT's NumericDate). Keys come out sorted and slashes unescaped: the same JSON in other bytes, which is
/// all a signature needs, since it covers the bytes that were signed. jwt-kit still builds the header, signs and
/// verifies; only the JSON writer is ours.
struct WireJWTEncoder: JWTJSONEncoder {
    private static let encoder = WireJSONEncoder(dateEncoding: .secondsSince1970)

    func encode<T: Encodable>(_ value: T) throws -> Data { try Self.encoder.encodeToData(value) }
}
