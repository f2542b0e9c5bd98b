import Foundation

/// In-band registration of the user with an authenticator.
///
/// Callbacks and interaction objects are called on the client's callback queue (the main queue on Apple platforms,
/// `MobileAuthenticationClientInitializer/callbackQueue(_:)`). ``executeAsync()`` is the Swift concurrency form.
public final class Registration: RegistrationCeremonyBuilder, HttpOperation, @unchecked Sendable {
    // @unchecked Sendable: restated from the builder base class; every stored property is a `let` of a Sendable type.
    struct Fields: Sendable {
        var username: Username?
        var serverUrl: URL?
        var authorizationProvider: (any AuthorizationProvider)?
        var headers: [String] = []
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())

    init(core: ClientCore) {
        self.core = core
        super.init()
    }

    @discardableResult public func username(_ username: Username) -> Self {
        state.update { $0.username = username }
        return self
    }
    /// The server to register with; defaults to `Configuration.baseUrl`.
    @discardableResult public func serverUrl(_ url: URL) -> Self {
        state.update { $0.serverUrl = url }
        return self
    }
    /// The same as ``serverUrl(_:)``: the 3.6/3.7 documentation spells it this way (sdk-api.md (f) 11).
    @discardableResult public func serverBaseUrl(_ url: URL) -> Self { serverUrl(url) }
    @discardableResult public func authorizationProvider(_ provider: any AuthorizationProvider) -> Self {
        state.update { $0.authorizationProvider = provider }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self {
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

    /// Runs the registration and returns when it is complete.
    public func executeAsync() async throws(OperationError) {
        let fields = state.value
        guard let username = fields.username, !username.isEmpty else {
            throw .Unknown(cause: SDKMessage("username is required"))
        }
        let headers = fields.headers.headerPairs + (fields.authorizationProvider?.httpHeaders ?? [])
        try await register(
            .inBand(username), core: core, headers: headers,
            server: Server(baseUrl: fields.serverUrl ?? core.configuration.baseUrl))
    }
}
