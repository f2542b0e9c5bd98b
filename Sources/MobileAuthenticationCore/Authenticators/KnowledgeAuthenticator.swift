import Foundation
import UAF

/// The PIN and password authenticators: the SDK enrolls and matches the secret itself, against a salted scrypt
/// verifier with the cool-down table and lockout of ``CoolDownPolicy``.
struct KnowledgeAuthenticator: AuthenticatorModule {
    let descriptor: AuthenticatorDescriptor
    let factor: KnowledgeVerifierStore.Factor

    func isSupportedByHardware(_ platform: any Platform, options: RegistrationOptions) -> Bool { true }

    func enroll(username: Username, options: RegistrationOptions, session: VerificationSession) async throws(OperationError) -> Enrollment {
        let secret: String
        switch factor {
        case .pin: secret = try await enrollPin(username: username, session: session)
        case .password: secret = try await enrollPassword(username: username, session: session)
        }
        let lockBound = lockBoundGeneration(descriptor, platform: session.platform)
        // On iOS the key is a hardware key too, so that the OS wipes it with the device lock (seed 000, "Device lock
        // removal"); the hardware asks for nothing, the SDK verifies the secret.
        var enrollment = Enrollment(
            access: KeyAccessControl(boundBiometricSet: nil, deviceLockGeneration: lockBound),
            hardware: lockBound == nil ? nil : HardwareKeyAccess(userVerification: .application, requiresDeviceLock: true))
        do {
            let store = session.knowledgeStore(factor)
            try enrollment.changes.set(try KnowledgeVerifierStore.record(for: secret), store.entry(username))
        } catch { throw .Unknown(cause: error) }
        return enrollment
    }

    /// Asks the enroller until it gives a PIN that satisfies its policy (a bad one is a recoverable error).
    private func enrollPin(username: Username, session: VerificationSession) async throws(OperationError) -> String {
        guard let enroller = session.objects.pinEnroller else { throw .Unknown(cause: SDKMessage("the PIN authenticator needs a pinEnroller")) }
        let policy = await session.interaction.read { enroller.pinPolicy() }
        let pin = try await Self.askUntilValid(
            session: session,
            ask: { (lastError: PinEnrollmentError?, gate: InteractionGate<String>) in
                enroller.enrollPin(
                    context: PinEnrollmentContextValue(username: username, lastRecoverableError: lastError),
                    handler: TextAnswerHandler(gate: gate))
            }, problem: { pin async throws(OperationError) in policy.violation(pin).map { .InvalidPinFormat(message: $0) } })
        session.interaction.tell { enroller.onValidCredentialsProvided() }
        return pin
    }

    /// Asks the enroller until the SDK's floor and the app's ``PasswordPolicy`` accept the password.
    private func enrollPassword(username: Username, session: VerificationSession) async throws(OperationError) -> String {
        guard let enroller = session.objects.passwordEnroller else {
            throw .Unknown(cause: SDKMessage("the password authenticator needs a passwordEnroller"))
        }
        let policy = await session.interaction.read { enroller.passwordPolicy() }
        let password = try await Self.askUntilValid(
            session: session,
            ask: { (lastError: PasswordEnrollmentError?, gate: InteractionGate<String>) in
                enroller.enrollPassword(
                    context: PasswordEnrollmentContextValue(username: username, lastRecoverableError: lastError),
                    handler: TextAnswerHandler(gate: gate))
            },
            problem: { password async throws(OperationError) in
                if let problem = PasswordRules.violation(password) { return .CustomValidationError(message: problem) }
                let verdict: PasswordEnrollmentValidationError? = try await session.interaction.ask { gate in
                    policy.validatePasswordForEnrollment(
                        password, onSuccess: { gate.resolve(.answered(nil)) },
                        onError: { gate.resolve(.answered($0)) })
                }
                return verdict.map { .CustomValidationError(message: $0.message) }
            })
        session.interaction.tell { enroller.onValidCredentialsProvided() }
        return password
    }

