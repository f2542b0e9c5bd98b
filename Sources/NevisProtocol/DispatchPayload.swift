import Crypto
import Foundation
import JOSE
import Primitives

/// The out-of-band payload a dispatch token travels in (QR code, link, push, pending operations), as the server
/// writes it and the SDK reads it. One home for the wire format of server-api.md §(f).1; our contract:
///
/// Plain (a dispatch without a known dispatch target, e.g. a first registration by QR code), the seed's form:
/// ```json
/// {"nma_data":{"redeem_url":"https://host/nevisfido/token/redeem/registration","token":"…"},
///  "nma_data_content_type":"application/json","nma_data_version":"1"}
/// ```
/// Encrypted (whenever the dispatch names a dispatch target, and always for push): `nma_data` is a compact JWE
/// (`JOSE.JWE`: ECDH-ES + A256GCM to the target's `encryptionKey`, `kid` = the dispatch target id,
/// `cty` = `application/json`) whose plaintext is the JSON object of the plain form's `nma_data`:
/// ```json
/// {"nma_data":"eyJhbGciOiJFQ0RILUVTIiwi…","nma_data_content_type":"application/jose","nma_data_version":"1"}
/// ```
/// `nma_data` may carry `data`, the `data` member of the dispatch request's `dispatchInformation`, for the app.
/// Links carry the payload's JSON base64url-encoded in their `dispatchTokenResponse` query parameter.
public enum DispatchPayload {
    public static let plainContentType = "application/json"
    public static let encryptedContentType = "application/jose"
    public static let version = "1"
    /// The query parameter of link dispatchers.
    public static let linkParameter = "dispatchTokenResponse"
    /// A payload is small (a token, a URL, some app data); anything larger is refused before parsing.
    public static let maximumLength = 16 * 1024

    /// What the token redeems: the token, where to redeem it, and the relying party's optional data.
    public struct Content: Codable, Hashable, Sendable {
        public var token: String
        public var redeemURL: String
        public var data: String?
        public init(token: String, redeemURL: String, data: String? = nil) {
            self.token = token
            self.redeemURL = redeemURL
            self.data = data
        }
        enum CodingKeys: String, CodingKey { case token, redeemURL = "redeem_url", data }
    }

    /// A parsed payload, before decryption.
    public enum Envelope: Hashable, Sendable {
        case plain(Content, version: String)
        /// The compact JWE and the payload version.
        case encrypted(String, version: String)

        public var contentType: String {
            if case .plain = self { return DispatchPayload.plainContentType }
            return DispatchPayload.encryptedContentType
        }
        public var version: String {
            switch self {
            case .plain(_, let v), .encrypted(_, let v): return v
            }
        }

        /// The content: as is, or decrypted with the device's encryption key.
        public func open(with key: () throws -> P256.KeyAgreement.PrivateKey?) throws(DispatchPayloadError) -> Content {
            switch self {
            case .plain(let content, _): return content
            case .encrypted(let jwe, _):
                let privateKey: P256.KeyAgreement.PrivateKey?
                do { privateKey = try key() } catch { throw .noDecryptionKey("the device's encryption key is unreadable: \(error)") }
                guard let privateKey else { throw .noDecryptionKey("this device has no encryption key: the payload is for another device") }
                let plaintext: [UInt8]
                do { plaintext = try JWE.decrypt(jwe, key: privateKey).plaintext } catch { throw .decryption(error) }
                guard let content = try? JSONDecoder().decode(Content.self, from: Data(plaintext)) else {
                    throw .malformed("the decrypted nma_data is not an object with token and redeem_url")
                }
                return try DispatchPayload.validated(content)
            }
        }
    }

    /// The payload's JSON, plain.
    public static func plain(_ content: Content) -> String {
        encode(Wire(data: .object(content), contentType: plainContentType, version: version))
    }

    /// The payload's JSON, with `nma_data` encrypted to `recipient`.
    public static func encrypted(_ content: Content, to recipient: P256.KeyAgreement.PublicKey, keyID: String) throws -> String {
        let jwe = try JWE.encrypt(Array(encode(content).utf8), to: recipient, keyID: keyID, contentType: plainContentType)
        return encode(Wire(data: .jwe(jwe), contentType: encryptedContentType, version: version))
    }

