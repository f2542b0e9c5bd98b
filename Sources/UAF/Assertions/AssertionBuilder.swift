import Crypto
import Foundation

/// Builds UAFV1TLV assertions the way an authenticator does (uaf-spec §2.3, §2.4): canonical tag order, the
/// signature computed over the whole signed TLV (header included).
public enum AssertionBuilder {
    /// Builds a registration assertion with surrogate basic attestation: `sign` is the new UAuth key itself.
    public static func registration(_ krd: KeyRegistrationData, sign: ([UInt8]) throws -> [UInt8]) throws -> [UInt8] {
        let signed = try krd.encoded()
        return try RegistrationAssertion.encode(signedKRD: signed, attestation: .basicSurrogate(signature: try sign(signed)))
    }

    /// Builds a registration assertion with full basic attestation by an attestation key and its certificates.
    public static func registration(
        _ krd: KeyRegistrationData, attestationCertificates: [[UInt8]], sign: ([UInt8]) throws -> [UInt8]
    ) throws -> [UInt8] {
        let signed = try krd.encoded()
        return try RegistrationAssertion.encode(
            signedKRD: signed, attestation: .basicFull(signature: try sign(signed), certificates: attestationCertificates))
    }

    /// Builds an authentication assertion.
    public static func authentication(_ signedData: SignedData, sign: ([UInt8]) throws -> [UInt8]) throws -> [UInt8] {
        let signed = try signedData.encoded()
        return try AuthenticationAssertion.encode(signedData: signed, signature: try sign(signed))
    }

    /// Signs with a P-256 key in the encoding `algorithm` requires.
    public static func p256Signer(_ key: P256.Signing.PrivateKey, algorithm: SignatureAlgorithm) -> ([UInt8]) throws -> [UInt8] {
        { message in SignatureSuite.encode(try key.signature(for: message), as: algorithm) }
    }
}
