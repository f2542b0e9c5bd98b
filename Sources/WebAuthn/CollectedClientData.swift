import WireJSON

/// `clientDataJSON` (WebAuthn §5.8.1) as the client wrote it: parsed as JSON, never compared against a template,
/// and kept byte for byte, because the signature covers its hash.
public struct CollectedClientData: Sendable {
    /// `webauthn.create` or `webauthn.get`.
    public let type: String
    /// The challenge, base64url without padding, as the client wrote it.
    public let challenge: String
    public let origin: String
    /// True when the ceremony ran in a cross-origin iframe (absent means false).
    public let crossOrigin: Bool
    /// The origin of the top-level page, present only inside an iframe.
    public let topOrigin: String?

    private struct Members: Decodable {
        var type: String
        var challenge: String
        var origin: String
        var crossOrigin: Bool?
        var topOrigin: String?
        /// Level 2's reserved member: when present it must be an object with a known status (the FIDO conformance
        /// tools still send malformed ones).
        var tokenBinding: TokenBinding?
        struct TokenBinding: Decodable {
            var status: Status
            enum Status: String, Decodable { case present, supported, notSupported = "not-supported" }
        }
    }

    /// The client data in `bytes`: UTF-8 (a leading byte-order mark is skipped by the wire JSON reader), one JSON object with
    /// `type`, `challenge` and `origin` as strings, `crossOrigin` a boolean and `topOrigin` a string when present.
    /// Unknown members are ignored (clients add some on purpose); a member given twice is refused (the wire JSON
    /// reader's rule), so no two readers of these bytes can see different values.
    /// Nil for anything else (``WebAuthnError/Reason/clientDataMalformed``).
    public init?(bytes: [UInt8]) {
        guard let members = try? WireJSONDecoder().decode(Members.self, from: bytes) else { return nil }
        type = members.type
        challenge = members.challenge
        origin = members.origin
        crossOrigin = members.crossOrigin ?? false
        topOrigin = members.topOrigin
    }
}
