import Foundation

/// In-band authentication (and transaction confirmation when the server sends a transaction).
public final class Authentication: AuthenticationCeremonyBuilder, HttpOperation, @unchecked Sendable {
    // @unchecked Sendable: restated from the builder base class; every stored property is a `let` of a Sendable type.
    struct Fields: Sendable {
        var username: Username?
        var sessionProvider: (any SessionProvider)?
        var retryPolicy: RetryPolicy?
        var transaction: String?
        var headers: [String] = []
        var onSuccess: (@Sendable ((any AuthorizationProvider)?) -> Void)?
        var onError: (@Sendable (AuthenticationError) -> Void)?
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
    @discardableResult public func sessionProvider(_ provider: any SessionProvider) -> Self {
        state.update { $0.sessionProvider = provider }
        return self
    }
    /// How a failure to reach the server while obtaining the authentication request is retried. Default: the
    /// configuration's `authenticationMaxRetries` × `authenticationRetryIntervalInSeconds` (3 × 1 s). The
    /// response is never re-sent: a UAF response is single-use.
    @discardableResult public func retryPolicyObtainingAuthorizationProvider(_ policy: RetryPolicy) -> Self {
        state.update { $0.retryPolicy = policy }
        return self
    }
    /// Our addition to the Nevis API: asks the server to make this a transaction confirmation of `text` (sent in
    /// the GetUAFRequest context as nevisFIDO's `transaction`, text/plain). The app is shown the text through its
    /// selector before the confirmation is signed.
    @discardableResult public func transactionConfirmation(text: String) -> Self {
        state.update { $0.transaction = text }
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
    @discardableResult public func onError(_ callback: @escaping @Sendable (AuthenticationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(AuthenticationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    /// Runs the authentication; returns the authorization the server handed out, if any.
    public func executeAsync() async throws(AuthenticationError) -> (any AuthorizationProvider)? {
        let fields = state.value
        let headers = fields.headers.headerPairs + (fields.sessionProvider?.httpHeaders ?? [])
        do {
            return try await OperationRunner(core: core, objects: interaction.value, headers: headers, retryPolicy: fields.retryPolicy)
                .authenticate(username: fields.username, transaction: fields.transaction)
        } catch {
            throw AuthenticationError(error, sessionProvider: fields.sessionProvider)
        }
    }
}
