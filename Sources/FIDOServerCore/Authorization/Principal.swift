import Foundation

/// Who is calling a protected endpoint, established by `AuthorizationMiddleware` before the handler runs.
public struct Principal: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        /// A JWT from the relying party's backend.
        case relyingPartyToken
        /// A client certificate of the relying party's backend (mutual TLS, `authorization.clientCertificates`),
        /// named by its mapping's name.
        case clientCertificate(name: String)
        /// A session from a prior UAF authentication on this server (its cookie or its JWT); carries the session id.
        case session(id: String)
        /// The JWT handed to a device after it registered a key (`token_use` `registration`): it may only create a
        /// dispatch target for its user, for the device the registration named if it named one.
        case registration(sessionId: String, deviceId: String?)
        /// A trusted reverse proxy's header.
        case trustedProxy
        /// A redeemed dispatch token: the caller who dispatched it was authorized for the subject then, and
        /// possessing the single-use token is the authorization now (server-api §B.7). `deviceId` is the device the
        /// dispatching credential was confined to (a device signature), which the token's operation stays within.
        case dispatchToken(deviceId: String?)
        /// A `Device-Signature` from a device holding a dispatch target of the user (the SDK's
        /// `JwsAuthorizationProvider`). It proves possession of the device, not the user, so it acts only on what
        /// that device holds (``DeviceScope``).
        case deviceSignature(DeviceScope)
        /// An Auth Cloud access key (server-to-server): acts for every user of the API; carries the key's id.
        case accessKey(id: String)
        /// The built-in relying-party demo site (`mauth server --demo-site`), which acts like an access-key holder.
        case demoSite
        /// A service of the bank's own network (`authorization.internalDispatchNetworks`), as nevisAuth is in a nevisFIDO
        /// deployment: it may list dispatch targets and dispatch an authentication to one, and acts for no user.
        case internalNetwork(address: String)
        /// Development mode: nobody was checked.
        case development
        /// An operator at the server's database (`mauth admin`), as the account that ran it, which holds the database's
        /// credentials: never established from a request. It may use the operator's endpoints' service and acts for no user.
        case databaseOperator(login: String)
    }

    public var source: Source
    /// The username the credential speaks for; nil only in development mode.
    public var subject: String?
    /// May act for any username (a relying-party token with the configured admin scope).
    public var isAdmin: Bool
    /// When the user last verified on an authenticator, for a session (a recent authentication is needed to add one).
    public var authenticatedAt: Date?
    /// May use the operator's endpoints (a relying-party token with the operator scope, or with the admin scope
    /// when no operator scope is configured). Acting for users is ``isAdmin``'s alone.
    public var isOperator: Bool

    public init(source: Source, subject: String?, isAdmin: Bool, authenticatedAt: Date? = nil, isOperator: Bool? = nil) {
        self.source = source
        self.subject = subject
        self.isAdmin = isAdmin
        self.authenticatedAt = authenticatedAt
        self.isOperator = isOperator ?? isAdmin
    }

    /// Whether this principal may act for `username`. Usernames compare byte for byte: no case folding or
    /// normalisation, because the relying party decides what a username is and two spellings are two users.
    public func mayActFor(_ username: String) -> Bool {
        if source == .development || isAdmin { return true }
        // A registration token only creates a dispatch target (``mayCreateDispatchTarget(for:deviceId:)``).
        if case .registration = source { return false }
        return isSubject(username)
    }

    /// Whether the credential speaks for `username`, byte for byte.
    private func isSubject(_ username: String) -> Bool { subject.map { Array($0.utf8) == Array(username.utf8) } ?? false }

    /// Whether this principal may add credentials or dispatch targets for `username`. A device signature may not:
    /// a device in someone else's hands would otherwise enrol a new PIN without knowing the old one. It may still
    /// remove (deregister) what the device holds.
    public func mayRegisterFor(_ username: String) -> Bool {
        if case .deviceSignature = source { return false }
        return mayActFor(username)
    }

    /// Whether this principal may reach `target` (list, delete, dispatch to it): it acts for the target's user and,
    /// for a device signature, the target is that device's own.
    func mayReach(_ target: DispatchTargetRecord) -> Bool {
        if case .deviceSignature(let scope) = source, !scope.holds(target) { return false }
        return mayActFor(target.username)
    }

    /// The device whose registrations this principal's operation stays within, nil when it is not confined to one.
    /// A device signature (or a token it dispatched) reaches only its own device, so holding one device never
    /// ends the user's other devices; a signing target that names no device can name no registrations either.
    func confinedDeviceId() throws(AuthorizationFailure) -> String? {
        switch source {
        case .deviceSignature(let scope):
            guard let deviceId = scope.deviceId else { throw .forbidden("the signing dispatch target names no device") }
            return deviceId
        case .dispatchToken(let deviceId): return deviceId
        default: return nil
        }
    }

    /// Whether the audit trail budgets this principal's rows (``AuditTrail/budgetKeys(principal:client:decision:)``):
    /// every principal but the relying party's own (its JWT, an access key, an admin), since any user holds a
    /// session or a device key.
    package var isAuditBudgeted: Bool {
        switch source {
        // The bank's own services, as its backend's token is.
        case .relyingPartyToken, .clientCertificate, .accessKey, .internalNetwork, .databaseOperator: return false
        // The demo site acts as an admin for anyone who opens its pages, and development mode for anyone at all.
        case .demoSite, .development: return true
        case .session, .registration, .trustedProxy, .dispatchToken, .deviceSignature: return !isAdmin
        }
    }

    /// How the audit trail names this principal: the kind of credential and whom it speaks for, e.g.
    /// `relying-party:alice`, `relying-party:ops+admin`, `device:<target id>:alice`, `access-key:<key id>`. No secret
    /// goes in (a session is named by its user, not its id).
    public var auditName: String {
        let kind: String
        switch source {
        case .relyingPartyToken: kind = "relying-party"
        case .clientCertificate(let name): kind = "client-certificate:\(name)"
        case .session: kind = "session"
        case .registration: kind = "registration"
        case .trustedProxy: kind = "trusted-proxy"
        case .dispatchToken: kind = "dispatch-token"
        case .deviceSignature(let scope): kind = "device:\(scope.dispatchTargetId)"
        case .accessKey(let id): kind = "access-key:\(id)"
        case .demoSite: kind = "demo-site"
        case .internalNetwork(let address): kind = "internal-network:\(address)"
        case .development: kind = "development"
        // What the trail has always called an operator at the database: `operator:<login>`.
        case .databaseOperator(let login): return "operator:\(login)"
        }
        return kind + (subject.map { ":\($0)" } ?? "") + (isAdmin ? "+admin" : "") + (isOperator && !isAdmin ? "+operator" : "")
    }

    /// Whether this principal may dispatch an authentication to `target` (push it, hand out its link): a principal
    /// that reaches the target (``mayReach(_:)``), or a service of the bank's own network, as nevisAuth is.
    func mayDispatchAuthentication(to target: DispatchTargetRecord) -> Bool {
        if case .internalNetwork = source { return true }
        return mayReach(target)
    }

    /// Whether this principal may list `username`'s dispatch targets, and which: its own reach, or every target for
    /// a service of the bank's own network (nevisAuth picks the one to push to).
    func mayList(_ target: DispatchTargetRecord) -> Bool {
        if case .internalNetwork = source { return true }
        return mayReach(target)
    }

    /// Whether this principal may create a dispatch target of `deviceId` for `username`: whoever may register for
    /// the user, or the registration token of that user's device.
    public func mayCreateDispatchTarget(for username: String, deviceId: String?) -> Bool {
        if case .registration(_, let device) = source {
            return isSubject(username) && (device == nil || device == deviceId)
        }
        return mayRegisterFor(username)
    }
}

