import Foundation
import UAF

/// Touch ID, Face ID, the Android biometric and the Android fingerprint authenticators: the operating system
/// verifies the user and unlocks the key; the SDK never sees biometric data.
struct BiometricAuthenticator: AuthenticatorModule {
    let descriptor: AuthenticatorDescriptor

    /// The sensor this authenticator prompts with, if the device has a usable one.
    func sensor(_ platform: any Platform, allowClass2: Bool) -> BiometricSensor? {
        let sensors = platform.biometricSensors
        switch (descriptor.profile, descriptor.kind) {
        case (.ios, .fingerprint): return sensors.contains(.touchID) ? .touchID : nil
        case (.ios, .faceRecognition): return sensors.contains(.faceID) ? .faceID : nil
        case (.android, .fingerprint): return sensors.contains(.androidFingerprint) ? .androidFingerprint : nil
        case (.android, .biometric):
            if sensors.contains(.androidClass3) { return .androidClass3 }
            // Class 2 sensors are weak (spoofable faces): only when the app opted in (seed 003, secure defaults).
            return allowClass2 && sensors.contains(.androidClass2) ? .androidClass2 : nil
        default: return nil
        }
    }

    func isSupportedByHardware(_ platform: any Platform, options: RegistrationOptions) -> Bool {
        sensor(platform, allowClass2: options.allowClass2Sensors) != nil
    }

    func isUserEnrolled(_ platform: any Platform) -> Bool { platform.biometricsEnrolled }

    func enroll(username: Username, options: RegistrationOptions, session: VerificationSession) async throws(OperationError) -> Enrollment {
        let platform = session.platform
        guard let sensor = sensor(platform, allowClass2: options.allowClass2Sensors) else {
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: SDKMessage("this device has no sensor for \(descriptor.aaid)"))
        }
        guard platform.biometricsEnrolled else {
            throw .FidoError(errorCode: .userNotEnrolled, cause: SDKMessage("enroll biometrics in the system settings first"))
        }
        let authenticator = AuthenticatorValue(
            aaid: descriptor.aaid, registeredAccounts: [], enrollment: OsUserEnrollment(enrolled: true),
            isSupportedByHardware: true)
        try await prompt(sensor: sensor, passcodeFallback: options.allowDevicePasscodeAsFallback, authenticator: authenticator, session: session)
        // The key is bound to today's biometric set unless the app accepted new biometrics (seed 000, "Biometric
        // Authenticator Invalidation on New OS Biometrics").
        return Enrollment(
            access: KeyAccessControl(
                boundBiometricSet: options.invalidateOnNewOsBiometrics ? platform.biometricSetIdentifier : nil,
                deviceLockGeneration: lockBoundGeneration(descriptor, platform: platform)),
            hardware: HardwareKeyAccess(
                userVerification: .biometry(currentSet: options.invalidateOnNewOsBiometrics, passcodeFallback: options.allowDevicePasscodeAsFallback),
                requiresDeviceLock: true))
    }

    func verifyUser(registration: LocalRegistration, authenticator: any Authenticator, session: VerificationSession) async throws(OperationError) {
        try await requireUsableKey(registration, keyStore: session.keyStore)
        let options = registration.options ?? RegistrationOptions()
        guard let sensor = sensor(session.platform, allowClass2: options.allowClass2Sensors) else {
            throw .FidoError(errorCode: .authenticatorAccessDenied, cause: SDKMessage("the biometric sensor of \(descriptor.aaid) is not available"))
        }
        try await prompt(sensor: sensor, passcodeFallback: options.allowDevicePasscodeAsFallback, authenticator: authenticator, session: session)
    }

    /// Asks the app's verifier (it may show its own screen first), then shows the OS prompt with the app's texts.
    private func prompt(
        sensor: BiometricSensor, passcodeFallback: Bool, authenticator: any Authenticator,
        session: VerificationSession
    ) async throws(OperationError) {
        let context = OSVerificationContextValue(authenticator: authenticator)
        let request: OSPromptRequest
        let valid: @Sendable () -> Void
        if descriptor.profile == .android && descriptor.kind == .fingerprint {
            guard let verifier = session.objects.fingerprintUserVerifier else {
                throw .Unknown(cause: SDKMessage("the fingerprint authenticator needs a fingerprintUserVerifier"))
            }
            request = try await session.interaction.ask { gate in
                verifier.verifyFingerprint(context: context, handler: OSPromptHandler(gate: gate, defaultPrompt: .defaultFingerprint))
            }
            valid = { verifier.onValidCredentialsProvided() }
        } else {
            guard let verifier = session.objects.biometricUserVerifier else {
                throw .Unknown(cause: SDKMessage("the biometric authenticator needs a biometricUserVerifier"))
            }
            request = try await session.interaction.ask { gate in
                verifier.verifyBiometric(context: context, handler: OSPromptHandler(gate: gate, defaultPrompt: .defaultBiometric))
            }
            valid = { verifier.onValidCredentialsProvided() }
        }
        let result = await session.platform.verifyWithOS(
            OSVerificationRequest(
                kind: .biometric(sensor: sensor, passcodeFallback: passcodeFallback), reason: request.reason,
                fallbackButtonTitle: passcodeFallback ? request.fallbackButtonTitle : nil, cancelButtonTitle: request.cancelButtonTitle))
        // A passcode answer counts only when the key allows it: an OS that offered it anyway does not get its way.
        if result == .verifiedWithPasscodeFallback && !passcodeFallback {
            throw .FidoError(errorCode: .authenticatorAccessDenied, cause: SDKMessage("the device passcode is not allowed as fallback"))
        }
        try mapOSResult(result)
        session.interaction.tell(valid)
    }
}

