import Crypto
import Foundation
import Primitives
import UAF

/// What an authenticator hands the runner after verifying the user at registration: the secrets to commit with
/// the registration (a PIN or password verifier) and the access control of the new key.
package struct Enrollment: Sendable {
    var changes = StateChanges()
    var access = KeyAccessControl()
    /// Create the key in the platform's hardware keystore, with this access (the OS-verified authenticators, and on
    /// iOS every authenticator).
    var hardware: HardwareKeyAccess?
}

/// What an authenticator needs to talk to the user and the platform during an operation.
package struct VerificationSession: Sendable {
    let platform: any Platform
    let keyStore: KeyStore
    let state: LocalState
    let objects: InteractionObjects
    let interaction: Interaction

    func knowledgeStore(_ factor: KnowledgeVerifierStore.Factor) -> KnowledgeVerifierStore { KnowledgeVerifierStore(state: state, factor: factor) }
}

/// The ASM layer: one authenticator per AAID. It verifies the user its own way (PIN, password, OS biometrics,
/// device passcode) and builds the KRD and SIGNED_DATA with `UAF`, signing through the ``KeyStore``.
///
/// Named `AuthenticatorModule` because `Authenticator` is the app-facing model protocol of the Nevis API.
package protocol AuthenticatorModule: Sendable {
    var descriptor: AuthenticatorDescriptor { get }
    /// Whether the device's hardware (and OS state) lets this authenticator work at all.
    func isSupportedByHardware(_ platform: any Platform, options: RegistrationOptions) -> Bool
    /// For OS-managed authenticators: whether the user enrolled (biometrics, or a device passcode).
    func isUserEnrolled(_ platform: any Platform) -> Bool
    /// Verifies (or enrolls) the user for a new registration.
    func enroll(username: Username, options: RegistrationOptions, session: VerificationSession) async throws(OperationError) -> Enrollment
    /// Verifies the user before the key of `registration` signs.
    func verifyUser(registration: LocalRegistration, authenticator: any Authenticator, session: VerificationSession) async throws(OperationError)
}

/// A registration assertion and the key behind it, not yet stored.
struct NewCredential: Sendable {
    let key: GeneratedKey
    let keyID: [UInt8]
    let scheme: SigningScheme
    /// The TAG_UAFV1_REG_ASSERTION bytes.
    let assertion: [UInt8]
}

extension AuthenticatorModule {
    /// Generates the key, builds the KRD and signs it (surrogate basic attestation: the new key signs its own KRD).
    func register(
        fcParams: String, scheme: SigningScheme, registrationCounter: UInt32, enrollment: Enrollment,
        keyStore: KeyStore
    ) async throws -> NewCredential {
        let keyID = SecureRandom.bytes(32)
        let key = try keyStore.generate(
            alias: "\(descriptor.aaid)/\(Base64URL.encode(keyID))", scheme: scheme, access: enrollment.access,
            hardware: enrollment.hardware)
        do {
            let krd = KeyRegistrationData(
                aaid: descriptor.aaid, authenticatorVersion: 1, signatureAlgorithm: scheme.algorithm, publicKeyEncoding: scheme.keyEncoding,
                finalChallengeHash: FinalChallengeParams.hash(fcParams: fcParams), keyID: keyID, signCounter: 0,
                registrationCounter: registrationCounter, publicKey: key.publicKey)
            let signed = try krd.encoded()
            let assertion = try RegistrationAssertion.encode(
                signedKRD: signed, attestation: .basicSurrogate(signature: try await key.sign(signed, algorithm: scheme.algorithm)))
            return NewCredential(key: key, keyID: keyID, scheme: scheme, assertion: assertion)
        } catch {
            key.discard()
            throw error
        }
    }

