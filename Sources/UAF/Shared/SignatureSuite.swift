import Crypto
import Foundation
import SwiftASN1
import _CryptoExtras

/// A public key decoded from one of the ALG_KEY_* formats.
public enum UAFPublicKey: Sendable {
    case p256(P256.Signing.PublicKey)
    case rsa(_RSA.Signing.PublicKey)

    /// SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (66 bytes) }.
    static let p256SPKIHeader: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
        0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ]

    /// Decodes `bytes` in `encoding` (uaf-spec §3.2). Returns nil for malformed keys or unsupported formats.
    public init?(bytes: [UInt8], encoding: PublicKeyEncoding) {
        switch encoding {
        case .eccX962Raw:
            guard bytes.count == 65, bytes.first == 0x04, let key = try? P256.Signing.PublicKey(x963Representation: bytes) else { return nil }
            self = .p256(key)
        case .eccX962DER:
            // Fast path: a P-256 SubjectPublicKeyInfo is a fixed 26-byte header and the 65-byte point.
            if bytes.count == 91, bytes[0..<26].elementsEqual(Self.p256SPKIHeader),
                let key = try? P256.Signing.PublicKey(x963Representation: bytes[26...])
            {
                self = .p256(key)
                return
            }
            guard let key = try? P256.Signing.PublicKey(derRepresentation: bytes) else { return nil }
            self = .p256(key)
        case .rsa2048Raw:
            guard bytes.count > 256, let key = try? _RSA.Signing.PublicKey(n: bytes[0..<256], e: bytes[256...]) else { return nil }
            self = .rsa(key)
        case .rsa2048DER:
            // 2048...4096 bits: smaller is weak, larger only makes every verification slower (a cheap denial of service).
            guard let key = try? _RSA.Signing.PublicKey(derRepresentation: bytes), (2048...4096).contains(key.keySizeInBits) else { return nil }
            self = .rsa(key)
        default:
            return nil
        }
    }
}

/// The signature algorithms this implementation signs and verifies (uaf-spec §3.1).
public enum SignatureSuite {
    /// Algorithms the verifier supports.
    public static let supportedAlgorithms: Set<SignatureAlgorithm> = [
        .secp256r1ECDSASHA256Raw, .secp256r1ECDSASHA256DER,
        .rsassaPSSSHA256Raw, .rsassaPSSSHA256DER, .rsaEMSAPKCS1SHA256Raw, .rsaEMSAPKCS1SHA256DER,
    ]

    /// Whether `algorithm` can be used with `key` at all.
    public static func isCompatible(_ algorithm: SignatureAlgorithm, with key: UAFPublicKey) -> Bool {
        switch (key, algorithm) {
        case (.p256, .secp256r1ECDSASHA256Raw), (.p256, .secp256r1ECDSASHA256DER): return true
        case (.rsa, .rsassaPSSSHA256Raw), (.rsa, .rsassaPSSSHA256DER), (.rsa, .rsaEMSAPKCS1SHA256Raw), (.rsa, .rsaEMSAPKCS1SHA256DER): return true
        default: return false
        }
    }

    /// Verifies `signature` over `message` (the signer hashes with SHA-256 itself).
    public static func verify(signature: [UInt8], over message: [UInt8], algorithm: SignatureAlgorithm, key: UAFPublicKey) -> Bool {
        switch (key, algorithm) {
        case (.p256(let key), .secp256r1ECDSASHA256Raw):
            guard signature.count == 64, let sig = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(sig, for: message)
        case (.p256(let key), .secp256r1ECDSASHA256DER):
            guard let sig = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(sig, for: message)
        case (.rsa(let key), .rsassaPSSSHA256Raw):
            return key.isValidSignature(.init(rawRepresentation: signature), for: message, padding: .PSS)
        case (.rsa(let key), .rsaEMSAPKCS1SHA256Raw):
            return key.isValidSignature(.init(rawRepresentation: signature), for: message, padding: .insecurePKCS1v1_5)
        case (.rsa(let key), .rsassaPSSSHA256DER):
            guard let raw = unwrapOctetString(signature) else { return false }
            return key.isValidSignature(.init(rawRepresentation: raw), for: message, padding: .PSS)
        case (.rsa(let key), .rsaEMSAPKCS1SHA256DER):
            guard let raw = unwrapOctetString(signature) else { return false }
            return key.isValidSignature(.init(rawRepresentation: raw), for: message, padding: .insecurePKCS1v1_5)
        default:
            return false
        }
    }

    /// Encodes a P-256 signature for `algorithm` (0x0001 raw R‖S, 0x0002 DER).
    public static func encode(_ signature: P256.Signing.ECDSASignature, as algorithm: SignatureAlgorithm) -> [UInt8] {
        algorithm == .secp256r1ECDSASHA256Raw ? Array(signature.rawRepresentation) : Array(signature.derRepresentation)
    }

    /// Encodes a P-256 public key in `encoding` (0x0100 X9.62 raw, 0x0101 DER SPKI).
    public static func encode(_ key: P256.Signing.PublicKey, as encoding: PublicKeyEncoding) -> [UInt8] {
        encoding == .eccX962Raw ? Array(key.x963Representation) : Array(key.derRepresentation)
    }

    /// RSA "_DER" signatures are a DER OCTET STRING wrapping S (uaf-spec §3.1).
    static func unwrapOctetString(_ bytes: [UInt8]) -> [UInt8]? {
        guard let octets = try? ASN1OctetString(derEncoded: bytes[...]) else { return nil }
        return Array(octets.bytes)
    }

    static func wrapOctetString(_ bytes: [UInt8]) -> [UInt8] {
        var serializer = DER.Serializer()
        try? serializer.serialize(ASN1OctetString(contentBytes: bytes[...]))
        return serializer.serializedBytes
    }

    /// Signs with an RSA key for one of the RSA algorithms (used by the Android-profile authenticators).
    public static func sign(_ message: [UInt8], with key: _RSA.Signing.PrivateKey, as algorithm: SignatureAlgorithm) throws -> [UInt8] {
        switch algorithm {
        case .rsassaPSSSHA256Raw: return Array(try key.signature(for: message, padding: .PSS).rawRepresentation)
        case .rsassaPSSSHA256DER: return wrapOctetString(Array(try key.signature(for: message, padding: .PSS).rawRepresentation))
        case .rsaEMSAPKCS1SHA256Raw: return Array(try key.signature(for: message, padding: .insecurePKCS1v1_5).rawRepresentation)
        case .rsaEMSAPKCS1SHA256DER: return wrapOctetString(Array(try key.signature(for: message, padding: .insecurePKCS1v1_5).rawRepresentation))
        default: throw CryptoKitError.incorrectParameterSize
        }
    }
}
