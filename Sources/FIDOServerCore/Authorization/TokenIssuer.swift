import Crypto
import Foundation
import JOSE
import JWTKit
import Logging
import NIOConcurrencyHelpers
import Primitives
import ServiceLifecycle
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
    /// The configured policy set a login was verified against (`context.policy`, or `default` when the context named
    /// none and a `default` set serves the operation); absent under the built-in policy. Why: the app chooses
    /// `context.policy`, so a relying party that needs a strong login checks this claim rather than trusting the app.
    public var policy: String?
    /// What proved the user: `uaf` (a UAF authenticator, the app) or `passkey` (a WebAuthn credential, the browser).
    /// For a passkey, `aaid` is empty (the claim stays, for relying parties that read it as a string) and `keyid` is
    /// the credential ID (base64url). Absent in tokens of servers before the claim, which issued UAF tokens only.
    public var method: String?

    /// The values of `token_use`.
    public enum Use: String, Sendable { case authentication, registration }

    /// Claims are checked explicitly by `TokenIssuer/verify(_:now:)` with the server's clock.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Signs the tokens a successful authentication hands out (ES256 with a P-256 key) and publishes the verification
/// keys as a JWKS. The key is the configured PEM (one key, for ever), or the database's key ring
/// (``SigningKeyStore``): the active key signs, and pending and recently retired keys are published and verify too.
/// Every instance reads the ring again every 10 seconds, and at once (at most every 2 seconds) when a token names a
/// key it does not know, so a key activated on one instance verifies on all of them and nothing fails during a
/// rotation.
public final class TokenIssuer: Sendable {
    package let issuer: String
    let audience: String?
    let lifetime: TimeInterval
    /// The key ring this issuer reads, on the database every instance shares; nil for one configured key.
    package let signingKeys: SigningKeyStore?
    private let ring: NIOLockedValueBox<Ring>
    private let missRefresh = IntervalGate(interval: TokenIssuer.missRefreshInterval)

    /// How often every instance reads the key ring again.
    package static let refreshInterval: TimeInterval = 10
    /// The most often an unknown `kid` makes an instance read the ring: what any caller can cost the database
    /// by sending tokens with made-up key ids (one query per 2 seconds per instance).
    static let missRefreshInterval: TimeInterval = 2

    /// The keys in use: the signing key's kid and signer, a key collection holding every usable key (which verifies),
    /// and their public JWKs.
    struct Ring: Sendable {
        var active: String
        var signer: JWS.Signer
        var keys: JWTKeyCollection
        var published: [JOSE.JWK]
        var fingerprint: [String]
    }

    private init(ring: Ring, signingKeys: SigningKeyStore?, issuer: String, audience: String?, lifetime: TimeInterval) {
        self.ring = NIOLockedValueBox(ring)
        self.signingKeys = signingKeys
        self.issuer = issuer
        self.audience = audience
        self.lifetime = lifetime
    }

    /// One fixed key (`tokens.signingKeyPath`, tests).
    /// Reads the signing key `tokens.signingKeyPath` names as ``load(_:issuer:stores:now:)`` would, without a
    /// database (`mauth server --check-config`).
    package static func checkSigningKeyFile(_ configuration: ServerConfiguration.Tokens) async throws {
        guard let path = configuration.signingKeyPath else { return }
        let data = try ServerConfiguration.readFile(path, setting: "tokens.signingKeyPath")
        _ = try await ring([(kid: nil, pem: String(decoding: data, as: UTF8.self), state: .active)])
    }

    convenience init(privateKeyPEM: String, issuer: String, audience: String?, lifetime: TimeInterval) async throws {
        let ring = try await Self.ring([(kid: nil, pem: privateKeyPEM, state: .active)])
        self.init(ring: ring, signingKeys: nil, issuer: issuer, audience: audience, lifetime: lifetime)
    }

    package static func load(_ configuration: ServerConfiguration.Tokens, issuer: String, stores: Stores, now: Date) async throws -> TokenIssuer {
        let issuer = configuration.issuer ?? issuer
        let lifetime = TimeInterval(configuration.tokenLifetimeSeconds)
        if let path = configuration.signingKeyPath {
            let data = try ServerConfiguration.readFile(path, setting: "tokens.signingKeyPath")
            return try await TokenIssuer(
                privateKeyPEM: String(decoding: data, as: UTF8.self), issuer: issuer, audience: configuration.audience,
                lifetime: lifetime)
        }
        let candidate = P256.Signing.PrivateKey()
        try await stores.signingKeys.bootstrap(
            candidate: (JOSE.JWK(publicKey: candidate.publicKey).thumbprint, candidate.pemRepresentation), now: now)
        let records = try await stores.signingKeys.usable(now: now, keepRetiredFor: keepRetiredFor(lifetime: lifetime))
        return TokenIssuer(
            ring: try await ring(records.map { ($0.kid, $0.pem, $0.state) }), signingKeys: stores.signingKeys, issuer: issuer,
            audience: configuration.audience, lifetime: lifetime)
    }

