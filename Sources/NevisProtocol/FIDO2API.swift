import WireJSON

/// nevisFIDO's FIDO2 HTTP API (the FIDO conformance server API with nevisFIDO's members): the bodies of
/// `POST /nevisfido/fido2/attestation/options|result` and `/assertion/options|result`. Binary values are base64url
/// text; the server reads them with or without padding and writes them without. Members a browser's `toJSON()` adds
/// and this API does not name are ignored.
public enum FIDO2API {
    public static let base = "/nevisfido/fido2"
    public static let attestationOptionsPath = "\(base)/attestation/options"
    public static let attestationResultPath = "\(base)/attestation/result"
    public static let assertionOptionsPath = "\(base)/assertion/options"
    public static let assertionResultPath = "\(base)/assertion/result"
    /// Ours: the signed-in user's passkeys (`GET`), one of them renamed (`PATCH …/<credentialId>`) or removed
    /// (`DELETE …/<credentialId>`).
    public static let passkeysPath = "\(base)/passkeys"
    /// nevisFIDO's status service: how a ceremony stands, by its `fido2SessionId`.
    public static let statusPath = "\(base)/status"
    /// Related origins (WebAuthn §5.11), served from the RP ID's host.
    public static let relatedOriginsPath = "/.well-known/webauthn"

    /// `authenticatorSelection` of a registration options request and answer.
    public struct AuthenticatorSelection: Codable, Sendable, Equatable {
        public var authenticatorAttachment: String?
        public var residentKey: String?
        public var requireResidentKey: Bool?
        public var userVerification: String?
        public init(
            authenticatorAttachment: String? = nil, residentKey: String? = nil, requireResidentKey: Bool? = nil, userVerification: String? = nil
        ) {
            self.authenticatorAttachment = authenticatorAttachment
            self.residentKey = residentKey
            self.requireResidentKey = requireResidentKey
            self.userVerification = userVerification
        }
    }

    /// The body of both options endpoints. On `/attestation/options` a registration names `displayName`,
    /// `authenticatorSelection` or `attestation`; without them it asks for authentication options, as the
    /// conformance API's own example does. `username` empty asks for a sign-in without a username.
    public struct OptionsRequest: Codable, Sendable, Equatable {
        public var username: String
        public var displayName: String?
        public var authenticatorSelection: AuthenticatorSelection?
        public var attestation: String?
        public var userVerification: String?
        public var extensions: [String: JSONValue]?
        /// WebAuthn Level 3 `hints` (`security-key`, `client-device`, `hybrid`), most preferred first: echoed in the
        /// options, in place of the configured ones.
        public var hints: [String]?
        /// Ours: `conditional` for registration options the page will use with `create({mediation: "conditional"})`
        /// (conditional create: the browser makes the passkey after another sign-in, without asking), whose answer
        /// may then lack user presence. Absent otherwise.
        public var mediation: String?
        public init(
            username: String, displayName: String? = nil, authenticatorSelection: AuthenticatorSelection? = nil, attestation: String? = nil,
            userVerification: String? = nil, extensions: [String: JSONValue]? = nil, hints: [String]? = nil, mediation: String? = nil
        ) {
            self.hints = hints
            self.mediation = mediation
            self.username = username
            self.displayName = displayName
            self.authenticatorSelection = authenticatorSelection
            self.attestation = attestation
            self.userVerification = userVerification
            self.extensions = extensions
        }
        /// Whether the body asks for registration options.
        public var isRegistration: Bool { displayName != nil || authenticatorSelection != nil || attestation != nil }
    }

