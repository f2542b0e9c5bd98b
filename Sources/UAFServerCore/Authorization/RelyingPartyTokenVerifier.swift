import Primitives
import _CryptoExtras
import Foundation
import JWTKit
import Logging
import UAF

/// Verifies JWTs that the relying party's backend issues to authorize protected calls (server-api §C.2).
///
/// The signature is checked by jwt-kit against the configured keys only (JWKS file and PEM public keys), and only
/// with ES256 or RS256: the algorithm comes from the key, never from the token, so `alg: none` or an HMAC token
/// made with a public key as secret cannot pass. The claims are then checked here with the server's clock:
/// `exp` is required, `nbf` honoured, each with the configured leeway; `iss` and `aud` must match exactly.
package struct RelyingPartyTokenVerifier: Sendable {
    let configuration: ServerConfiguration.Authorization.JWT
    private let keys: JWTKeyCollection

    /// The claims, read without interpretation; jwt-kit verifies only the signature.
    package struct Claims: JWTPayload {
        let values: [String: JSONValue]
        package init(from decoder: any Decoder) throws { values = try [String: JSONValue](from: decoder) }
        package func encode(to encoder: any Encoder) throws { try values.encode(to: encoder) }
        package func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    package static func load(_ configuration: ServerConfiguration.Authorization.JWT) async throws -> RelyingPartyTokenVerifier {
        let keys = JWTKeyCollection()
        var count = 0
        if let path = configuration.jwksPath {
            let data = try ServerConfiguration.readFile(path, setting: "authorization.jwt.jwksPath")
            let jwks: JWKS
            do { jwks = try JSONDecoder().decode(JWKS.self, from: data) } catch {
                throw ServerConfiguration.ConfigurationError.invalid("\(path) is not a JWKS: \(error)")
            }
            for jwk in jwks.keys {
                // Only ES256 (P-256) and RS256 keys; anything else in the set (encryption keys, other curves or
                // digests) is skipped, so a token can never select a weaker algorithm through the set.
                if let algorithm = jwk.algorithm, algorithm != .es256, algorithm != .rs256 { continue }
                switch jwk.keyType {
                case .ecdsa:
                    guard jwk.curve?.rawValue == "P-256" else { continue }
                case .rsa:
                    guard let modulus = jwk.modulus.flatMap(Base64URL.decodeBytes) else { continue }
                    guard modulus.drop(while: { $0 == 0 }).count * 8 <= 4096 else {
                        throw ServerConfiguration.ConfigurationError.invalid("\(path): RSA keys over 4096 bits are refused")
                    }
                default:
                    continue
                }
                do { try await keys.add(jwk: jwk); count += 1 } catch {
                    throw ServerConfiguration.ConfigurationError.invalid("\(path): a key cannot be used: \(error)")
                }
            }
        }
        for (index, path) in configuration.publicKeyPaths.enumerated() {
            let data = try ServerConfiguration.readFile(path, setting: "authorization.jwt.publicKeyPaths")
            let pem = String(decoding: data, as: UTF8.self)
            let kid = JWKIdentifier(string: "pem-\(index)")
            if let key = try? ES256PublicKey(pem: pem) {
                await keys.add(ecdsa: key, kid: kid)
            } else if let key = try? ES256PublicKey(certificate: pem) {
                await keys.add(ecdsa: key, kid: kid)
            } else if let rsa = try? _RSA.Signing.PublicKey(pemRepresentation: pem) {
                // Over 4096 bits costs verification time for no security need (a cheap denial of service).
                guard rsa.keySizeInBits <= 4096 else {
                    throw ServerConfiguration.ConfigurationError.invalid("\(path): RSA keys over 4096 bits are refused")
                }
                await keys.add(rsa: try Insecure.RSA.PublicKey(backing: rsa), digestAlgorithm: .sha256, kid: kid)
            } else {
                throw ServerConfiguration.ConfigurationError.invalid("\(path) is not a PEM P-256 or RSA public key")
            }
            count += 1
        }
        guard count > 0 else { throw ServerConfiguration.ConfigurationError.invalid("authorization.jwt lists no usable key") }
        return RelyingPartyTokenVerifier(configuration: configuration, keys: keys)
    }

    /// The principal a valid token speaks for.
    package func principal(token: String, now: Date) async throws(AuthorizationFailure) -> Principal {
        let claims: Claims
        do {
            // PEM keys have synthetic kids, so a token without a matching kid is tried against every key.
            claims = try await keys.verify(token, as: Claims.self, iteratingKeys: true)
        } catch {
            throw .unauthenticated("relying-party JWT rejected: \(error)")
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
        let subject = values[configuration.subjectClaim]?.string
        let scopes = (values["scope"]?.string?.split(separator: " ").map(String.init) ?? []) + (values["scp"]?.strings ?? [])
        let isAdmin = configuration.adminScope.map(scopes.contains) ?? false
        guard subject?.isEmpty == false || isAdmin else {
            throw .unauthenticated("relying-party JWT has no \(configuration.subjectClaim) claim")
        }
        return Principal(source: .relyingPartyToken, subject: subject, isAdmin: isAdmin)
    }
}