/// The device passcode authenticator: the OS verifies the passcode that locks the device.
struct DevicePasscodeAuthenticator: AuthenticatorModule {
    let descriptor: AuthenticatorDescriptor

    func isSupportedByHardware(_ platform: any Platform, options: RegistrationOptions) -> Bool { platform.hasDeviceLock }
    func isUserEnrolled(_ platform: any Platform) -> Bool { platform.hasDeviceLock }

    func enroll(username: Username, options: RegistrationOptions, session: VerificationSession) async throws(OperationError) -> Enrollment {
        guard session.platform.hasDeviceLock else {
            throw .FidoError(errorCode: .userNotEnrolled, cause: SDKMessage("set a device passcode first"))
        }
        let authenticator = AuthenticatorValue(
            aaid: descriptor.aaid, registeredAccounts: [], enrollment: OsUserEnrollment(enrolled: true),
            isSupportedByHardware: true)
        try await prompt(authenticator: authenticator, session: session)
        return Enrollment(
            access: KeyAccessControl(boundBiometricSet: nil, deviceLockGeneration: session.platform.deviceLockGeneration),
            hardware: HardwareKeyAccess(userVerification: .deviceOwner, requiresDeviceLock: true))
    }

    func verifyUser(registration: LocalRegistration, authenticator: any Authenticator, session: VerificationSession) async throws(OperationError) {
        try await requireUsableKey(registration, keyStore: session.keyStore)
        try await prompt(authenticator: authenticator, session: session)
    }

    private func prompt(authenticator: any Authenticator, session: VerificationSession) async throws(OperationError) {
        guard let verifier = session.objects.devicePasscodeUserVerifier else {
            throw .Unknown(cause: SDKMessage("the device passcode authenticator needs a devicePasscodeUserVerifier"))
        }
        let context = OSVerificationContextValue(authenticator: authenticator)
        let request: OSPromptRequest = try await session.interaction.ask { gate in
            verifier.verifyDevicePasscode(context: context, handler: OSPromptHandler(gate: gate, defaultPrompt: .defaultPasscode))
        }
        try mapOSResult(
            await session.platform.verifyWithOS(
                OSVerificationRequest(
                    kind: .devicePasscode, reason: request.reason, fallbackButtonTitle: nil, cancelButtonTitle: nil)))
        session.interaction.tell { verifier.onValidCredentialsProvided() }
    }
}

/// How an OS prompt's end becomes the operation's outcome. Our contract: a prompt the OS gave up on (too many
/// failed attempts) is `authenticatorAccessDenied`; biometrics locked until the passcode is entered are
/// `userLockout` (the key is intact); a prompt the OS cannot show is `userNotEnrolled`; biometrics the app may not use
/// (Face ID off for it) are `authenticatorAccessDenied`, with what the user can do.
private func mapOSResult(_ result: OSVerificationResult) throws(OperationError) {
    switch result {
    case .verified, .verifiedWithPasscodeFallback: return
    case .cancelled: throw .FidoError(errorCode: .userCanceled, cause: nil)
    case .failed: throw .FidoError(errorCode: .authenticatorAccessDenied, cause: SDKMessage("the operating system did not verify the user"))
    case .lockedOut(let reason): throw .FidoError(errorCode: .userLockout, cause: SDKMessage(reason))
    case .notAvailable(let reason): throw .FidoError(errorCode: .userNotEnrolled, cause: SDKMessage(reason))
    case .notAllowed(let reason): throw .FidoError(errorCode: .authenticatorAccessDenied, cause: SDKMessage(reason))
    }
}
