import Foundation

/// In-band registration of the user with an authenticator.
///
/// Callbacks are delivered on a background executor (there is no main run loop on Linux); apps that update UI
/// hop to the main actor themselves. ``executeAsync()`` is the Swift concurrency form.
public final class Registration: HttpOperation {
    struct Fields: Sendable {
        var username: Username?
        var serverUrl: URL?
        var deviceInformation: DeviceInformation?
        var authorizationProvider: (any AuthorizationProvider)?
        var allowDevicePasscodeAsFallback = false
        var invalidateOnNewOsBiometrics = true
        var selector: (any AuthenticatorSelector)?
        var pinEnroller: (any PinEnroller)?
        var headers: [String] = []
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())

    init(core: ClientCore) { self.core = core }

    @discardableResult public func username(_ username: Username) -> Self { state.update { $0.username = username }; return self }
    /// The server to register with; defaults to `Configuration.baseUrl`.
    @discardableResult public func serverUrl(_ url: URL) -> Self { state.update { $0.serverUrl = url }; return self }
    @discardableResult public func deviceInformation(_ information: DeviceInformation) -> Self { state.update { $0.deviceInformation = information }; return self }
    @discardableResult public func authorizationProvider(_ provider: any AuthorizationProvider) -> Self { state.update { $0.authorizationProvider = provider }; return self }
    /// Secure default: false. Cannot be combined with ``invalidateOnNewOsBiometrics(_:)``.
    @discardableResult public func allowDevicePasscodeAsFallback(_ allow: Bool) -> Self { state.update { $0.allowDevicePasscodeAsFallback = allow }; return self }
    /// Secure default: true.
    @discardableResult public func invalidateOnNewOsBiometrics(_ invalidate: Bool) -> Self { state.update { $0.invalidateOnNewOsBiometrics = invalidate }; return self }
    @discardableResult public func authenticatorSelector(_ selector: any AuthenticatorSelector) -> Self { state.update { $0.selector = selector }; return self }
    @discardableResult public func pinEnroller(_ enroller: any PinEnroller) -> Self { state.update { $0.pinEnroller = enroller }; return self }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self { state.update { $0.headers = headers }; return self }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self { state.update { $0.onSuccess = callback }; return self }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OperationError) -> Void) -> Self { state.update { $0.onError = callback }; return self }

    public func execute() {
        let fields = state.value
        deliverInBackground({ () async throws(OperationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess, onError: fields.onError)
    }

    /// Runs the registration and returns when it is complete.
    public func executeAsync() async throws(OperationError) {
        let fields = state.value
        guard let username = fields.username, !username.isEmpty else {
            throw .Unknown(cause: SDKMessage("username is required"))
        }
        if fields.allowDevicePasscodeAsFallback && fields.invalidateOnNewOsBiometrics {
            // Both options cannot be enabled (sdk-api (a) 32); this is reported only if the app turned the fallback on.
            throw .Unknown(cause: SDKMessage("allowDevicePasscodeAsFallback and invalidateOnNewOsBiometrics cannot both be enabled"))
        }
        let headers = fields.headers.headerPairs + (fields.authorizationProvider?.httpHeaders ?? [])
        try await RegistrationFlow(
            core: core, username: username, server: Server(baseUrl: fields.serverUrl ?? core.configuration.baseUrl), headers: headers,
            deviceInformation: fields.deviceInformation, selector: fields.selector, pinEnroller: fields.pinEnroller
        ).run()
    }
}
