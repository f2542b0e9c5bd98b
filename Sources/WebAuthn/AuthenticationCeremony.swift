import Crypto

/// A credential as the relying party stored it at registration (§7.1 step 27).
public struct StoredCredential: Sendable {
    public var id: [UInt8]
    public var publicKey: COSEKey
    /// The user handle of the account the credential belongs to.
    public var userHandle: [UInt8]
    public var signCount: UInt32
    /// BE at registration: it never changes for a credential.
    public var backupEligible: Bool

    public init(id: [UInt8], publicKey: COSEKey, userHandle: [UInt8], signCount: UInt32, backupEligible: Bool) {
        self.id = id
        self.publicKey = publicKey
        self.userHandle = userHandle
        self.signCount = signCount
        self.backupEligible = backupEligible
    }
}

/// What the client sent back from `navigator.credentials.get()`.
public struct AssertionResponse: Sendable {
    public var credentialID: [UInt8]
    public var clientDataJSON: [UInt8]
    public var authenticatorData: [UInt8]
    public var signature: [UInt8]
    /// The user handle, present for discoverable credentials.
    public var userHandle: [UInt8]?

    public init(credentialID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], userHandle: [UInt8]?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// `userVerification` in the options of either ceremony.
public enum UserVerificationRequirement: String, Sendable { case required, preferred, discouraged }

/// What the relying party asked for in `PublicKeyCredentialRequestOptions`.
public struct AssertionExpectation: Sendable {
    public typealias UserVerification = UserVerificationRequirement

    public var challenge: [UInt8]
    /// The credential IDs offered; empty for a sign-in without a username (discoverable credentials, autofill).
    public var allowCredentials: [[UInt8]]
    public var userVerification: UserVerification

    public init(challenge: [UInt8], allowCredentials: [[UInt8]] = [], userVerification: UserVerification = .preferred) {
        self.challenge = challenge
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
    }
}

/// A verified assertion: what to store back into the credential record (§7.2 step 24).
public struct VerifiedAssertion: Sendable, Equatable {
    public var signCount: UInt32
    public var userVerified: Bool
    public var backupState: Bool
    /// The authenticator extension outputs, unprocessed (§7.2 step 23 is the caller's: it knows what it asked for).
    public var extensions: [String]

    public init(signCount: UInt32, userVerified: Bool, backupState: Bool, extensions: [String]) {
        self.signCount = signCount
        self.userVerified = userVerified
        self.backupState = backupState
        self.extensions = extensions
    }
}

/// The authentication ceremony (WebAuthn §7.2), the relying party's steps in order; every refusal is a
/// ``WebAuthnError`` that names its step. Finding the stored credential (step 6) is the caller's, by the response's
/// credential ID; this checks that the caller found the right one.
public struct AuthenticationCeremony: Sendable {
    public var relyingParty: RelyingParty

    public init(relyingParty: RelyingParty) { self.relyingParty = relyingParty }

    public func verify(
        _ response: AssertionResponse, expected: AssertionExpectation, credential: StoredCredential
    ) throws(WebAuthnError) -> VerifiedAssertion {
        func fail(_ reason: WebAuthnError.Reason) -> WebAuthnError { WebAuthnError(.authentication, reason) }
        // Step 5.
        if !expected.allowCredentials.isEmpty, !expected.allowCredentials.contains(response.credentialID) {
            throw fail(.credentialNotAllowed)
        }
        // Step 6: the credential found is the one answering, and the user handle, when the client sends one (always
        // for a sign-in without a username), is its user's.
        guard response.credentialID == credential.id else { throw fail(.credentialMismatch) }
        if let handle = response.userHandle {
            guard handle == credential.userHandle else { throw fail(.userHandleMismatch) }
        } else if expected.allowCredentials.isEmpty {
            throw fail(.userHandleMismatch)
        }
        // Steps 7–14.
        guard let client = CollectedClientData(bytes: response.clientDataJSON) else { throw fail(.clientDataMalformed) }
        try relyingParty.check(client, type: "webauthn.get", challenge: expected.challenge, ceremony: .authentication)
        // Steps 15–18 (BS without BE is refused as the data is parsed).
        let data: AuthenticatorData
        do { data = try AuthenticatorData(bytes: response.authenticatorData) } catch { throw fail(.authenticatorDataMalformed(error.reason)) }
        guard data.rpIDHash == relyingParty.idHash else { throw fail(.rpIDHashMismatch) }
        guard data.flags.contains(.userPresent) else { throw fail(.userNotPresent) }
        if expected.userVerification == .required, !data.flags.contains(.userVerified) { throw fail(.userNotVerified) }
        // Step 19: eligibility is fixed when the credential is made; a change means another authenticator.
        guard data.flags.contains(.backupEligible) == credential.backupEligible else { throw fail(.backupEligibilityChanged) }
        // Steps 20–21.
        let signed = response.authenticatorData + SHA256.hash(data: response.clientDataJSON)
        guard credential.publicKey.isValidSignature(response.signature, for: signed) else { throw fail(.signatureInvalid) }
        // Step 22: an authenticator that never counts sends 0 (synced passkeys); with both at 0 there is nothing to
        // compare. Otherwise the counter must grow: a counter that does not is a cloned authenticator's signal, and a
        // bank refuses it (a drop back to 0 after counting included).
        if data.signCount != 0 || credential.signCount != 0, data.signCount <= credential.signCount {
            throw fail(.signCounterNotIncreased(stored: credential.signCount, received: data.signCount))
        }
        return VerifiedAssertion(
            signCount: data.signCount, userVerified: data.flags.contains(.userVerified),
            backupState: data.flags.contains(.backupState),
            extensions: data.extensions?.keys.compactMap(\.text) ?? [])
    }
}
