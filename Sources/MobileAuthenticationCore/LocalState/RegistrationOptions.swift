/// Registration options that change how an authenticator protects its key (seed 003, "Secure Defaults").
package struct RegistrationOptions: Sendable, Codable, Hashable {
    /// Secure default: false. Biometric authenticators only.
    package var allowDevicePasscodeAsFallback = false
    /// Secure default: true. Biometric authenticators only.
    package var invalidateOnNewOsBiometrics = true
    /// Secure default: false. Android biometric authenticator only.
    package var allowClass2Sensors = false

    package init() {}
}
