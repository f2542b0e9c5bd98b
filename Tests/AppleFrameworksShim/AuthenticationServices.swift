#if os(Linux)
import Foundation

// The subset of AuthenticationServices that `ApplePasskeyProvider` calls (passkeys through the platform's
// authenticator, iOS 17 and macOS 14 on), with Apple's names, signatures, raw values and isolation. What the sheet
// answers is `ScriptedPasskeySheet`'s: a test scripts the user's pick (or dismissal) and reads what was asked.

/// `UIWindow` on iOS, `NSWindow` on macOS.
@MainActor public final class ASPresentationAnchor {
    public init() {}
}

public struct ASAuthorizationPublicKeyCredentialUserVerificationPreference: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public static let required = Self("required")
    public static let preferred = Self("preferred")
    public static let discouraged = Self("discouraged")
}

public struct ASAuthorizationPublicKeyCredentialAttestationKind: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public static let none = Self("none")
    public static let direct = Self("direct")
    public static let indirect = Self("indirect")
    public static let enterprise = Self("enterprise")
}

open class ASAuthorizationRequest: NSObject, @unchecked Sendable {}

public final class ASAuthorizationPlatformPublicKeyCredentialDescriptor: NSObject, @unchecked Sendable {
    public var credentialID: Data
    public init(credentialID: Data) { self.credentialID = credentialID }
}

public final class ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest: ASAuthorizationRequest, @unchecked Sendable {
    public let relyingPartyIdentifier: String
    public var challenge: Data
    public var name: String
    public var userID: Data
    public var displayName: String?
    public var userVerificationPreference = ASAuthorizationPublicKeyCredentialUserVerificationPreference.preferred
    public var attestationPreference = ASAuthorizationPublicKeyCredentialAttestationKind.none
    /// iOS 17.4, macOS 14.4.
    public var excludedCredentials: [ASAuthorizationPlatformPublicKeyCredentialDescriptor] = []
    init(relyingPartyIdentifier: String, challenge: Data, name: String, userID: Data) {
        self.relyingPartyIdentifier = relyingPartyIdentifier
        self.challenge = challenge
        self.name = name
        self.userID = userID
    }
}

public final class ASAuthorizationPlatformPublicKeyCredentialAssertionRequest: ASAuthorizationRequest, @unchecked Sendable {
    public let relyingPartyIdentifier: String
    public var challenge: Data
    public var allowedCredentials: [ASAuthorizationPlatformPublicKeyCredentialDescriptor] = []
    public var userVerificationPreference = ASAuthorizationPublicKeyCredentialUserVerificationPreference.preferred
    init(relyingPartyIdentifier: String, challenge: Data) {
        self.relyingPartyIdentifier = relyingPartyIdentifier
        self.challenge = challenge
    }
}

public final class ASAuthorizationPlatformPublicKeyCredentialProvider: NSObject, @unchecked Sendable {
    public let relyingPartyIdentifier: String
    public init(relyingPartyIdentifier: String) { self.relyingPartyIdentifier = relyingPartyIdentifier }
    public func createCredentialRegistrationRequest(
        challenge: Data, name: String, userID: Data
    )
        -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest
    {
        ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest(
            relyingPartyIdentifier: relyingPartyIdentifier, challenge: challenge, name: name, userID: userID)
    }
    public func createCredentialAssertionRequest(challenge: Data) -> ASAuthorizationPlatformPublicKeyCredentialAssertionRequest {
        ASAuthorizationPlatformPublicKeyCredentialAssertionRequest(relyingPartyIdentifier: relyingPartyIdentifier, challenge: challenge)
    }
}

public protocol ASAuthorizationCredential: NSObjectProtocol {}

public final class ASAuthorizationPlatformPublicKeyCredentialRegistration: NSObject, ASAuthorizationCredential, @unchecked Sendable {
    public let rawAttestationObject: Data?
    public let rawClientDataJSON: Data
    public let credentialID: Data
    public init(rawAttestationObject: Data?, rawClientDataJSON: Data, credentialID: Data) {
        self.rawAttestationObject = rawAttestationObject
        self.rawClientDataJSON = rawClientDataJSON
        self.credentialID = credentialID
    }
}

public final class ASAuthorizationPlatformPublicKeyCredentialAssertion: NSObject, ASAuthorizationCredential, @unchecked Sendable {
    public let rawAuthenticatorData: Data!
    public let userID: Data!
    public let signature: Data!
    public let rawClientDataJSON: Data
    public let credentialID: Data
    public init(rawAuthenticatorData: Data?, userID: Data?, signature: Data?, rawClientDataJSON: Data, credentialID: Data) {
        self.rawAuthenticatorData = rawAuthenticatorData
        self.userID = userID
        self.signature = signature
        self.rawClientDataJSON = rawClientDataJSON
        self.credentialID = credentialID
    }
}

public final class ASAuthorization: NSObject, @unchecked Sendable {
    public let credential: any ASAuthorizationCredential
    public init(credential: any ASAuthorizationCredential) { self.credential = credential }
}

