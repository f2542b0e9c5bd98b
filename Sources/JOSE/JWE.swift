import Crypto
import Foundation
import Primitives

/// The protected header of a JWE. Our contract (server-api.md §C.4 and §(f).2 leave it open):
///
/// ```json
/// {"alg":"ECDH-ES","cty":"application/json","enc":"A256GCM",
///  "epk":{"crv":"P-256","kty":"EC","x":"…","y":"…"},"kid":"<dispatch target id>"}
/// ```
///
/// `kid` names the recipient's dispatch target (informational; the recipient decrypts with its own key) and
/// `cty` the media type of the plaintext. Members are serialized sorted, without escaped slashes.
public struct JWEHeader: Codable, Hashable, Sendable {
    public var alg: String
    public var enc: String
    public var epk: JWK
    public var kid: String?
    public var cty: String?
}

/// Compact JWE (RFC 7516) with one recipe only: key agreement `ECDH-ES` (direct, RFC 7518 §4.6) on P-256 and
/// content encryption `A256GCM` (RFC 7518 §5.3). The recipe is never taken from the token: any other `alg` or `enc`
/// is refused, so a sender cannot downgrade the recipient to a weaker algorithm.
public enum JWE {
    public static let keyManagementAlgorithm = "ECDH-ES"
    public static let contentEncryption = "A256GCM"

    /// Encrypts `plaintext` to `recipient` with a fresh ephemeral key and returns
    /// `header..iv.ciphertext.tag` (the encrypted-key part is empty for direct key agreement).
    public static func encrypt(
        _ plaintext: [UInt8], to recipient: P256.KeyAgreement.PublicKey,
        keyID: String? = nil, contentType: String? = nil
    ) throws -> String {
        let ephemeral = P256.KeyAgreement.PrivateKey()
        let header = JWEHeader(
            alg: keyManagementAlgorithm, enc: contentEncryption,
            epk: JWK(encryptionKey: ephemeral.publicKey).bare, kid: keyID, cty: contentType)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let encodedHeader = Base64URL.encode(try encoder.encode(header))
        let key = try contentKey(ephemeral.sharedSecretFromKeyAgreement(with: recipient))
        // RFC 7516 §5.1 step 14: the additional authenticated data is the ASCII of the encoded protected header.
        let sealed = try AES.GCM.seal(plaintext, using: key, nonce: AES.GCM.Nonce(), authenticating: Array(encodedHeader.utf8))
        return [
            encodedHeader, "", Base64URL.encode(Array(sealed.nonce)), Base64URL.encode(sealed.ciphertext),
            Base64URL.encode(sealed.tag),
        ].joined(separator: ".")
    }

    /// A decrypted JWE.
    public struct Decrypted: Sendable, Hashable {
        public let header: JWEHeader
        public let plaintext: [UInt8]
    }

    /// Parses and decrypts a compact JWE with the recipient's private key.
    public static func decrypt(_ compact: String, key: P256.KeyAgreement.PrivateKey) throws(JOSEError) -> Decrypted {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5 else { throw JOSEError(.malformed("a compact JWE has five dot-separated parts")) }
        guard let headerBytes = Base64URL.decodeBytes(parts[0]),
            let header = try? JSONDecoder().decode(JWEHeader.self, from: Data(headerBytes))
        else {
            throw JOSEError(.malformed("the protected header is not base64url JSON with alg, enc and epk"))
        }
        guard header.alg == keyManagementAlgorithm else { throw JOSEError(.unsupportedAlgorithm(header.alg)) }
        guard header.enc == contentEncryption else { throw JOSEError(.unsupportedAlgorithm(header.enc)) }
        // Direct key agreement has no encrypted key; a non-empty one means another recipe.
        guard parts[1].isEmpty else { throw JOSEError(.malformed("ECDH-ES carries no encrypted key")) }
        guard let iv = Base64URL.decodeBytes(parts[2]), iv.count == 12 else { throw JOSEError(.malformed("the IV is not 96 bits")) }
        guard let ciphertext = Base64URL.decodeBytes(parts[3]) else { throw JOSEError(.malformed("the ciphertext is not base64url")) }
        guard let tag = Base64URL.decodeBytes(parts[4]), tag.count == 16 else { throw JOSEError(.malformed("the tag is not 128 bits")) }
        // The ephemeral key must be a point on P-256 (checked by swift-crypto), which defeats invalid-curve attacks.
        let ephemeral = try header.epk.p256KeyAgreementKey()
        let plaintext: [UInt8]
        do {
            let shared = try key.sharedSecretFromKeyAgreement(with: ephemeral)
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: ciphertext, tag: tag)
            plaintext = Array(try AES.GCM.open(box, using: contentKey(shared), authenticating: Array(parts[0].utf8)))
        } catch {
            throw JOSEError(.decryptionFailed)
        }
        return Decrypted(header: header, plaintext: plaintext)
    }

    /// The Concat KDF of RFC 7518 §4.6.2 (NIST SP 800-56A, SHA-256) for direct ECDH-ES with A256GCM:
    /// one round of SHA-256(counter ‖ Z ‖ OtherInfo), where OtherInfo is AlgorithmID ("A256GCM", the `enc` value
    /// for direct agreement), empty PartyUInfo and PartyVInfo (we send no `apu`/`apv`), and the key length in bits.
    static func contentKey(_ shared: SharedSecret) throws -> SymmetricKey {
        var input = bigEndian32(1)
        shared.withUnsafeBytes { input.append(contentsOf: $0) }
        input += bigEndian32(UInt32(contentEncryption.utf8.count)) + Array(contentEncryption.utf8)
        input += bigEndian32(0) + bigEndian32(0)  // PartyUInfo, PartyVInfo: empty
        input += bigEndian32(256)  // SuppPubInfo: keydatalen in bits
        return SymmetricKey(data: SHA256.hash(data: input))
    }

    private static func bigEndian32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

extension JWK {
    /// The key with only the members RFC 7638 requires (an `epk` carries no `use`, `alg` or `kid`).
    var bare: JWK {
        var key = self
        key.kid = nil
        key.use = nil
        key.alg = nil
        return key
    }
}
