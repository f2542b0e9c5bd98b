import Foundation
import Primitives
import SQLKit

/// A passkey (WebAuthn) ceremony awaiting the browser's answer: found by its challenge, answered once (``UAFCeremony``
/// is UAF's). Stored in `webauthn_ceremonies`.
public struct PasskeyCeremony: Sendable, Equatable {
    public enum Kind: String, Sendable { case registration, authentication }
    /// base64url of the challenge (the key: the answer's clientDataJSON carries it).
    public var challenge: String
    /// nevisFIDO's `fido2SessionId`.
    public var sessionID: String
    public var kind: Kind
    /// The user a registration is for, or an authentication names; nil for a sign-in without a username.
    public var username: String?
    /// base64url of the user handle a registration offered.
    public var userHandle: String?
    /// `required`, `preferred` or `discouraged`: what the answer is held to.
    public var userVerification: String
    public var expiresAt: Date
    /// A registration for conditional create: its answer may lack user presence (WebAuthn §7.1 step 14).
    public var conditional: Bool
    /// base64url of the one credential that may answer a sign-in (an Auth Cloud approval for one passkey); nil when
    /// any of the user's may. Once the ceremony succeeded, the credential that answered (the new passkey of a
    /// registration), for the status.
    public var credentialID: String?

    public init(
        challenge: String, sessionID: String, kind: Kind, username: String?, userHandle: String?, userVerification: String, expiresAt: Date,
        conditional: Bool = false, credentialID: String? = nil
    ) {
        self.conditional = conditional
        self.credentialID = credentialID
        self.challenge = challenge
        self.sessionID = sessionID
        self.kind = kind
        self.username = username
        self.userHandle = userHandle
        self.userVerification = userVerification
        self.expiresAt = expiresAt
    }
}