    /// The enrollment loop: asks with the last recoverable error until a value has no problem.
    private static func askUntilValid<Problem: Sendable>(
        session: VerificationSession, ask: @escaping @Sendable (Problem?, InteractionGate<String>) -> Void,
        problem: (String) async throws(OperationError) -> Problem?
    ) async throws(OperationError) -> String {
        var lastError: Problem?
        while true {
            let current = lastError
            let value: String = try await session.interaction.ask { gate in ask(current, gate) }
            guard let found = try await problem(value) else { return value }
            lastError = found
        }
    }

    func verifyUser(registration: LocalRegistration, authenticator: any Authenticator, session: VerificationSession) async throws(OperationError) {
        try await requireUsableKey(registration, keyStore: session.keyStore)
        let store = session.knowledgeStore(factor)
        let username = registration.username
        let now = { session.platform.now() }
        let enrolled: ProtectionState?
        do { enrolled = try await store.state(username: username, now: now()) } catch { throw .Unknown(cause: error) }
        guard var state = enrolled else {
            throw .FidoError(errorCode: .userNotEnrolled, cause: SDKMessage("no \(factor.rawValue) is enrolled for \(username)"))
        }
        if state == .lockedOut { throw .FidoError(errorCode: .userLockout, cause: nil) }
        while true {
            let secret = try await askSecret(state: state, authenticator: authenticator, session: session)
            let outcome: KnowledgeVerifierStore.Outcome
            do { outcome = try await store.verify(username: username, secret: secret, now: now()) } catch { throw .Unknown(cause: error) }
            switch outcome {
            case .verified:
                tellValid(session)
                return
            case .rejected(let newState), .coolingDown(let newState): state = newState
            case .lockedOut: throw .FidoError(errorCode: .userLockout, cause: nil)
            case .notEnrolled: throw .FidoError(errorCode: .userNotEnrolled, cause: nil)
            }
        }
    }

    /// The verifier's `onValidCredentialsProvided()`: the right secret was given.
    private func tellValid(_ session: VerificationSession) {
        switch factor {
        case .pin: if let verifier = session.objects.pinUserVerifier { session.interaction.tell { verifier.onValidCredentialsProvided() } }
        case .password: if let verifier = session.objects.passwordUserVerifier { session.interaction.tell { verifier.onValidCredentialsProvided() } }
        }
    }

    /// Asks the app's verifier, with the timeout extended by the cool-down still to run.
    private func askSecret(
        state: ProtectionState, authenticator: any Authenticator, session: VerificationSession
    ) async throws(OperationError) -> String {
        let extra = TimeInterval(state.remainingCoolDown)
        switch factor {
        case .pin:
            guard let verifier = session.objects.pinUserVerifier else {
                throw .Unknown(cause: SDKMessage("the PIN authenticator needs a pinUserVerifier"))
            }
            let context = PinVerificationContextValue(
                authenticator: authenticator, authenticatorProtectionStatus: PinAuthenticatorProtectionStatus(state))
            return try await session.interaction.ask(extraTime: extra) { gate in
                verifier.verifyPin(context: context, handler: TextAnswerHandler(gate: gate))
            }
        case .password:
            guard let verifier = session.objects.passwordUserVerifier else {
                throw .Unknown(cause: SDKMessage("the password authenticator needs a passwordUserVerifier"))
            }
            let context = PasswordVerificationContextValue(
                authenticator: authenticator,
                authenticatorProtectionStatus: PasswordAuthenticatorProtectionStatus(state))
            return try await session.interaction.ask(extraTime: extra) { gate in
                verifier.verifyPassword(context: context, handler: TextAnswerHandler(gate: gate))
            }
        }
    }
}

/// The SDK's own floor under every password, whatever the app's policy says: not empty, not absurdly long (the
/// verifier hashes it), and valid text.
package enum PasswordRules {
    static let maximumLength = 1024

    package static func violation(_ password: String) -> String? {
        if password.isEmpty { return "The password must not be empty." }
        if password.utf8.count > maximumLength { return "The password must not be longer than \(maximumLength) bytes." }
        return nil
    }
}
