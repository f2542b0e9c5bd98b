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
        var options = RegistrationOptions()
        var objects = InteractionObjects()
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
    /// The same as ``serverUrl(_:)``: the 3.6/3.7 documentation spells it this way (sdk-api.md (f) 11).
    @discardableResult public func serverBaseUrl(_ url: URL) -> Self { serverUrl(url) }
    @discardableResult public func deviceInformation(_ information: DeviceInformation) -> Self { state.update { $0.deviceInformation = information }; return self }
    @discardableResult public func authorizationProvider(_ provider: any AuthorizationProvider) -> Self { state.update { $0.authorizationProvider = provider }; return self }
    /// Secure default: false. Cannot be combined with ``invalidateOnNewOsBiometrics(_:)``.
    @discardableResult public func allowDevicePasscodeAsFallback(_ allow: Bool) -> Self { state.update { $0.options.allowDevicePasscodeAsFallback = allow }; return self }
    /// Secure default: true.
    @discardableResult public func invalidateOnNewOsBiometrics(_ invalidate: Bool) -> Self { state.update { $0.options.invalidateOnNewOsBiometrics = invalidate }; return self }
    /// Android profile only. Secure default: false (Class 2 biometric sensors are weak).
    @discardableResult public func allowClass2Sensors(_ allow: Bool) -> Self { state.update { $0.options.allowClass2Sensors = allow }; return self }
    @discardableResult public func authenticatorSelector(_ selector: any AuthenticatorSelector) -> Self { state.update { $0.objects.authenticatorSelector = selector }; return self }
    @discardableResult public func pinEnroller(_ enroller: any PinEnroller) -> Self { state.update { $0.objects.pinEnroller = enroller }; return self }
    @discardableResult public func passwordEnroller(_ enroller: any PasswordEnroller) -> Self { state.update { $0.objects.passwordEnroller = enroller }; return self }
    @discardableResult public func biometricUserVerifier(_ verifier: any BiometricUserVerifier) -> Self { state.update { $0.objects.biometricUserVerifier = verifier }; return self }
    @discardableResult public func devicePasscodeUserVerifier(_ verifier: any DevicePasscodeUserVerifier) -> Self { state.update { $0.objects.devicePasscodeUserVerifier = verifier }; return self }
    /// Android profile only: the legacy fingerprint authenticator.
    @discardableResult public func fingerprintUserVerifier(_ verifier: any FingerprintUserVerifier) -> Self { state.update { $0.objects.fingerprintUserVerifier = verifier }; return self }
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
        let headers = fields.headers.headerPairs + (fields.authorizationProvider?.httpHeaders ?? [])
        try await OperationRunner(core: core, objects: fields.objects, headers: headers).register(
            .inBand(username), server: Server(baseUrl: fields.serverUrl ?? core.configuration.baseUrl),
            deviceInformation: fields.deviceInformation, options: fields.options)
    }
}
