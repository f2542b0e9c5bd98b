import Foundation

/// What the app's passkey is made for: the relying party's `PublicKeyCredentialCreationOptions` as a platform
/// authenticator takes them (`ASAuthorizationPlatformPublicKeyCredentialProvider` on Apple platforms).
public struct PasskeyCreationRequest: Sendable, Equatable {
    /// The relying party ID (the site's domain, which the app's `webcredentials` association must name).
    public let relyingPartyID: String
    public let challenge: Data
    /// The user handle: opaque bytes, never the username.
    public let userID: Data
    public let userName: String
    public let displayName: String
    /// The user's credentials the server already holds: an authenticator that has one makes no second.
    public let excludedCredentialIDs: [Data]
    /// `required`, `preferred` or `discouraged`, as the server asks.
    public let userVerification: String
    /// `none`, `indirect`, `direct` or `enterprise`, as the server asks.
    public let attestation: String
    /// COSE algorithm identifiers in the server's order of preference.
    public let algorithms: [Int64]

    public init(
        relyingPartyID: String, challenge: Data, userID: Data, userName: String, displayName: String, excludedCredentialIDs: [Data],
        userVerification: String, attestation: String, algorithms: [Int64]
    ) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
        self.excludedCredentialIDs = excludedCredentialIDs
        self.userVerification = userVerification
        self.attestation = attestation
        self.algorithms = algorithms
    }
}

/// A new passkey, as the platform hands it over: what `navigator.credentials.create()` gives a page.
public struct PasskeyRegistrationResult: Sendable, Equatable {
    public let credentialID: Data
    public let clientDataJSON: Data
    public let attestationObject: Data
    public let transports: [String]

    public init(credentialID: Data, clientDataJSON: Data, attestationObject: Data, transports: [String]) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
    }
}

/// How the sign-in asks the user.
public enum PasskeyMediation: String, Sendable, Equatable {
    /// A sheet, now (the default).
    case modal
    /// AutoFill-assisted: the passkeys appear among the QuickType suggestions of a username field marked
    /// `.username` (`performAutoFillAssistedRequests` on Apple platforms), and the request waits for the user's pick.
    case autoFill
}

/// What a passkey sign-in asks of the platform: the relying party's `PublicKeyCredentialRequestOptions`.
public struct PasskeyAssertionRequest: Sendable, Equatable {
    public let relyingPartyID: String
    public let challenge: Data
    /// The credentials the server accepts; empty: any of the relying party's (a discoverable sign-in).
    public let allowedCredentialIDs: [Data]
    public let userVerification: String
    public let mediation: PasskeyMediation

    public init(relyingPartyID: String, challenge: Data, allowedCredentialIDs: [Data], userVerification: String, mediation: PasskeyMediation) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.allowedCredentialIDs = allowedCredentialIDs
        self.userVerification = userVerification
        self.mediation = mediation
    }
}

/// A passkey's signature, as the platform hands it over: what `navigator.credentials.get()` gives a page.
public struct PasskeyAssertionResult: Sendable, Equatable {
    public let credentialID: Data
    public let clientDataJSON: Data
    public let authenticatorData: Data
    public let signature: Data
    /// The user handle the passkey was made with (discoverable credentials carry it).
    public let userHandle: Data?

    public init(credentialID: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data, userHandle: Data?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}

/// Why the platform made no passkey or signature. The SDK turns each into the operation's error
/// (``OperationError/FidoError(errorCode:cause:)`` with this as its cause): cancelled is `userCanceled`; no
/// credential, already registered and not supported are `noSuitableAuthenticator`; anything else `unknown`.
public struct PasskeyFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The user dismissed the sheet (or the app cancelled the request).
        case cancelled
        /// No passkey of the relying party among the allowed ones on this device (or in the user's keychain).
        case noCredential
        /// The authenticator already holds one of the excluded credentials: this user has a passkey here.
        case alreadyRegistered
        /// The device or app cannot use passkeys for this relying party (no `webcredentials` association, an OS
        /// too old, a Simulator without an Apple Account).
        case notSupported
        /// Anything else the platform reports.
        case failed
    }
    public let kind: Kind
    public let reason: String
    public init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }
    public var description: String { reason }
}

/// The platform's passkey authenticator: Apple's through AuthenticationServices (`ApplePasskeyProvider`), or the
/// simulated platform's software one. The SDK runs the relying party's ceremonies (nevisFIDO's FIDO2 API) around it.
public protocol PasskeyProvider: Sendable {
    func createPasskey(_ request: PasskeyCreationRequest) async throws(PasskeyFailure) -> PasskeyRegistrationResult
    func assertPasskey(_ request: PasskeyAssertionRequest) async throws(PasskeyFailure) -> PasskeyAssertionResult
}
