// Compiled in MobileAuthenticationCore where AuthenticationServices exists, and in the test target ApplePlatformTests
// (a link to this file) only against its shim on Linux: on an Apple platform the test module is not this file's home.
#if APPLE_FRAMEWORKS_SHIM || (canImport(AuthenticationServices) && !APPLE_SOURCES_LINKED)
import Foundation
#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
import MobileAuthenticationCore
#else
import AuthenticationServices
#endif

/// Passkeys on Apple platforms: `ASAuthorizationPlatformPublicKeyCredentialProvider` (the iCloud Keychain's
/// passkeys, or another credential manager's) behind the SDK's ``PasskeyProvider``. The system writes the client
/// data (origin `https://<rpID>`) and verifies the user; the app needs the `webcredentials:<rpID>` associated domain.
///
/// - A new passkey: `createCredentialRegistrationRequest`, with the server's user verification and attestation
///   preferences and its existing credentials excluded (iOS 17.4 and later), shown with `performRequests()`.
/// - A sign-in: `createCredentialAssertionRequest` with the allowed credentials, shown with
///   `performRequests(options: .preferImmediatelyAvailableCredentials)`: without a passkey on the device the request
///   fails at once (`noCredential`) instead of offering another device's QR code, which an app's sign-in screen
///   rarely wants. ``PasskeyMediation/autoFill`` uses `performAutoFillAssistedRequests()` instead.
/// - Cancelling the operation's task cancels the sheet.
public struct ApplePasskeyProvider: PasskeyProvider {
    /// The window the sheet belongs to, asked on the main actor when a sheet is shown.
    let anchor: @MainActor @Sendable () -> ASPresentationAnchor

    public init(presentationAnchor: @escaping @MainActor @Sendable () -> ASPresentationAnchor) {
        anchor = presentationAnchor
    }

    /// The transports of an iCloud Keychain passkey, as Safari reports them: on this device, and from another
    /// through a phone (hybrid). AuthenticationServices does not report them to an app.
    static let transports = ["hybrid", "internal"]

    public func createPasskey(_ request: PasskeyCreationRequest) async throws(PasskeyFailure) -> PasskeyRegistrationResult {
        try await PasskeySheet.run(anchor: anchor, mode: .modal) {
            Self.registrationRequest(request)
        } result: { authorization throws(PasskeyFailure) in
            try Self.registration(authorization)
        }
    }

    public func assertPasskey(_ request: PasskeyAssertionRequest) async throws(PasskeyFailure) -> PasskeyAssertionResult {
        try await PasskeySheet.run(anchor: anchor, mode: request.mediation == .autoFill ? .autoFill : .immediate) {
            Self.assertionRequest(request)
        } result: { authorization throws(PasskeyFailure) in
            try Self.assertion(authorization)
        }
    }

    // MARK: What the platform is asked, and what its answers mean

