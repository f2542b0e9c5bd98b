import Crypto
import Foundation
import Primitives

/// The protected header of a JWS.
public struct JWSHeader: Codable, Hashable, Sendable {
    public var alg: String
    public var kid: String?
    public var typ: String?
    public init(alg: String = "ES256", kid: String? = nil, typ: String? = nil) {
        self.alg = alg
        self.kid = kid
        self.typ = typ
    }
}

/// Compact JWS (RFC 7515) with ES256 only (RFC 7518 §3.4: the signature is R ‖ S, 64 bytes). `alg` is checked
/// against the one algorithm accepted, never taken from the token, so "none" and key-confusion attacks fail.
public enum JWS {
    /// Signs `payload` and returns `header.payload.signature`.
    public static func sign(_ payload: [UInt8], header: JWSHeader = JWSHeader(), key: P256.Signing.PrivateKey) throws -> String {
        try Signer(key: key, header: header).sign(payload)
    }

    /// Signs with one key under one protected header, written once: for a signer that signs often (the server signs a
    /// token at every sign-in), so each signature costs the payload's encoding and the signature, not the header's.
    public struct Signer: Sendable {
        public let key: P256.Signing.PrivateKey
        /// The protected header's base64url text and the dot after it: the start of every signing input.
        private let prefix: [UInt8]

        /// Throws for a header whose `alg` is not ES256.
        public init(key: P256.Signing.PrivateKey, header: JWSHeader = JWSHeader()) throws {
            guard header.alg == "ES256" else { throw JOSEError(.unsupportedAlgorithm(header.alg)) }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var prefix: [UInt8] = []
            Base64URL.append(try encoder.encode(header), to: &prefix)
            prefix.append(UInt8(ascii: "."))
            self.key = key
            self.prefix = prefix
        }

        /// Signs `payload` (the bytes the token carries, JSON for a JWT) and returns `header.payload.signature`.
        public func sign<Payload: DataProtocol>(_ payload: Payload) throws -> String {
            var token = prefix
            // The whole token in one buffer: the signing input, then the dot and the 86 characters of R ‖ S.
            token.reserveCapacity(prefix.count + Base64URL.encodedCount(payload.count) + 1 + Base64URL.encodedCount(64))
            Base64URL.append(payload, to: &token)
            let signature = try key.signature(for: token)
            token.append(UInt8(ascii: "."))
            Base64URL.append(signature.rawRepresentation, to: &token)
            return String(decoding: token, as: UTF8.self)
        }
    }

    /// A verified JWS.
    public struct Verified: Sendable, Hashable {
        public let header: JWSHeader
        public let payload: [UInt8]
    }

    /// Parses and verifies a compact JWS with `key`.
    public static func verify(_ compact: String, key: P256.Signing.PublicKey) throws(JOSEError) -> Verified {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw JOSEError(.malformed("expected three dot-separated parts")) }
        guard let headerBytes = Base64URL.decodeBytes(String(parts[0])),
            let header = try? JSONDecoder().decode(JWSHeader.self, from: Data(headerBytes))
        else {
            throw JOSEError(.malformed("the protected header is not base64url JSON"))
        }
        guard header.alg == "ES256" else { throw JOSEError(.unsupportedAlgorithm(header.alg)) }
        guard let payload = Base64URL.decodeBytes(String(parts[1])) else { throw JOSEError(.malformed("the payload is not base64url")) }
        guard let signatureBytes = Base64URL.decodeBytes(String(parts[2])), signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else {
            throw JOSEError(.malformed("the signature is not a 64-byte ES256 signature"))
        }
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        guard key.isValidSignature(signature, for: signingInput) else { throw JOSEError(.signatureInvalid) }
        return Verified(header: header, payload: payload)
    }
}