    /// Builds and signs SIGNED_DATA for `registration` (mode 0x02 when `transaction` is the content the app showed).
    func sign(
        registration: LocalRegistration, fcParams: String, counter: UInt32, transaction: Data?, keyStore: KeyStore
    ) async throws(OperationError) -> [UInt8] {
        let algorithm = registration.signatureAlgorithm ?? SigningScheme.ecdsaP256.algorithm
        let signed = SignedData(
            aaid: descriptor.aaid, authenticatorVersion: 1,
            authenticationMode: transaction == nil ? AuthenticationMode.userVerified.rawValue : AuthenticationMode.transactionConfirmed.rawValue,
            signatureAlgorithm: algorithm, authenticatorNonce: SecureRandom.bytes(32),
            finalChallengeHash: FinalChallengeParams.hash(fcParams: fcParams),
            transactionContentHash: transaction.map(Transaction.contentHash(of:)) ?? [],
            keyID: Array(Base64URL.decode(registration.keyID) ?? Data()), signCounter: counter)
        do {
            let bytes = try signed.encoded()
            let signature = try await keyStore.sign(bytes, alias: registration.keyAlias, algorithm: algorithm)
            return try AuthenticationAssertion.encode(signedData: bytes, signature: signature)
        } catch let error as KeyStoreError {
            throw Self.operationError(error)
        } catch HardwareKeyError.unavailable(let reason) {
            throw .FidoError(errorCode: .authenticatorAccessDenied, cause: SDKMessage(reason))
        } catch {
            throw .Unknown(cause: error)
        }
    }

    /// Only a key that is gone is `keyDisappearedPermanently`, the answer that makes an app delete the registration.
    private static func operationError(_ error: KeyStoreError) -> OperationError {
        switch error {
        case .keyDisappeared(let reason): return .FidoError(errorCode: .keyDisappearedPermanently, cause: SDKMessage(reason))
        case .cancelled: return .FidoError(errorCode: .userCanceled, cause: nil)
        case .lockedOut(let reason): return .FidoError(errorCode: .userLockout, cause: SDKMessage(reason))
        case .notEnrolled(let reason): return .FidoError(errorCode: .userNotEnrolled, cause: SDKMessage(reason))
        case .notAllowed(let reason): return .FidoError(errorCode: .authenticatorAccessDenied, cause: SDKMessage(reason))
        }
    }

    /// Fails with `keyDisappearedPermanently` before the user is bothered if the key is already gone.
    func requireUsableKey(_ registration: LocalRegistration, keyStore: KeyStore) async throws(OperationError) {
        do {
            try await keyStore.requireUsable(alias: registration.keyAlias)
        } catch .keyDisappeared {
            throw .FidoError(
                errorCode: .keyDisappearedPermanently,
                cause: SDKMessage("the key of \(descriptor.aaid) for \(registration.username) is gone; delete the authenticator and register again"))
        } catch {
            throw Self.operationError(error)
        }
    }

    func isUserEnrolled(_ platform: any Platform) -> Bool { true }
}

/// The module for each descriptor.
func makeAuthenticatorModule(_ descriptor: AuthenticatorDescriptor) -> any AuthenticatorModule {
    switch descriptor.kind {
    case .pin: return KnowledgeAuthenticator(descriptor: descriptor, factor: .pin)
    case .password: return KnowledgeAuthenticator(descriptor: descriptor, factor: .password)
    case .fingerprint, .faceRecognition, .biometric: return BiometricAuthenticator(descriptor: descriptor)
    case .devicePasscode: return DevicePasscodeAuthenticator(descriptor: descriptor)
    }
}

/// iOS keeps every authenticator key in the Secure Enclave, which the OS wipes when the device lock is removed;
/// on Android only the device passcode authenticator's key goes with the lock (seed 000, "Authentication Key
/// Revocation Scenarios").
func lockBoundGeneration(_ descriptor: AuthenticatorDescriptor, platform: any Platform) -> Int? {
    descriptor.profile == .ios || descriptor.kind == .devicePasscode ? platform.deviceLockGeneration : nil
}
