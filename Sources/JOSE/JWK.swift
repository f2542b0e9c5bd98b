import Crypto
import Foundation
import Primitives

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
        self.init(rawPoint: Array(publicKey.rawRepresentation), kid: kid, use: use, alg: alg)
    }

    /// The JWK of an encryption (key agreement) public key; `use` is "enc" and `alg` the one JWE key management
    /// algorithm we implement, so a sender that honours the JWK's `alg` picks it.
    public init(encryptionKey: P256.KeyAgreement.PublicKey, kid: String? = nil) {
        self.init(rawPoint: Array(encryptionKey.rawRepresentation), kid: kid, use: "enc", alg: JWE.keyManagementAlgorithm)
    }

    private init(rawPoint raw: [UInt8], kid: String?, use: String?, alg: String?) {
        // X ‖ Y, 32 bytes each
        kty = "EC"
        crv = "P-256"
        x = Base64URL.encode(raw[0..<32])
        y = Base64URL.encode(raw[32..<64])
        self.kid = kid
        self.use = use
        self.alg = alg
    }

    /// Parses a JWK from its JSON text (dispatch targets carry their keys as JSON strings).
    public init(json: String) throws(JOSEError) {
        guard let key = try? JSONDecoder().decode(JWK.self, from: Data(json.utf8)) else {
            throw JOSEError(.invalidKey("not a JWK JSON object"))
        }
        self = key
    }

    /// The JSON text of this key, members sorted (stable, so two encodings of one key compare equal).
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// The signing public key, if this is a valid P-256 key.
    public func p256SigningKey() throws(JOSEError) -> P256.Signing.PublicKey {
        do { return try P256.Signing.PublicKey(rawRepresentation: rawPoint()) } catch { throw JOSEError(.invalidKey("the point is not on P-256")) }
    }

    /// The key agreement public key, if this is a valid P-256 key whose `alg` (when present) is ours.
    public func p256KeyAgreementKey() throws(JOSEError) -> P256.KeyAgreement.PublicKey {
        if let alg, alg != JWE.keyManagementAlgorithm { throw JOSEError(.unsupportedAlgorithm(alg)) }
        if let use, use != "enc" { throw JOSEError(.invalidKey("the key's use is \"\(use)\", not \"enc\"")) }
        do { return try P256.KeyAgreement.PublicKey(rawRepresentation: rawPoint()) } catch {
            throw JOSEError(.invalidKey("the point is not on P-256"))
        }
    }

    private func rawPoint() throws(JOSEError) -> [UInt8] {
        guard kty == "EC", crv == "P-256", let xb = Base64URL.decodeBytes(x), let yb = Base64URL.decodeBytes(y), xb.count == 32, yb.count == 32 else {
            throw JOSEError(.invalidKey("not an EC P-256 JWK"))
        }
        return xb + yb
    }

    /// RFC 7638 thumbprint (SHA-256 over the required members in lexicographic order), base64url.
    public var thumbprint: String {
        let canonical = #"{"crv":"\#(crv)","kty":"\#(kty)","x":"\#(x)","y":"\#(y)"}"#
        return Base64URL.encode(Array(SHA256.hash(data: Array(canonical.utf8))))
    }
}

/// Why a JOSE object was rejected.
public struct JOSEError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .malformed`). The cases behind them are
    /// internal, so the module can add one without breaking a caller's `switch`.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        enum Kind: Hashable, Sendable {
            case malformed(String)
            case unsupportedAlgorithm(String)
            case invalidKey(String)
            case signatureInvalid
            case decryptionFailed
        }

        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        /// The reason's name and values, as the case behind it reads (`tooDeep(limit: 16)`), for logs and tests.
        public var description: String { "\(kind)" }

        public static func malformed(_ value: String) -> Self { Self(.malformed(value)) }

        public static func unsupportedAlgorithm(_ value: String) -> Self { Self(.unsupportedAlgorithm(value)) }

        public static func invalidKey(_ value: String) -> Self { Self(.invalidKey(value)) }

        public static let signatureInvalid = Self(.signatureInvalid)

        /// The JWE's authentication tag does not verify: tampered, truncated, or encrypted to another key.
        public static let decryptionFailed = Self(.decryptionFailed)
    }
    public let reason: Reason
    public init(_ reason: Reason) { self.reason = reason }
    public var description: String {
        switch reason.kind {
        case .malformed(let d): return "malformed JOSE object: \(d)"
        // The header's text is the sender's, read before anything is verified: quoted, escaped and capped.
        case .unsupportedAlgorithm(let a):
            return "unsupported algorithm \(UntrustedText.quoted(a, limit: 32)) (JWS: only ES256; JWE: only ECDH-ES with A256GCM)"
        case .invalidKey(let d): return "invalid key: \(d)"
        case .signatureInvalid: return "the signature does not verify"
        case .decryptionFailed: return "the JWE does not decrypt with this key (tampered, or for another recipient)"
        }
    }
}