/// Apple's error struct (`ASAuthorizationErrorDomain`), its codes with their raw values.
public struct ASAuthorizationError: Error, Sendable, LocalizedError {
    public enum Code: Int, Sendable {
        case unknown = 1000
        case canceled = 1001
        case invalidResponse = 1002
        case notHandled = 1003
        case failed = 1004
        case notInteractive = 1005
        case matchedExcludedCredential = 1006
    }
    public let code: Code
    let text: String
    public init(_ code: Code, text: String = "") {
        self.code = code
        self.text = text
    }
    public var errorDescription: String? {
        text.isEmpty ? "The operation couldn’t be completed. (com.apple.AuthenticationServices.AuthorizationError error \(code.rawValue).)" : text
    }
}

@MainActor public protocol ASAuthorizationControllerDelegate: NSObjectProtocol {
    func authorizationController(controller: ASAuthorizationController, didCompleteWithAuthorization authorization: ASAuthorization)
    func authorizationController(controller: ASAuthorizationController, didCompleteWithError error: any Error)
}

@MainActor public protocol ASAuthorizationControllerPresentationContextProviding: NSObjectProtocol {
    func presentationAnchor(for controller: ASAuthorizationController) -> ASPresentationAnchor
}

public final class ASAuthorizationController: NSObject, @unchecked Sendable {
    public struct RequestOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let preferImmediatelyAvailableCredentials = RequestOptions(rawValue: 1)
    }

    public let authorizationRequests: [ASAuthorizationRequest]
    public weak var delegate: (any ASAuthorizationControllerDelegate)?
    public weak var presentationContextProvider: (any ASAuthorizationControllerPresentationContextProviding)?

    public init(authorizationRequests: [ASAuthorizationRequest]) { self.authorizationRequests = authorizationRequests }

    public func performRequests() { perform(.modal) }
    public func performRequests(options: RequestOptions) { perform(options.contains(.preferImmediatelyAvailableCredentials) ? .immediate : .modal) }
    public func performAutoFillAssistedRequests() { perform(.autoFill) }
    public func cancel() { ScriptedPasskeySheet.cancel() }

    /// The sheet, as iOS shows it: asks for the window, then answers the delegate later on the main queue.
    private func perform(_ mode: ScriptedPasskeySheet.Mode) {
        MainActor.assumeIsolated {
            let anchored = presentationContextProvider.map { _ = $0.presentationAnchor(for: self) } != nil
            ScriptedPasskeySheet.show(authorizationRequests, mode: mode, anchored: anchored) { outcome in
                Task { @MainActor in
                    switch outcome {
                    case .success(let authorization):
                        self.delegate?.authorizationController(controller: self, didCompleteWithAuthorization: authorization)
                    case .failure(let error): self.delegate?.authorizationController(controller: self, didCompleteWithError: error)
                    }
                }
            }
        }
    }
}

/// The user at the passkey sheet: the answer a test scripts, and what the app asked.
public enum ScriptedPasskeySheet {
    public enum Mode: Equatable, Sendable {
        case modal
        /// `performRequests(options: .preferImmediatelyAvailableCredentials)`.
        case immediate
        case autoFill
    }
    public struct Shown: @unchecked Sendable {
        public let request: ASAuthorizationRequest
        public let mode: Mode
        /// Whether the controller had a presentation anchor.
        public let anchored: Bool
    }
    private final class State: @unchecked Sendable {
        let lock = NSLock()
        var answer: (@Sendable (ASAuthorizationRequest) -> Result<ASAuthorization, ASAuthorizationError>)?
        var shown: [Shown] = []
        var waiting: (@Sendable (Result<ASAuthorization, ASAuthorizationError>) -> Void)?
    }
    private static let state = State()

    /// The user's answer to the next sheets; nil: the sheet stays up (AutoFill waits for a pick) until cancelled.
    public static func script(_ answer: (@Sendable (ASAuthorizationRequest) -> Result<ASAuthorization, ASAuthorizationError>)?) {
        state.lock.withLock {
            state.answer = answer
            state.shown = []
            state.waiting = nil
        }
    }

    public static var shown: [Shown] { state.lock.withLock { state.shown } }

    static func show(
        _ requests: [ASAuthorizationRequest], mode: Mode, anchored: Bool,
        _ deliver: @escaping @Sendable (Result<ASAuthorization, ASAuthorizationError>) -> Void
    ) {
        let answer = state.lock.withLock { () -> (@Sendable (ASAuthorizationRequest) -> Result<ASAuthorization, ASAuthorizationError>)? in
            state.shown.append(Shown(request: requests[0], mode: mode, anchored: anchored))
            if state.answer == nil { state.waiting = deliver }
            return state.answer
        }
        if let answer { deliver(answer(requests[0])) }
    }

    /// `cancel()`: a sheet still up ends with `canceled`.
    static func cancel() {
        let waiting = state.lock.withLock { () -> (@Sendable (Result<ASAuthorization, ASAuthorizationError>) -> Void)? in
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?(.failure(ASAuthorizationError(.canceled)))
    }
}
#endif