    /// How long a retired key still verifies: the longest a token it signed can live, plus the time the other
    /// instances may take to learn of the rotation and stop signing with it, plus a minute's margin.
    static func keepRetiredFor(lifetime: TimeInterval) -> TimeInterval { lifetime + 2 * refreshInterval + 60 }

    /// A ring of `keys`, the signing key first. A stored key that is not a P-256 PEM is a configuration error.
    private static func ring(_ keys: [(kid: String?, pem: String, state: SigningKeyRecord.State)]) async throws -> Ring {
        let collection = JWTKeyCollection()
        var published: [JOSE.JWK] = []
        var active: (kid: String, signer: JWS.Signer)?
        for key in keys {
            let privateKey: P256.Signing.PrivateKey
            do { privateKey = try P256.Signing.PrivateKey(pemRepresentation: key.pem) } catch {
                throw ServerConfiguration.ConfigurationError.invalid("the token signing key \(key.kid ?? "") is not a PEM P-256 private key")
            }
            let kid = key.kid ?? JOSE.JWK(publicKey: privateKey.publicKey).thumbprint
            await collection.add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: kid))
            published.append(JOSE.JWK(publicKey: privateKey.publicKey, kid: kid, use: "sig", alg: "ES256"))
            if active == nil, key.state == .active {
                active = (kid, try JWS.Signer(key: privateKey, header: JWSHeader(alg: "ES256", kid: kid, typ: "JWT")))
            }
        }
        guard let active else { throw ServerConfiguration.ConfigurationError.invalid("no active token signing key (mauth admin signing-key list)") }
        return Ring(
            active: active.kid, signer: active.signer, keys: collection, published: published,
            fingerprint: keys.map { "\($0.kid ?? "")/\($0.state)" })
    }

    /// Reads the database's ring again and installs it when it changed; returns whether it did. A ring that cannot
    /// be read or has no active key leaves the one in force.
    @discardableResult
    package func refresh(now: Date) async throws -> Bool {
        guard let signingKeys else { return false }
        let records = try await signingKeys.usable(now: now, keepRetiredFor: Self.keepRetiredFor(lifetime: lifetime))
        let fingerprint = records.map { "\($0.kid)/\($0.state)" }
        guard fingerprint != ring.withLockedValue({ $0.fingerprint }) else { return false }
        let next = try await Self.ring(records.map { ($0.kid, $0.pem, $0.state) })
        ring.withLockedValue { $0 = next }
        return true
    }

    /// The kid of the key that signs now.
    public var kid: String { ring.withLockedValue { $0.active } }

    /// The JWKS served at `/.well-known/jwks.json`: the signing key first, then pending and retiring keys.
    public var jwks: JWKSDocument { JWKSDocument(keys: ring.withLockedValue { $0.published }) }

    /// The keys that verify, and the one that signs.
    private var verifier: JWTKeyCollection { ring.withLockedValue { $0.keys } }
    private var signer: JWS.Signer { ring.withLockedValue { $0.signer } }

    func issue(
        session: SessionRecord, authenticatedAt: Date, transactionContentHash: [UInt8], use: IssuedTokenClaims.Use = .authentication,
        deviceId: String? = nil, policy: String? = nil
    ) throws -> String {
        let now = authenticatedAt.timeIntervalSince1970
        let claims = IssuedTokenClaims(
            iss: issuer, sub: session.username, aud: audience, iat: Int64(now),
            exp: Int64(now + min(lifetime, session.expiresAt.timeIntervalSince(authenticatedAt))),
            auth_time: Int64(now), sid: session.id, aaid: session.credential.aaid ?? "", keyid: session.credential.id,
            txn_hash: transactionContentHash.isEmpty ? nil : Base64URL.encode(transactionContentHash), token_use: use.rawValue, device_id: deviceId,
            policy: policy, method: session.credential.kind.rawValue)
        return try sign(claims)
    }

    /// Verifies a token this server issued: signature, issuer and expiry (no leeway: we wrote `exp` ourselves).
    /// The caller still checks that the session `sid` is live.
    package func verify(_ token: String, now: Date) async throws(AuthorizationFailure) -> IssuedTokenClaims {
        let claims: IssuedTokenClaims
        do { claims = try await verifier.verify(token, as: IssuedTokenClaims.self) } catch {
            throw .unauthenticated("server token rejected: \(TokenRefusal.reason(error))")
        }
        guard claims.iss == issuer else { throw .unauthenticated("server token has the wrong issuer") }
        guard Double(claims.exp) > now.timeIntervalSince1970 else { throw .unauthenticated("server token expired") }
        return claims
    }

    /// Signs another kind of token this server hands out (the Auth Cloud status and result tokens). None of their
    /// claim sets has `sid` and `auth_time`, so none decodes as ``IssuedTokenClaims``: they are never session
    /// credentials, and each kind names its own `aud`, which ``verify(_:as:now:)`` checks.
    ///
    /// The token is signed here (``JOSE/JWS/Signer``, its header written once per key), not by jwt-kit: jwt-kit's
    /// signing runs on its key collection's actor, a hop each way, and builds the header anew every time; at every
    /// sign-in that was about 2 % of a login's server CPU besides the signature itself (profiled). jwt-kit still
    /// verifies, and the tests hold what is signed here to jwt-kit's reader.
    func sign<Claims: JWTPayload>(_ claims: Claims) throws -> String {
        try signer.sign(try Self.claimsEncoder.encode(claims))
    }

    /// The JSON of the claims: ``WireJSONEncoder`` rather than Foundation's `JSONEncoder` (jwt-kit's default), which
    /// was 2 % of the server's CPU under authentication load (profile of `mauth load`). Dates as seconds since 1970,
    /// as jwt-kit writes them (a JWT's NumericDate). Keys come out sorted and slashes unescaped: the same JSON in
    /// other bytes, which is all a signature needs, since it covers the bytes that were signed.
    private static let claimsEncoder = WireJSONEncoder(dateEncoding: .secondsSince1970)

    /// Verifies a token signed by ``sign(_:)``: signature, issuer, audience and expiry; nil when any fails.
    func verify<Claims: JWTPayload & AudienceBound>(_ token: String, as type: Claims.Type, now: Date) async -> Claims? {
        guard token.utf8.count <= 4096, let claims = try? await verifier.verify(token, as: Claims.self) else { return nil }
        guard claims.iss == issuer, claims.aud == Claims.audience, Double(claims.exp) > now.timeIntervalSince1970 else { return nil }
        return claims
    }

    /// Whether `token` names one of this server's keys in its header (so it is ours to verify, not the relying
    /// party's). A kid this instance does not know makes it read the ring again, at most every 2 seconds
    /// (`missRefreshInterval`): the key may have been added on another instance a moment ago.
    package func isOurs(_ token: String, now: Date) async -> Bool {
        guard let kid = TokenHeader.kid(of: token) else { return false }
        if knows(kid) { return true }
        guard signingKeys != nil, missRefresh.opens(at: now) else { return false }
        _ = try? await refresh(now: now)
        return knows(kid)
    }

    private func knows(_ kid: String) -> Bool { ring.withLockedValue { $0.published.contains { $0.kid == kid } } }
}

