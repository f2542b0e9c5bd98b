import Foundation

/// In-band authentication (and transaction confirmation when the server sends a transaction).
public final class Authentication: HttpOperation {
    struct Fields: Sendable {
        var username: Username?
        var sessionProvider: (any SessionProvider)?
        var selector: (any AuthenticatorSelector)?
        var pinVerifier: (any PinUserVerifier)?
        var headers: [String] = []
        var onSuccess: (@Sendable ((any AuthorizationProvider)?) -> Void)?
        var onError: (@Sendable (AuthenticationError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())

    init(core: ClientCore) { self.core = core }

    @discardableResult public func username(_ username: Username) -> Self { state.update { $0.username = username }; return self }
    @discardableResult public func sessionProvider(_ provider: any SessionProvider) -> Self { state.update { $0.sessionProvider = provider }; return self }
    @discardableResult public func authenticatorSelector(_ selector: any AuthenticatorSelector) -> Self { state.update { $0.selector = selector }; return self }
    @discardableResult public func pinUserVerifier(_ verifier: any PinUserVerifier) -> Self { state.update { $0.pinVerifier = verifier }; return self }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self { state.update { $0.headers = headers }; return self }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable ((any AuthorizationProvider)?) -> Void) -> Self { state.update { $0.onSuccess = callback }; return self }
    @discardableResult public func onError(_ callback: @escaping @Sendable (AuthenticationError) -> Void) -> Self { state.update { $0.onError = callback }; return self }

    public func execute() {
        let fields = state.value
        Task {
            do throws(AuthenticationError) {
                let provider = try await self.executeAsync()
                fields.onSuccess?(provider)
            } catch {
                fields.onError?(error)
            }
        }
    }

    /// Runs the authentication; returns the authorization the server handed out, if any.
    public func executeAsync() async throws(AuthenticationError) -> (any AuthorizationProvider)? {
        let fields = state.value
        let headers = fields.headers.headerPairs + (fields.sessionProvider?.httpHeaders ?? [])
        do {
            return try await AuthenticationFlow(core: core, username: fields.username, headers: headers,
                                                selector: fields.selector, pinVerifier: fields.pinVerifier).run()
        } catch {
            throw AuthenticationError(error, sessionProvider: fields.sessionProvider)
        }
    }
}
