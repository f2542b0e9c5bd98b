import Crypto
import Foundation
import Primitives

/// Compact JWE (RFC 7516) with a shared key-encryption key: `A256KW` (RFC 7518 §4.4, AES Key Wrap of a fresh content
/// key) and `A256GCM`, the form Google's Play Integrity API encrypts its verdict tokens in for local decryption. `alg`
/// and `enc` are checked against these, never taken from the token; a compressed (`zip`) or `crit` token is refused.
public enum KeyWrappedJWE {
    public static let keyManagementAlgorithm = "A256KW"
    public static let contentEncryption = "A256GCM"

    struct Header: Codable {
        var alg: String
        var enc: String
        var cty: String?
        var zip: String?
        var crit: [String]?
    }

    /// Encrypts `plaintext` under a fresh content key wrapped with `key` (256 bits).
    public static func encrypt(_ plaintext: [UInt8], key: SymmetricKey, contentType: String? = nil) throws -> String {
        guard key.bitCount == 256 else { throw JOSEError(.invalidKey("A256KW needs a 256-bit key")) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let encodedHeader = Base64URL.encode(try encoder.encode(Header(alg: keyManagementAlgorithm, enc: contentEncryption, cty: contentType)))
        let contentKey = SymmetricKey(size: .bits256)
        let wrapped = try AES.KeyWrap.wrap(contentKey, using: key)
        // RFC 7516 §5.1 step 14: the additional authenticated data is the ASCII of the encoded protected header.
        let sealed = try AES.GCM.seal(plaintext, using: contentKey, nonce: AES.GCM.Nonce(), authenticating: Array(encodedHeader.utf8))
        return [
            encodedHeader, Base64URL.encode(wrapped), Base64URL.encode(Array(sealed.nonce)), Base64URL.encode(sealed.ciphertext),
            Base64URL.encode(sealed.tag),
        ].joined(separator: ".")
    }

    /// Parses and decrypts a compact JWE with the key-encryption key `key`.
    public static func decrypt(_ compact: String, key: SymmetricKey) throws(JOSEError) -> [UInt8] {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5 else { throw JOSEError(.malformed("a compact JWE has five dot-separated parts")) }
        guard let headerBytes = Base64URL.decodeBytes(parts[0]), let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            throw JOSEError(.malformed("the protected header is not base64url JSON with alg and enc"))
        }
        guard header.alg == keyManagementAlgorithm else { throw JOSEError(.unsupportedAlgorithm(header.alg)) }
        guard header.enc == contentEncryption else { throw JOSEError(.unsupportedAlgorithm(header.enc)) }
        // Decompressing before authenticating invites zip bombs, and a critical extension must be understood.
        guard header.zip == nil else { throw JOSEError(.unsupportedAlgorithm("zip \(header.zip ?? "")")) }
        guard header.crit == nil else { throw JOSEError(.malformed("crit names extensions this reader does not understand")) }
        guard let wrapped = Base64URL.decodeBytes(parts[1]), wrapped.count == 40 else {
            throw JOSEError(.malformed("the encrypted key is not a wrapped 256-bit key (40 bytes)"))
        }
        guard let iv = Base64URL.decodeBytes(parts[2]), iv.count == 12 else { throw JOSEError(.malformed("the IV is not 96 bits")) }
        guard let ciphertext = Base64URL.decodeBytes(parts[3]) else { throw JOSEError(.malformed("the ciphertext is not base64url")) }
        guard let tag = Base64URL.decodeBytes(parts[4]), tag.count == 16 else { throw JOSEError(.malformed("the tag is not 128 bits")) }
        do {
            // Unwrapping checks RFC 3394's integrity value: another key-encryption key fails here.
            let contentKey = try AES.KeyWrap.unwrap(wrapped, using: key)
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: ciphertext, tag: tag)
            return Array(try AES.GCM.open(box, using: contentKey, authenticating: Array(parts[0].utf8)))
        } catch {
            throw JOSEError(.decryptionFailed)
        }
    }
}