/// The protected header of a compact JWS, as far as the server reads it before verifying.
package enum TokenHeader {
    /// The longest bearer token the server reads at all (bytes of the compact form).
    package static let maximumTokenBytes = 8192

    /// The one member read before the signature is checked.
    private struct Header: Decodable { var kid: String? }

    /// The `kid` the token's header names, if any. Only `kid` is read (as text; another type reads as none), by the
    /// wire's decoder, from a token of at most ``maximumTokenBytes``: an unverified header is a stranger's JSON.
    package static func kid(of token: String) -> String? {
        guard token.utf8.count <= maximumTokenBytes, let header = token.split(separator: ".", omittingEmptySubsequences: false).first,
            let data = Base64URL.decodeBytes(String(header))
        else { return nil }
        return (try? WireJSONDecoder().decode(Header.self, from: data))?.kid
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

/// Reads the database's token-signing keys again every 10 seconds (`TokenIssuer.refreshInterval`), so a key added, activated
/// or retired on any instance (`mauth admin signing-key`) takes effect on this one. Runs only when the keys are
/// the database's.
package struct SigningKeyRefresher: Service {
    let issuer: TokenIssuer
    let clock: @Sendable () -> Date
    let logger: Logger

    package init(issuer: TokenIssuer, clock: @escaping @Sendable () -> Date, logger: Logger) {
        self.issuer = issuer
        self.clock = clock
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(TokenIssuer.refreshInterval)) } catch { return }
                do {
                    let before = issuer.kid
                    if try await issuer.refresh(now: clock()) {
                        let after = issuer.kid
                        logger.notice(
                            "token-signing keys reloaded: \(issuer.jwks.keys.count) published, signing with \(after)\(after == before ? "" : " (was \(before))")"
                        )
                    }
                } catch {
                    logger.error("token-signing keys not reloaded, keeping the keys in force: \(error)")
                }
            }
        }
    }
}