    static func registrationRequest(_ request: PasskeyCreationRequest) -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: request.relyingPartyID)
        let registration = provider.createCredentialRegistrationRequest(challenge: request.challenge, name: request.userName, userID: request.userID)
        registration.displayName = request.displayName
        registration.userVerificationPreference = ASAuthorizationPublicKeyCredentialUserVerificationPreference(rawValue: request.userVerification)
        registration.attestationPreference = ASAuthorizationPublicKeyCredentialAttestationKind(rawValue: request.attestation)
        if #available(iOS 17.4, macOS 14.4, *) {
            registration.excludedCredentials = request.excludedCredentialIDs.map {
                ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0)
            }
        }
        return registration
    }

    static func assertionRequest(_ request: PasskeyAssertionRequest) -> ASAuthorizationPlatformPublicKeyCredentialAssertionRequest {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: request.relyingPartyID)
        let assertion = provider.createCredentialAssertionRequest(challenge: request.challenge)
        assertion.allowedCredentials = request.allowedCredentialIDs.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0) }
        assertion.userVerificationPreference = ASAuthorizationPublicKeyCredentialUserVerificationPreference(rawValue: request.userVerification)
        return assertion
    }

    static func registration(_ authorization: ASAuthorization) throws(PasskeyFailure) -> PasskeyRegistrationResult {
        guard let credential = authorization.credential as? ASAuthorizationPlatformPublicKeyCredentialRegistration else {
            throw PasskeyFailure(.failed, "the platform answered a registration with another kind of credential")
        }
        guard let attestationObject = credential.rawAttestationObject else {
            throw PasskeyFailure(.failed, "the platform's new passkey carries no attestation object")
        }
        return PasskeyRegistrationResult(
            credentialID: credential.credentialID, clientDataJSON: credential.rawClientDataJSON, attestationObject: attestationObject,
            transports: transports)
    }

    static func assertion(_ authorization: ASAuthorization) throws(PasskeyFailure) -> PasskeyAssertionResult {
        guard let credential = authorization.credential as? ASAuthorizationPlatformPublicKeyCredentialAssertion else {
            throw PasskeyFailure(.failed, "the platform answered a sign-in with another kind of credential")
        }
        guard let authenticatorData = credential.rawAuthenticatorData, let signature = credential.signature else {
            throw PasskeyFailure(.failed, "the platform's assertion lacks its authenticator data or signature")
        }
        return PasskeyAssertionResult(
            credentialID: credential.credentialID, clientDataJSON: credential.rawClientDataJSON, authenticatorData: authenticatorData,
            signature: signature, userHandle: credential.userID)
    }

    /// The platform's error as the SDK's: Apple sends passkey requests only `canceled`, `failed` (a bad parameter, an
    /// app not associated with the domain: its text says which), `notInteractive` (no passkey to offer at once) and,
    /// from iOS 18, `matchedExcludedCredential` (1006, compared by value: the case is iOS 18's).
    static func failure(_ error: any Error) -> PasskeyFailure {
        guard let error = error as? ASAuthorizationError else { return PasskeyFailure(.failed, error.localizedDescription) }
        switch error.code.rawValue {
        case ASAuthorizationError.Code.canceled.rawValue: return PasskeyFailure(.cancelled, "the user dismissed the passkey sheet")
        case ASAuthorizationError.Code.notInteractive.rawValue:
            return PasskeyFailure(.noCredential, "no passkey for this site is available on the device")
        case 1006: return PasskeyFailure(.alreadyRegistered, "the device already holds a passkey of this user for this site")
        default: return PasskeyFailure(.failed, error.localizedDescription)
        }
    }
}

/// One sheet: the controller, its delegate and its presentation context, on the main actor as AuthenticationServices
/// wants them; the answer's values are read there and only they leave it.
@MainActor
final class PasskeySheet: NSObject, ASAuthorizationControllerDelegate, ASAuthorizationControllerPresentationContextProviding {
    enum Mode {
        case modal, immediate, autoFill
    }

    private let window: ASPresentationAnchor
    private var controller: ASAuthorizationController?
    private var finish: ((Result<ASAuthorization, PasskeyFailure>) -> Void)?

    private init(window: ASPresentationAnchor) { self.window = window }

    static func run<Value: Sendable>(
        anchor: @escaping @MainActor @Sendable () -> ASPresentationAnchor, mode: Mode,
        request: @escaping @MainActor @Sendable () -> ASAuthorizationRequest,
        result: @escaping @MainActor @Sendable (ASAuthorization) throws(PasskeyFailure) -> Value
    ) async throws(PasskeyFailure) -> Value {
        let box = ControllerBox()
        let outcome: Result<Value, PasskeyFailure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                Task { @MainActor in
                    let ceremony = PasskeySheet(window: anchor())
                    // The controller keeps its delegate weakly: the ceremony keeps itself until the answer.
                    ceremony.finish = { answer in
                        continuation.resume(
                            returning: answer.flatMap { authorization in Result { () throws(PasskeyFailure) in try result(authorization) } })
                        ceremony.finish = nil
                        ceremony.controller = nil
                    }
                    let controller = ASAuthorizationController(authorizationRequests: [request()])
                    controller.delegate = ceremony
                    controller.presentationContextProvider = ceremony
                    ceremony.controller = controller
                    box.controller = controller
                    switch mode {
                    case .modal: controller.performRequests()
                    case .immediate: controller.performRequests(options: .preferImmediatelyAvailableCredentials)
                    case .autoFill: controller.performAutoFillAssistedRequests()
                    }
                }
            }
        } onCancel: {
            Task { @MainActor in box.controller?.cancel() }
        }
        return try outcome.get()
    }

    func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization) {
        finish?(.success(authorization))
    }

    func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error) {
        finish?(.failure(ApplePasskeyProvider.failure(error)))
    }

    func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor { window }
}

/// The running controller, for a cancellation that arrives from another task.
@MainActor
private final class ControllerBox: Sendable {
    var controller: ASAuthorizationController?
    nonisolated init() {}
}
#endif
