import Foundation

/// The step every way of signing in ends with, one home for what a UAF login (``AuthenticationService``) and a passkey
/// sign-in (``PasskeyService``) share once their protocol has verified the user: the session, its JWT and its cookie
/// (``open(username:credential:at:transactionContentHash:policy:)``), the short session a UAF registration hands the
/// device (``openForRegistration(username:credential:deviceId:at:)``), and the rule for adding a credential with a
/// session (``requireRecentAuthentication(_:)``), which both protocols' registrations apply.
package struct SignIn: Sendable {
    let issuer: TokenIssuer
    let tokens: ServerConfiguration.Tokens
    /// The one store a sign-in writes.
    let sessions: SessionStore
    let clock: @Sendable () -> Date

    /// A registration's session lives at most this long: it is for finishing the device's set-up (creating its
    /// dispatch target), not for signing in.
    static let maximumRegistrationSessionSeconds = 300

    /// A session made and its tokens signed, not yet stored. The ceremony writes ``session`` in the same store call as
    /// its counter (``CeremonyStore/completeAuthentication(_:)``, ``CeremonyStore/completePasskeySignIn(id:from:to:backupState:at:sessionToken:session:challenge:counterRefusal:)``),
    /// so the JWT and the cookie leave only if every write of the sign-in happens.
    package struct Opened: Sendable {
        /// The session's secret (the cookie's value), stored only as its hash.
        var token: String
        var session: SessionRecord
        /// The session's JWT (`method` names the credential's kind).
        package var jwt: String
        /// The `Set-Cookie` value carrying ``token``.
        package var cookie: String
    }

    /// Opens a sign-in's session for `credential`, signed now: the JWT (with the confirmed transaction's hash and the
    /// policy set a UAF login was verified against, when there are) and the cookie. Nothing is stored (``Opened``).
    func open(
        username: String, credential: SessionCredential, at now: Date, transactionContentHash: [UInt8] = [],
        policy: String? = nil
    ) throws -> Opened {
        let (token, session) = SessionStore.make(
            username: username, credential: credential, now: now,
            lifetime: TimeInterval(tokens.sessionLifetimeSeconds))
        let jwt = try issuer.issue(session: session, authenticatedAt: now, transactionContentHash: transactionContentHash, policy: policy)
        return Opened(
            token: token, session: session, jwt: jwt,
            cookie: Self.cookie(name: tokens.cookieName, value: token, maxAge: tokens.sessionLifetimeSeconds))
    }

    /// Our answer to server-api §(f).5: a successful UAF registration opens a short session for the new key, stored
    /// now, and hands its JWT to the device. The device proved possession of the key and verified its user to
    /// register, and an out-of-band registration has no other credential: the JWT (`token_use` `registration`)
    /// authorizes the device's next call, the creation of its dispatch target, and nothing else (not a login).
    func openForRegistration(username: String, credential: SessionCredential, deviceId: String?, at now: Date) async throws -> String {
        let (_, session) = try await sessions.create(
            username: username, credential: credential, now: now,
            lifetime: TimeInterval(min(tokens.sessionLifetimeSeconds, Self.maximumRegistrationSessionSeconds)))
        return try issuer.issue(session: session, authenticatedAt: now, transactionContentHash: [], use: .registration, deviceId: deviceId)
    }

    /// Adding a credential (a UAF key or a passkey) with a session of this server needs a recent sign-in
    /// (`tokens.recentAuthenticationSeconds`, 300 s): a session left open on a shared or stolen device must not enrol
    /// another key. Other credentials (a relying party's token, the trusted proxy, a dispatch token) carry the
    /// relying party's own decision. Refused with 403; the user signs in again and retries.
    func requireRecentAuthentication(_ principal: Principal, for action: String = "adding an authenticator") throws {
        guard case .session = principal.source, let authenticatedAt = principal.authenticatedAt else { return }
        let age = clock().timeIntervalSince(authenticatedAt)
        guard age <= TimeInterval(tokens.recentAuthenticationSeconds) else {
            throw AuthorizationFailure.forbidden(
                "\(action) needs an authentication within the last \(tokens.recentAuthenticationSeconds) s; this session's was \(Int(age)) s ago"
            )
        }
    }

    /// The session cookie: only over HTTPS, invisible to scripts, never sent on cross-site requests.
    static func cookie(name: String, value: String, maxAge: Int) -> String {
        "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; Secure; SameSite=Strict"
    }
}
