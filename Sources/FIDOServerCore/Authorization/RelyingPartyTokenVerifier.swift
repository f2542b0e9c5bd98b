import Foundation
import JWTKit
import Logging
import NIOConcurrencyHelpers
import Primitives
import ServiceLifecycle
import UAF
import WireJSON
import _CryptoExtras

/// Verifies JWTs that the relying party's backend issues to authorize protected calls (server-api §C.2).
///
/// The signature is checked by jwt-kit against the configured keys only (JWKS file and PEM public keys), and only
/// with ES256 or RS256: the algorithm comes from the key, never from the token, so `alg: none` or an HMAC token
/// made with a public key as secret cannot pass. The claims are then checked here with the server's clock:
/// `exp` is required, `nbf` honoured, each with the configured leeway; `iss` and `aud` must match exactly.
package final class RelyingPartyTokenVerifier: Sendable {
    package let configuration: ServerConfiguration.Authorization.JWT
    /// The keys of `jwksPath` and `publicKeyPaths`, read once.
    private let fixed: [FixedKey]
    /// The verifying keys in force (the fixed ones and those fetched from `jwksURL`), and the kids among them.
    private let keys: NIOLockedValueBox<(collection: JWTKeyCollection, kids: Set<String>)>
    private let missFetch = IntervalGate(interval: RelyingPartyTokenVerifier.missFetchInterval)
    private let logger: Logger
    /// The proxy `jwksURL` is fetched through.
    private let proxy: ServerConfiguration.OutboundProxy?

    /// The most often a token naming an unknown kid makes the server fetch `jwksURL`: what made-up key ids can cost
    /// (one outbound request per 30 seconds per instance).
    static let missFetchInterval: TimeInterval = 30
    /// The largest JWKS document read from `jwksURL`.
    static let maximumJWKSBytes = 64 * 1024

    enum FixedKey: Sendable {
        case jwk(JWK)
        case ecdsa(ES256PublicKey, JWKIdentifier)
        case rsa(JWTKit.Insecure.RSA.PublicKey, JWKIdentifier)
    }

    /// The claims, read without interpretation; jwt-kit verifies only the signature.
    package struct Claims: JWTPayload {
        let values: [String: JSONValue]
        package init(from decoder: any Decoder) throws { values = try [String: JSONValue](from: decoder) }
        package func encode(to encoder: any Encoder) throws { try values.encode(to: encoder) }
        package func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private init(
        configuration: ServerConfiguration.Authorization.JWT, fixed: [FixedKey], fetched: [JWK], logger: Logger,
        proxy: ServerConfiguration.OutboundProxy?
    ) async throws {
        self.proxy = proxy
        self.configuration = configuration
        self.fixed = fixed
        self.logger = logger
        keys = NIOLockedValueBox(try await Self.collection(fixed: fixed, fetched: fetched, source: "authorization.jwt"))
    }

    package static func load(
        _ configuration: ServerConfiguration.Authorization.JWT, logger: Logger = Logger(label: "mauth.server"),
        proxy: ServerConfiguration.OutboundProxy? = nil
    ) async throws -> RelyingPartyTokenVerifier {
        var fixed: [FixedKey] = []
        if let path = configuration.jwksPath {
            let data = try ServerConfiguration.readFile(path, setting: "authorization.jwt.jwksPath")
            fixed += try usableKeys(data, source: path).map(FixedKey.jwk)
        }
        for (index, path) in configuration.publicKeyPaths.enumerated() {
            let data = try ServerConfiguration.readFile(path, setting: "authorization.jwt.publicKeyPaths")
            let pem = String(decoding: data, as: UTF8.self)
            let kid = JWKIdentifier(string: "pem-\(index)")
            if let key = try? ES256PublicKey(pem: pem) {
                fixed.append(.ecdsa(key, kid))
            } else if let key = try? ES256PublicKey(certificate: pem) {
                fixed.append(.ecdsa(key, kid))
            } else if let rsa = try? _RSA.Signing.PublicKey(pemRepresentation: pem) {
                // Over 4096 bits costs verification time for no security need (a cheap denial of service).
                guard rsa.keySizeInBits <= 4096 else {
                    throw ServerConfiguration.ConfigurationError.invalid("\(path): RSA keys over 4096 bits are refused")
                }
                fixed.append(.rsa(try JWTKit.Insecure.RSA.PublicKey(backing: rsa), kid))
            } else {
                throw ServerConfiguration.ConfigurationError.invalid("\(path) is not a PEM P-256 or RSA public key")
            }
        }
        var fetched: [JWK] = []
        if let url = configuration.jwksURL {
            // The first fetch must succeed: a server that started without its relying party's keys would refuse
            // every call the relying party authorizes, and say so only then.
            do { fetched = try await fetch(url, configuration: configuration, proxy: proxy) } catch {
                throw ServerConfiguration.ConfigurationError.invalid("authorization.jwt.jwksURL: \(error)")
            }
        }
        guard !fixed.isEmpty || !fetched.isEmpty else {
            throw ServerConfiguration.ConfigurationError.invalid("authorization.jwt lists no usable key")
        }
        return try await RelyingPartyTokenVerifier(configuration: configuration, fixed: fixed, fetched: fetched, logger: logger, proxy: proxy)
    }

    /// The ES256 (P-256) and RS256 keys of a JWKS document. Anything else in the set (encryption keys, other curves
    /// or digests) is skipped, so a token can never select a weaker algorithm through the set.
    static func usableKeys(_ data: Data, source: String) throws -> [JWK] {
        let jwks: JWKS
        do { jwks = try JSONDecoder().decode(JWKS.self, from: data) } catch {
            throw ServerConfiguration.ConfigurationError.invalid("\(source) is not a JWKS: \(error)")
        }
        var usable: [JWK] = []
        for jwk in jwks.keys {
            if let algorithm = jwk.algorithm, algorithm != .es256, algorithm != .rs256 { continue }
            switch jwk.keyType {
            case .ecdsa:
                guard jwk.curve?.rawValue == "P-256" else { continue }
            case .rsa:
                guard let modulus = jwk.modulus.flatMap(Base64URL.decodeBytes) else { continue }
                guard modulus.drop(while: { $0 == 0 }).count * 8 <= 4096 else {
                    throw ServerConfiguration.ConfigurationError.invalid("\(source): RSA keys over 4096 bits are refused")
                }
            default:
                continue
            }
            usable.append(jwk)
        }
        return usable
    }

    static func fetch(
        _ url: String, configuration: ServerConfiguration.Authorization.JWT, proxy: ServerConfiguration.OutboundProxy?
    ) async throws -> [JWK] {
        let data = try await HTTPSDownload.get(
            url, trustedCertificatesPath: configuration.jwksTrustedCertificatesPath,
            maximumBytes: maximumJWKSBytes, timeout: .seconds(10), proxy: proxy)
        let keys = try usableKeys(data, source: url)
        guard !keys.isEmpty else { throw HTTPSDownload.Failure(description: "\(url) lists no ES256 or RS256 key") }
        return keys
    }

    private static func collection(
        fixed: [FixedKey], fetched: [JWK], source: String
    ) async throws -> (collection: JWTKeyCollection, kids: Set<String>) {
        let keys = JWTKeyCollection()
        var kids: Set<String> = []
        for key in fixed {
            switch key {
            case .ecdsa(let key, let kid): await keys.add(ecdsa: key, kid: kid)
            case .rsa(let key, let kid): await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid)
            case .jwk(let jwk):
                do { try await keys.add(jwk: jwk) } catch {
                    throw ServerConfiguration.ConfigurationError.invalid("\(source): a key cannot be used: \(error)")
                }
                if let kid = jwk.keyIdentifier?.string { kids.insert(kid) }
            }
        }
        for jwk in fetched {
            do { try await keys.add(jwk: jwk) } catch {
                throw ServerConfiguration.ConfigurationError.invalid("\(source) jwksURL: a key cannot be used: \(error)")
            }
            if let kid = jwk.keyIdentifier?.string { kids.insert(kid) }
        }
        return (keys, kids)
    }

    /// Fetches `jwksURL` again and installs its keys; on any failure the keys in force stay. Returns whether it
    /// installed a set.
    @discardableResult
    package func refresh() async -> Bool {
        guard let url = configuration.jwksURL else { return false }
        do {
            let next = try await Self.collection(
                fixed: fixed, fetched: try await Self.fetch(url, configuration: configuration, proxy: proxy), source: url)
            let changed = keys.withLockedValue { current -> Bool in
                defer { current = next }
                return current.kids != next.kids
            }
            if changed { logger.notice("relying-party keys reloaded from \(url): kids \(next.kids.sorted().joined(separator: ", "))") }
            return true
        } catch {
            logger.error("relying-party keys not reloaded from \(url), keeping the keys in force: \(error)")
            return false
        }
    }

    /// Verifies the signature; a token naming a kid not in force makes the server fetch `jwksURL` first (at most
    /// every ``missFetchInterval``): the relying party may have added the key a moment ago.
    private func verifySignature(_ token: String, now: Date) async throws -> Claims {
        let collection = keys.withLockedValue { $0.collection }
        do {
            // PEM keys have synthetic kids, so a token without a matching kid is tried against every key.
            return try await collection.verify(token, as: Claims.self, iteratingKeys: true)
        } catch {
            guard configuration.jwksURL != nil, let kid = TokenHeader.kid(of: token), !keys.withLockedValue({ $0.kids.contains(kid) }),
                missFetch.opens(at: now), await refresh()
            else { throw error }
            return try await keys.withLockedValue { $0.collection }.verify(token, as: Claims.self, iteratingKeys: true)
        }
    }

    /// The scopes a token grants: `scope` and `scp` read alike, each a space-delimited string (RFC 9068 §2.2.3) or an
    /// array of such strings (as some issuers write `scp`). Why alike: when one spelling grants a scope that another
    /// does not, whether a token is an admin's depends on the issuer's habits, not on what it says. A claim of any
    /// other type grants nothing.
    static func scopes(_ values: [String: JSONValue]) -> Set<String> {
        var scopes: Set<String> = []
        for name in ["scope", "scp"] {
            for text in values[name]?.strings ?? [] { scopes.formUnion(text.split(separator: " ").map(String.init)) }
        }
        return scopes
    }

    /// The principal a valid token speaks for.
    package func principal(token: String, now: Date) async throws(AuthorizationFailure) -> Principal {
        let claims: Claims
        do {
            claims = try await verifySignature(token, now: now)
        } catch {
            throw .unauthenticated("relying-party JWT rejected: \(TokenRefusal.reason(error))")
        }
        let values = claims.values
        let skew = TimeInterval(configuration.clockSkewSeconds)
        guard let exp = values["exp"]?.number else { throw .unauthenticated("relying-party JWT has no exp") }
        guard now.timeIntervalSince1970 < exp + skew else { throw .unauthenticated("relying-party JWT expired") }
        if let nbf = values["nbf"] {
            guard let value = nbf.number, now.timeIntervalSince1970 + skew >= value else {
                throw .unauthenticated("relying-party JWT not valid yet")
            }
        }
        guard values["iss"]?.string == configuration.issuer else { throw .unauthenticated("relying-party JWT has the wrong issuer") }
        guard values["aud"]?.strings?.contains(configuration.audience) == true else {
            throw .unauthenticated("relying-party JWT has the wrong audience")
        }
        // Every token names its subject, an admin's too: the audit trail must name who acted for another user.
        guard let subject = values[configuration.subjectClaim]?.string, !subject.isEmpty else {
            throw .unauthenticated("relying-party JWT has no \(configuration.subjectClaim) claim")
        }
        let scopes = Self.scopes(values)
        let isAdmin = configuration.adminScope.map(scopes.contains) ?? false
        // Without an operator scope of its own, the admin scope reaches the operator's endpoints, as before.
        let isOperator = configuration.operatorScope.map(scopes.contains) ?? isAdmin
        return Principal(source: .relyingPartyToken, subject: subject, isAdmin: isAdmin, isOperator: isOperator)
    }
}

/// Fetches the relying party's JWKS (`authorization.jwt.jwksURL`) again every `jwksRefreshSeconds`, on the server's
/// clock (checked every 2 seconds). Runs only with a `jwksURL`.
package struct RelyingPartyKeyRefresher: Service {
    let verifier: RelyingPartyTokenVerifier
    let clock: @Sendable () -> Date

    package init(verifier: RelyingPartyTokenVerifier, clock: @escaping @Sendable () -> Date) {
        self.verifier = verifier
        self.clock = clock
    }

    package func run() async throws {
        let interval = TimeInterval(verifier.configuration.jwksRefreshSeconds)
        await cancelWhenGracefulShutdown {
            var due = clock().addingTimeInterval(interval)
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(2)) } catch { return }
                guard clock() >= due else { continue }
                await verifier.refresh()
                due = clock().addingTimeInterval(interval)
            }
        }
    }
}
