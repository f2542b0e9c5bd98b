import UAF

/// The credential that opened a session: a UAF authenticator's key or a passkey. A session names it so that removing
/// the credential ends the sessions it opened, and so that its JWT says what proved the user.
public enum SessionCredential: Sendable, Equatable, Hashable {
    /// A UAF key: its authenticator's AAID (normalised, see `AAID.normalized`) and its KeyID (base64url).
    case uafKey(aaid: String, keyID: String)
    /// A passkey: its credential ID (base64url).
    case passkey(credentialID: String)

    /// The kinds, as `sessions.credential_kind` stores them and the JWT's `method` claim names them.
    public enum Kind: String, Sendable, Equatable { case uaf, passkey }

    /// A UAF key, its AAID normalised (so a session of `f1d0#1001` matches its registration's `F1D0#1001`).
    public static func uaf(aaid: String, keyID: String) -> SessionCredential { .uafKey(aaid: AAID.normalized(aaid), keyID: keyID) }

    public var kind: Kind {
        switch self {
        case .uafKey: .uaf
        case .passkey: .passkey
        }
    }

    /// The key's KeyID or the passkey's credential ID: what identifies the credential within its kind.
    public var id: String {
        switch self {
        case .uafKey(_, let keyID): keyID
        case .passkey(let credentialID): credentialID
        }
    }

    /// The UAF key's AAID; nil for a passkey, which has none.
    public var aaid: String? {
        switch self {
        case .uafKey(let aaid, _): aaid
        case .passkey: nil
        }
    }

    /// The credential a stored row names; nil for a kind this version does not know, or a UAF row without an AAID.
    init?(kind: String, aaid: String?, id: String) {
        switch Kind(rawValue: kind) {
        case .uaf?:
            guard let aaid else { return nil }
            self = .uafKey(aaid: aaid, keyID: id)
        case .passkey?: self = .passkey(credentialID: id)
        case nil: return nil
        }
    }
}