/// What a device signature may reach: the dispatch target that signed, the device's other targets (same device id
/// and the same signature key, as the SDK uses one key pair for all its targets), and the registrations made on
/// that device id. Holding one device must not reach the user's other devices.
public struct DeviceScope: Sendable, Equatable {
    public var dispatchTargetId: String
    /// The signing target's device id; a target created without one confines the signature to that target alone.
    public var deviceId: String?
    /// The signing target's signature key (JWK JSON).
    public var signatureKey: String

    package init(signer: DispatchTargetRecord) {
        dispatchTargetId = signer.id
        deviceId = signer.deviceId
        signatureKey = signer.signatureKey
    }

    /// Whether `target` is this device's.
    func holds(_ target: DispatchTargetRecord) -> Bool {
        target.id == dispatchTargetId || (deviceId != nil && target.deviceId == deviceId && target.signatureKey == signatureKey)
    }
}

/// A refusal of a protected call: 401 without acceptable credentials, 403 when the credentials speak for
/// someone else. The client gets a generic JSON body; `detail` goes to the log only.
package struct AuthorizationFailure: Error {
    package enum Kind { case unauthenticated, forbidden }
    package let kind: Kind
    package let detail: String
    package static func unauthenticated(_ detail: String) -> Self { Self(kind: .unauthenticated, detail: detail) }
    static func forbidden(_ detail: String) -> Self { Self(kind: .forbidden, detail: detail) }
}
