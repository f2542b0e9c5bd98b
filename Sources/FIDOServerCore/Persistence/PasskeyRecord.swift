import Foundation
import Primitives
import SQLKit

/// A passkey: a WebAuthn credential record (WebAuthn §7.1 step 27) and what the server knows of its authenticator.
public struct PasskeyRecord: Sendable, Equatable {
    /// base64url of the credential ID.
    public var credentialID: String
    public var username: String
    /// base64url of the user handle the credential was created with (`user.id`).
    public var userHandle: String
    /// The credential public key as COSE_Key bytes.
    public var publicKey: [UInt8]
    public var signCount: UInt32
    /// UV at registration (`uvInitialized`).
    public var userVerifiedAtRegistration: Bool
    public var backupEligible: Bool
    public var backupState: Bool
    /// The transports the client reported, returned in allow and exclude lists as hints.
    public var transports: [String]
    /// The authenticator model, as a lower-case UUID (all zeros when the authenticator does not say).
    public var aaguid: String
    public var attestationFormat: String
    /// `none`, `self`, `basic`, `attCA` or `anonCA`.
    public var attestationType: String
    /// `credProps.rk`: whether the passkey is discoverable; nil when the client did not say.
    public var discoverable: Bool?
    /// A name for the passkey (nevisFIDO's `userFriendlyName`).
    public var name: String?
    public var createdAt: Date
    public var lastUsedAt: Date?
    /// Whether its attestation chained to an accepted root at registration: `trusted`, `untrusted`; nil for a passkey
    /// registered before the server kept it.
    public var trust: String?

    public init(
        credentialID: String, username: String, userHandle: String, publicKey: [UInt8], signCount: UInt32, userVerifiedAtRegistration: Bool,
        backupEligible: Bool, backupState: Bool, transports: [String], aaguid: String, attestationFormat: String, attestationType: String,
        discoverable: Bool?, name: String?, createdAt: Date, lastUsedAt: Date? = nil, trust: String? = nil
    ) {
        self.trust = trust
        self.credentialID = credentialID
        self.username = username
        self.userHandle = userHandle
        self.publicKey = publicKey
        self.signCount = signCount
        self.userVerifiedAtRegistration = userVerifiedAtRegistration
        self.backupEligible = backupEligible
        self.backupState = backupState
        self.transports = transports
        self.aaguid = aaguid
        self.attestationFormat = attestationFormat
        self.attestationType = attestationType
        self.discoverable = discoverable
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}
