import Crypto
import Foundation
import UAF  // Base64URL only: the one base64url codec of the project. JOSE knows nothing else of UAF.

/// A JSON Web Key (RFC 7517) for an EC P-256 public key: the key type the SDK's JWS and JWE use
/// (seed 000: "keys with a P-256 curve").
public struct JWK: Codable, Hashable, Sendable {
    public var kty: String
    public var crv: String
    public var x: String
    public var y: String
    public var kid: String?
    public var use: String?
    public var alg: String?

    public init(publicKey: P256.Signing.PublicKey, kid: String? = nil, use: String? = nil, alg: String? = nil) {
        let raw = Array(publicKey.rawRepresentation)  // X ‖ Y, 32 bytes each
        kty = "EC"; crv = "P-256"
        x = Base64URL.encode(raw[0..<32]); y = Base64URL.encode(raw[32..<64])
        self.kid = kid; self.use = use; self.alg = alg
    }

    /// The signing public key, if this is a valid P-256 key.
    public func p256SigningKey() throws(JOSEError) -> P256.Signing.PublicKey {
        guard kty == "EC", crv == "P-256", let xb = Base64URL.decodeBytes(x), let yb = Base64URL.decodeBytes(y), xb.count == 32, yb.count == 32 else {
            throw JOSEError(.invalidKey("not an EC P-256 JWK"))
        }
        do { return try P256.Signing.PublicKey(rawRepresentation: xb + yb) } catch { throw JOSEError(.invalidKey("the point is not on P-256")) }
    }

    /// RFC 7638 thumbprint (SHA-256 over the required members in lexicographic order), base64url.
    public var thumbprint: String {
        let canonical = #"{"crv":"\#(crv)","kty":"\#(kty)","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(Array(SHA256.hash(data: Array(canonical.utf8))))
    }
}

/// Why a JOSE object was rejected.
public struct JOSEError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        case malformed(String)
        case unsupportedAlgorithm(String)
        case invalidKey(String)
        case signatureInvalid
    }
    public let reason: Reason
    public init(_ reason: Reason) { self.reason = reason }
    public var description: String {
        switch reason {
        case .malformed(let d): return "malformed JOSE object: \(d)"
        case .unsupportedAlgorithm(let a): return "unsupported algorithm \"\(a)\" (only ES256 is accepted)"
        case .invalidKey(let d): return "invalid key: \(d)"
        case .signatureInvalid: return "the signature does not verify"
        }
    }
}