    /// The link a link dispatcher hands out: `base?dispatchTokenResponse=<base64url of the payload JSON>`.
    /// The FCM `data` map of a payload (our contract): the payload JSON's members, each a string (FCM data values
    /// are strings). The device turns the map back into a JSON object and decodes it like any payload.
    public static func pushData(_ payload: String) throws(DispatchPayloadError) -> [String: String] {
        guard let map = try? JSONDecoder().decode([String: String].self, from: Data(payload.utf8)) else {
            throw .malformed("only the encrypted form (every member a string) is sent by push")
        }
        return map
    }

    public static func link(base: String, payload: String) -> String {
        base + (base.contains("?") ? "&" : "?") + linkParameter + "=" + Base64URL.encode(Array(payload.utf8))
    }

    /// Parses the payload's JSON. Anything but the two documented forms is ``DispatchPayloadError/malformed(_:)``.
    public static func parse(json: String) throws(DispatchPayloadError) -> Envelope {
        guard json.utf8.count <= maximumLength else { throw .malformed("longer than \(maximumLength) bytes") }
        guard let wire = try? JSONDecoder().decode(Wire.self, from: Data(json.utf8)) else {
            throw .malformed("not a JSON object with nma_data, nma_data_content_type and nma_data_version")
        }
        guard wire.version == version else { throw .malformed("unsupported nma_data_version \(wire.version)") }
        switch (wire.contentType.lowercased(), wire.data) {
        case (plainContentType, .object(let content)): return .plain(try validated(content), version: wire.version)
        case (encryptedContentType, .jwe(let jwe)): return .encrypted(jwe, version: wire.version)
        default: throw .malformed("nma_data does not match nma_data_content_type \(wire.contentType)")
        }
    }

    /// Parses base64url of the payload's JSON (a QR code's or a link's content), or a whole link that carries it
    /// in `dispatchTokenResponse`.
    public static func parse(base64URL text: String) throws(DispatchPayloadError) -> Envelope {
        var encoded = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if encoded.contains("?"), let components = URLComponents(string: encoded),
            let value = components.queryItems?.first(where: { $0.name == linkParameter })?.value
        {
            encoded = value
        }
        guard encoded.utf8.count <= maximumLength * 2, let bytes = Base64URL.decodeBytes(encoded),
            let json = String(bytes: bytes, encoding: .utf8)
        else {
            throw .malformed("not base64url-encoded UTF-8")
        }
        return try parse(json: json)
    }

    static func validated(_ content: Content) throws(DispatchPayloadError) -> Content {
        guard !content.token.isEmpty, content.token.utf8.count <= 256 else { throw .malformed("the token is empty or too long") }
        // The redeem URL is where the device sends the token: only https, so a payload cannot send it in clear.
        guard let url = URL(string: content.redeemURL), url.scheme?.lowercased() == "https", url.host != nil else {
            throw .malformed("redeem_url is not an https URL")
        }
        return content
    }

    private static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }

    private struct Wire: Codable {
        enum DataMember: Codable {
            case object(Content), jwe(String)
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let jwe = try? container.decode(String.self) { self = .jwe(jwe) } else { self = .object(try container.decode(Content.self)) }
            }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                switch self {
                case .object(let content): try container.encode(content)
                case .jwe(let jwe): try container.encode(jwe)
                }
            }
        }
        var data: DataMember
        var contentType: String
        var version: String
        enum CodingKeys: String, CodingKey { case data = "nma_data", contentType = "nma_data_content_type", version = "nma_data_version" }
    }
}

/// Why a payload was refused.
public enum DispatchPayloadError: Error, Sendable, CustomStringConvertible {
    /// Not one of the two documented forms.
    case malformed(String)
    /// Encrypted, but this device has no key to open it.
    case noDecryptionKey(String)
    /// The JWE does not decrypt (tampered, or for another device) or is not our recipe.
    case decryption(JOSEError)

    public var description: String {
        switch self {
        case .malformed(let detail): return "malformed out-of-band payload: \(detail)"
        case .noDecryptionKey(let detail): return "cannot decrypt the out-of-band payload: \(detail)"
        case .decryption(let error): return "cannot decrypt the out-of-band payload: \(error)"
        }
    }
}
