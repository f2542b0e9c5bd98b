import Foundation

/// What every builder of a registration or an authentication takes: the app's authenticator selector and the
/// operating system's verifiers. The builders the SDK hands out (``Registration``, ``Authentication``,
/// ``OutOfBandRegistration``, ``OutOfBandAuthentication``, ``AuthCloudApiRegistration``) inherit these setters from
/// here instead of repeating them; apps do not subclass it (its initializer is the SDK's).
public class CeremonyBuilder: @unchecked Sendable {
    // @unchecked: the only stored state is `BuilderState`, which locks.
    let interaction = BuilderState(InteractionObjects())

    init() {}

    @discardableResult public func authenticatorSelector(_ selector: any AuthenticatorSelector) -> Self {
        interaction.update { $0.authenticatorSelector = selector }
        return self
    }
    @discardableResult public func biometricUserVerifier(_ verifier: any BiometricUserVerifier) -> Self {
        interaction.update { $0.biometricUserVerifier = verifier }
        return self
    }
    @discardableResult public func devicePasscodeUserVerifier(_ verifier: any DevicePasscodeUserVerifier) -> Self {
        interaction.update { $0.devicePasscodeUserVerifier = verifier }
        return self
    }
    /// Android profile only: the legacy fingerprint authenticator.
    @discardableResult public func fingerprintUserVerifier(_ verifier: any FingerprintUserVerifier) -> Self {
        interaction.update { $0.fingerprintUserVerifier = verifier }
        return self
    }
}

/// What every registration builder takes besides: the PIN and password enrollers, the device's information and the
/// options a new key is created with.
public class RegistrationCeremonyBuilder: CeremonyBuilder, @unchecked Sendable {
    struct Settings: Sendable {
        var deviceInformation: DeviceInformation?
        var options = RegistrationOptions()
    }
    let settings = BuilderState(Settings())

    @discardableResult public func pinEnroller(_ enroller: any PinEnroller) -> Self {
        interaction.update { $0.pinEnroller = enroller }
        return self
    }
    @discardableResult public func passwordEnroller(_ enroller: any PasswordEnroller) -> Self {
        interaction.update { $0.passwordEnroller = enroller }
        return self
    }
    /// Needed on the device's first registration; ignored once the device has its information.
    @discardableResult public func deviceInformation(_ information: DeviceInformation) -> Self {
        settings.update { $0.deviceInformation = information }
        return self
    }
    /// Secure default: false. Cannot be combined with ``invalidateOnNewOsBiometrics(_:)``.
    @discardableResult public func allowDevicePasscodeAsFallback(_ allow: Bool) -> Self {
        settings.update { $0.options.allowDevicePasscodeAsFallback = allow }
        return self
    }
    /// Secure default: true.
    @discardableResult public func invalidateOnNewOsBiometrics(_ invalidate: Bool) -> Self {
        settings.update { $0.options.invalidateOnNewOsBiometrics = invalidate }
        return self
    }
    /// Android profile only. Secure default: false (Class 2 biometric sensors are weak).
    @discardableResult public func allowClass2Sensors(_ allow: Bool) -> Self {
        settings.update { $0.options.allowClass2Sensors = allow }
        return self
    }

    /// Registers `source` with `server`, with the interaction objects, device information and options set here.
    func register(
        _ source: OperationRunner.RegistrationSource, core: ClientCore, headers: [(String, String)],
        server: Server
    ) async throws(OperationError) {
        let settings = settings.value
        try await OperationRunner(core: core, objects: interaction.value, headers: headers).register(
            source, server: server, deviceInformation: settings.deviceInformation, options: settings.options)
    }
}

/// What every authentication builder takes besides: the account selector and the PIN and password verifiers.
public class AuthenticationCeremonyBuilder: CeremonyBuilder, @unchecked Sendable {
    /// Picks the account when no username is given and several accounts can authenticate.
    @discardableResult public func accountSelector(_ selector: any AccountSelector) -> Self {
        interaction.update { $0.accountSelector = selector }
        return self
    }
    @discardableResult public func pinUserVerifier(_ verifier: any PinUserVerifier) -> Self {
        interaction.update { $0.pinUserVerifier = verifier }
        return self
    }
    @discardableResult public func passwordUserVerifier(_ verifier: any PasswordUserVerifier) -> Self {
        interaction.update { $0.passwordUserVerifier = verifier }
        return self
    }
}