    public struct RelyingPartyEntity: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public init(id: String, name: String) {
            self.id = id
            self.name = name
        }
    }

    public struct UserEntity: Codable, Sendable, Equatable {
        public var name: String
        /// base64url of the user handle (at most 64 bytes, never the username).
        public var id: String
        public var displayName: String
        public init(name: String, id: String, displayName: String) {
            self.name = name
            self.id = id
            self.displayName = displayName
        }
    }

    public struct CredentialParameters: Codable, Sendable, Equatable {
        public var type: String
        public var alg: Int64
        public init(alg: Int64) {
            type = "public-key"
            self.alg = alg
        }
    }

    public struct CredentialDescriptor: Codable, Sendable, Equatable {
        public var type: String
        /// base64url of the credential ID.
        public var id: String
        public var transports: [String]?
        public init(id: String, transports: [String]?) {
            type = "public-key"
            self.id = id
            self.transports = transports
        }
    }

    /// The answer of registration options: `PublicKeyCredentialCreationOptions` as JSON, with `status`.
    public struct CreationOptions: Codable, Sendable, Equatable {
        public var status: String
        public var errorMessage: String
        public var fido2SessionId: String
        public var rp: RelyingPartyEntity
        public var user: UserEntity
        public var challenge: String
        public var pubKeyCredParams: [CredentialParameters]
        public var timeout: Int
        public var excludeCredentials: [CredentialDescriptor]
        public var authenticatorSelection: AuthenticatorSelection
        public var attestation: String
        public var extensions: [String: JSONValue]?
        /// Which kind of authenticator the browser should offer first; absent when none is asked or configured.
        public var hints: [String]?
        public init(
            fido2SessionId: String, rp: RelyingPartyEntity, user: UserEntity, challenge: String, pubKeyCredParams: [CredentialParameters],
            timeout: Int, excludeCredentials: [CredentialDescriptor], authenticatorSelection: AuthenticatorSelection, attestation: String,
            extensions: [String: JSONValue]?, hints: [String]? = nil
        ) {
            self.hints = hints
            status = "ok"
            errorMessage = ""
            self.fido2SessionId = fido2SessionId
            self.rp = rp
            self.user = user
            self.challenge = challenge
            self.pubKeyCredParams = pubKeyCredParams
            self.timeout = timeout
            self.excludeCredentials = excludeCredentials
            self.authenticatorSelection = authenticatorSelection
            self.attestation = attestation
            self.extensions = extensions
        }
    }

    /// The answer of authentication options: `PublicKeyCredentialRequestOptions` as JSON, with `status`.
    public struct RequestOptions: Codable, Sendable, Equatable {
        public var status: String
        public var errorMessage: String
        public var fido2SessionId: String
        public var challenge: String
        public var timeout: Int
        public var rpId: String
        public var allowCredentials: [CredentialDescriptor]
        public var userVerification: String
        public var extensions: [String: JSONValue]?
        /// Which kind of authenticator the browser should offer first; absent when none is asked or configured.
        public var hints: [String]?
        public init(
            fido2SessionId: String, challenge: String, timeout: Int, rpId: String, allowCredentials: [CredentialDescriptor],
            userVerification: String, extensions: [String: JSONValue]?, hints: [String]? = nil
        ) {
            self.hints = hints
            status = "ok"
            errorMessage = ""
            self.fido2SessionId = fido2SessionId
            self.challenge = challenge
            self.timeout = timeout
            self.rpId = rpId
            self.allowCredentials = allowCredentials
            self.userVerification = userVerification
            self.extensions = extensions
        }
    }

    /// `response` of a credential: an attestation (`clientDataJSON`, `attestationObject`, `transports`) or an
    /// assertion (`clientDataJSON`, `authenticatorData`, `signature`, `userHandle`).
    public struct AuthenticatorResponse: Codable, Sendable, Equatable {
        public var clientDataJSON: String
        public var attestationObject: String?
        public var transports: [String]?
        public var authenticatorData: String?
        public var signature: String?
        public var userHandle: String?
        public init(
            clientDataJSON: String, attestationObject: String? = nil, transports: [String]? = nil, authenticatorData: String? = nil,
            signature: String? = nil, userHandle: String? = nil
        ) {
            self.clientDataJSON = clientDataJSON
            self.attestationObject = attestationObject
            self.transports = transports
            self.authenticatorData = authenticatorData
            self.signature = signature
            self.userHandle = userHandle
        }
    }

    /// `clientExtensionResults` as far as the server reads it: `credProps` (WebAuthn §10.1.3), whether the new
    /// passkey is discoverable. Every other member a client reports (`prf`, `largeBlob`, an extension not invented
    /// yet) is skipped unread: the server acts on none of them, and reading a caller's free-form JSON into values
    /// would make its size the server's cost.
    public struct ClientExtensionResults: Codable, Sendable, Equatable {
        /// `credProps`: `rk` is true for a discoverable credential.
        public struct CredentialProperties: Codable, Sendable, Equatable {
            public var rk: Bool?
            public init(rk: Bool?) { self.rk = rk }
        }
        public var credProps: CredentialProperties?
        public init(credProps: CredentialProperties? = nil) { self.credProps = credProps }
    }

    /// The body of both result endpoints (`ServerPublicKeyCredential`).
    public struct Credential: Codable, Sendable, Equatable {
        public var id: String
        public var rawId: String?
        public var type: String
        public var response: AuthenticatorResponse
        public var clientExtensionResults: ClientExtensionResults?
        /// nevisFIDO's name for the authenticator, kept with a new passkey.
        public var userFriendlyName: String?
        public var userAgent: String?
        public init(
            id: String, response: AuthenticatorResponse, clientExtensionResults: ClientExtensionResults? = nil, userFriendlyName: String? = nil
        ) {
            self.id = id
            rawId = id
            type = "public-key"
            self.response = response
            self.clientExtensionResults = clientExtensionResults
            self.userFriendlyName = userFriendlyName
        }
    }

    /// The answer of both result endpoints, and every refusal's body (`status` `failed`, a non-empty `errorMessage`).
    public struct ServerResponse: Codable, Sendable, Equatable {
        public var status: String
        public var errorMessage: String
        public var fido2SessionId: String?
        /// Ours, beside nevisFIDO's members: the session JWT of a successful sign-in (the one a UAF login hands out in
        /// `additionalTokens`, with `method` `passkey`); the session cookie comes in `Set-Cookie`.
        public var token: String?
        /// Ours: what kind of refusal it is, for a program to act on (``ErrorCode``); absent on success.
        public var errorCode: String?
        public init(status: String, errorMessage: String, fido2SessionId: String? = nil) {
            self.status = status
            self.errorMessage = errorMessage
            self.fido2SessionId = fido2SessionId
        }
        public static func failed(_ message: String, code: String? = nil) -> ServerResponse {
            var response = ServerResponse(status: "failed", errorMessage: message)
            response.errorCode = code
            return response
        }
    }

    /// The values of ``ServerResponse/errorCode`` a page acts on.
    public enum ErrorCode {
        /// The credential of a sign-in is not (or no longer) registered with this relying party: the page may call
        /// `PublicKeyCredential.signalUnknownCredential({rpId, credentialId})` so the user's passkey provider hides
        /// or removes it. Never said of a credential the server knows, whoever's it is.
        public static let unknownCredential = "unknown_credential"
    }

    /// The body of ``statusPath``: the `fido2SessionId` an options answer carried. `sessionId`, the name nevisFIDO's
    /// OpenAPI page uses, is read too; a body with both, or neither, is refused.
    public struct StatusQuery: Codable, Sendable, Equatable {
        public var fido2SessionId: String
        public init(fido2SessionId: String) { self.fido2SessionId = fido2SessionId }
        enum CodingKeys: String, CodingKey { case fido2SessionId, sessionId }
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            switch (try c.decodeIfPresent(String.self, forKey: .fido2SessionId), try c.decodeIfPresent(String.self, forKey: .sessionId)) {
            case (let id?, nil), (nil, let id?): fido2SessionId = id
            default:
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "exactly one of fido2SessionId and sessionId"))
            }
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(fido2SessionId, forKey: .fido2SessionId)
        }
    }

    /// The answer of ``statusPath``: `status` is the ceremony's state, `errorMessage` the refusal's words when it
    /// failed. `operation` (`registration`, `authentication`) and `username` (the user it was for, or who signed in)
    /// are ours, absent for an unknown session.
    public struct StatusResponse: Codable, Sendable, Equatable {
        public enum Status: String, Codable, Sendable {
            /// Options were issued and no answer has been verified yet.
            case initialized
            case succeeded
            /// Refused, or not answered before it expired.
            case failed
            /// No such session: never issued, or no longer kept.
            case unknown
        }
        public var status: Status
        public var errorMessage: String
        public var fido2SessionId: String
        public var operation: String?
        public var username: String?
        public init(status: Status, fido2SessionId: String, errorMessage: String = "", operation: String? = nil, username: String? = nil) {
            self.status = status
            self.errorMessage = errorMessage
            self.fido2SessionId = fido2SessionId
            self.operation = operation
            self.username = username
        }
    }

    /// One passkey as its user sees it in ``PasskeyList``.
    public struct PasskeyDescription: Codable, Sendable, Equatable {
        /// base64url of the credential ID.
        public var credentialId: String
        /// The name she gave it (nevisFIDO's `userFriendlyName`), if any.
        public var name: String?
        /// Who keeps it ("iCloud Keychain", "Google Password Manager", a security key's model), when known.
        public var providerName: String?
        public var aaguid: String
        /// RFC 3339 times.
        public var createdAt: String
        public var lastUsedAt: String?
        /// Whether it may be synced to her other devices (BE), and whether it is (BS).
        public var backupEligible: Bool
        public var backedUp: Bool
        public var transports: [String]
        public var discoverable: Bool?
        public init(
            credentialId: String, name: String?, providerName: String?, aaguid: String, createdAt: String, lastUsedAt: String?,
            backupEligible: Bool, backedUp: Bool, transports: [String], discoverable: Bool?
        ) {
            self.credentialId = credentialId
            self.name = name
            self.providerName = providerName
            self.aaguid = aaguid
            self.createdAt = createdAt
            self.lastUsedAt = lastUsedAt
            self.backupEligible = backupEligible
            self.backedUp = backedUp
            self.transports = transports
            self.discoverable = discoverable
        }
    }

    /// The answer of ``passkeysPath`` (and of a rename or removal: the list after it): her passkeys, oldest first, and
    /// what WebAuthn's Signal API takes, so the page can keep her passkey provider in step:
    /// `PublicKeyCredential.signalAllAcceptedCredentials({rpId, userId: user.id, allAcceptedCredentialIds})` and
    /// `signalCurrentUserDetails({rpId, userId: user.id, name: user.name, displayName: user.displayName})`. `user` is
    /// absent for a user who never held a passkey (there is no user handle to signal).
    public struct PasskeyList: Codable, Sendable, Equatable {
        public var status: String
        public var errorMessage: String
        public var rpId: String
        public var user: UserEntity?
        public var passkeys: [PasskeyDescription]
        public var allAcceptedCredentialIds: [String]
        /// After a removal: the credential ID removed.
        public var removed: String?
        public init(rpId: String, user: UserEntity?, passkeys: [PasskeyDescription], removed: String? = nil) {
            status = "ok"
            errorMessage = ""
            self.rpId = rpId
            self.user = user
            self.passkeys = passkeys
            allAcceptedCredentialIds = passkeys.map(\.credentialId)
            self.removed = removed
        }
    }

    /// The body of a rename (`PATCH` ``passkeysPath``/`<credentialId>`).
    public struct PasskeyRename: Codable, Sendable, Equatable {
        public var name: String
        public init(name: String) { self.name = name }
    }

    /// The document at ``relatedOriginsPath``.
    public struct RelatedOrigins: Codable, Sendable, Equatable {
        public var origins: [String]
        public init(origins: [String]) { self.origins = origins }
    }
}
