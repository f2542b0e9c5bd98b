import Crypto
import Primitives

/// What a relying party accepts in a ceremony: its RP ID and the origins its pages and apps run at.
public struct RelyingParty: Sendable {
    /// The RP ID: the domain credentials are scoped to (`example.org`).
    public var id: String
    /// Every origin a ceremony may come from, compared as exact strings (§13.5.9): web origins
    /// (`https://example.org`, the related origins served at `/.well-known/webauthn`), Android apps
    /// (`android:apk-key-hash:<base64url SHA-256 of the signing certificate>`) and iOS apps (their associated domain's
    /// `https://` origin).
    public var origins: Set<String>
    /// Top-level origins that may embed a ceremony in a cross-origin iframe. Empty (the default): a ceremony that says
    /// `crossOrigin: true` or names a `topOrigin` is refused (§7.1 steps 10 and 11, §7.2 steps 13 and 14). Why: a bank
    /// that did not plan to be framed should not have its sign-in framed by another site.
    public var topOrigins: Set<String>

    public init(id: String, origins: Set<String>, topOrigins: Set<String> = []) {
        self.id = id
        self.origins = origins
        self.topOrigins = topOrigins
    }

    /// SHA-256 of the RP ID: what authenticator data must start with.
    public var idHash: [UInt8] { Array(SHA256.hash(data: Array(id.utf8))) }

    /// §7.1 steps 7–11, §7.2 steps 10–14: the client data's type, challenge and origins.
    func check(_ client: CollectedClientData, type: String, challenge: [UInt8], ceremony: WebAuthnError.Ceremony) throws(WebAuthnError) {
        guard client.type == type else { throw WebAuthnError(ceremony, .typeMismatch(client.type)) }
        // The challenge is compared as bytes after decoding: a client that pads, or writes another base64url form of
        // the same bytes, is no attacker; bytes that differ are.
        guard let received = Base64URL.decodeBytes(client.challenge), ConstantTime.equal(received, challenge) else {
            throw WebAuthnError(ceremony, .challengeMismatch)
        }
        guard origins.contains(client.origin) else { throw WebAuthnError(ceremony, .originNotAllowed(client.origin)) }
        if client.crossOrigin, topOrigins.isEmpty { throw WebAuthnError(ceremony, .crossOriginNotAllowed) }
        if let top = client.topOrigin {
            // A top origin without crossOrigin is a contradiction: refused like one not configured.
            guard client.crossOrigin, topOrigins.contains(top) else { throw WebAuthnError(ceremony, .topOriginNotAllowed(top)) }
        }
    }
}
