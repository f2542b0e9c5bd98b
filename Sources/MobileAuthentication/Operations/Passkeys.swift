import Foundation

/// A new passkey for the user, made by the device's platform authenticator (Apple's passkeys through
/// AuthenticationServices; the simulated platform's software one) and registered with the server through
/// nevisFIDO's FIDO2 API (`/nevisfido/fido2/attestation/…`). Not in the Nevis SDK, which keeps passkeys in a
/// separate example: the same passkey then signs the user in on the bank's website and in its app.
///
/// The server registers a passkey only for a caller who may act for the user, recently signed in: pass the
/// `AuthorizationProvider` a prior authentication returned (or a relying-party JWT). On Apple platforms the app
/// needs the `webcredentials:<rpID>` associated domain, and the server the app in its `apple-app-site-association`.
/// `onSuccess` gets the new passkey's credential ID (base64url).
public final class PasskeyRegistration: HttpOperation {
    struct Fields: Sendable {
        var username: Username?
        var displayName: String?
        var friendlyName: String?
        var authorizationProvider: (any AuthorizationProvider)?
        var provider: (any PasskeyProvider)?
        var headers: [String] = []
        var onSuccess: (@Sendable (String) -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())

    init(core: ClientCore) { self.core = core }

    /// The user the passkey is for; required.
    @discardableResult public func username(_ username: Username) -> Self {
        state.update { $0.username = username }
        return self
    }
    /// The name the passkey manager shows with the username; the username when absent.
    @discardableResult public func displayName(_ displayName: String) -> Self {
        state.update { $0.displayName = displayName }
        return self
    }
    /// The name the server keeps for this passkey (nevisFIDO's `userFriendlyName`), e.g. the device's name.
    @discardableResult public func friendlyName(_ name: String) -> Self {
        state.update { $0.friendlyName = name }
        return self
    }
    @discardableResult public func authorizationProvider(_ provider: any AuthorizationProvider) -> Self {
        state.update { $0.authorizationProvider = provider }
        return self
    }
    /// The passkey authenticator to use instead of the platform's (on Apple platforms, an `ApplePasskeyProvider`
    /// with the window its sheet belongs to).
    @discardableResult public func passkeyProvider(_ provider: any PasskeyProvider) -> Self {
        state.update { $0.provider = provider }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable (String) -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OperationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OperationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    /// Runs the ceremony; the new passkey's credential ID (base64url).
    @discardableResult public func executeAsync() async throws(OperationError) -> String {
        let fields = state.value
        guard let username = fields.username, !username.isEmpty else { throw .Unknown(cause: SDKMessage("username is required")) }
        try core.checkIntegrity()
        let provider = try Self.provider(fields.provider, core: core)
        let headers = fields.headers.headerPairs + (fields.authorizationProvider?.httpHeaders ?? [])
        let runner = OperationRunner(core: core, objects: InteractionObjects(), headers: headers)
        return try await runner.registerPasskey(
            server: Server(baseUrl: core.configuration.baseUrl), username: username, displayName: fields.displayName,
            friendlyName: fields.friendlyName, provider: provider)
    }

    /// The operation's passkey authenticator: the one given, else the platform's.
    static func provider(_ given: (any PasskeyProvider)?, core: ClientCore) throws(OperationError) -> any PasskeyProvider {
        guard let provider = given ?? core.platform.passkeys else {
            #if canImport(AuthenticationServices)
            // The system's sheet needs the app's window, which only the app knows.
            let reason = "pass passkeyProvider(ApplePasskeyProvider { window }): the passkey sheet needs the app's window"
            #else
            let reason = "this platform has no passkey authenticator: pass passkeyProvider(_:)"
            #endif
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: PasskeyFailure(.notSupported, reason))
        }
        return provider
    }
}

/// A sign-in with a passkey through nevisFIDO's FIDO2 API (`/nevisfido/fido2/assertion/…`): the platform shows its
/// sheet (or, with `PasskeyMediation.autoFill`, offers the passkeys in the username field's suggestions), and
/// the server answers a session, as a UAF login does. `onSuccess` gets the session's `AuthorizationProvider` (its
/// JWT), nil when the server sent none.
public final class PasskeyAuthentication: HttpOperation {
    struct Fields: Sendable {
        var username: Username?
        var mediation = PasskeyMediation.modal
        var provider: (any PasskeyProvider)?
        var headers: [String] = []
        var onSuccess: (@Sendable ((any AuthorizationProvider)?) -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())

    init(core: ClientCore) { self.core = core }

    /// The user signing in, where the app knows her; without it, any of the site's passkeys on the device.
    @discardableResult public func username(_ username: Username) -> Self {
        state.update { $0.username = username }
        return self
    }
    /// How the platform asks the user (`PasskeyMediation.modal` by default).
    @discardableResult public func mediation(_ mediation: PasskeyMediation) -> Self {
        state.update { $0.mediation = mediation }
        return self
    }
    @discardableResult public func passkeyProvider(_ provider: any PasskeyProvider) -> Self {
        state.update { $0.provider = provider }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable ((any AuthorizationProvider)?) -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OperationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OperationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    /// Runs the ceremony; the session's authorization.
    @discardableResult public func executeAsync() async throws(OperationError) -> (any AuthorizationProvider)? {
        let fields = state.value
        try core.checkIntegrity()
        let provider = try PasskeyRegistration.provider(fields.provider, core: core)
        let runner = OperationRunner(core: core, objects: InteractionObjects(), headers: fields.headers.headerPairs)
        return try await runner.authenticateWithPasskey(
            server: Server(baseUrl: core.configuration.baseUrl), username: fields.username, mediation: fields.mediation, provider: provider
        ).authorizationProvider
    }
}
