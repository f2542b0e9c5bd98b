import Dispatch
import Foundation
import MobileAuthenticationSimulator

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// A simulated iPhone in `directory` whose client talks to an in-memory relying party, calling the app on
/// `callbackQueue`.
func makeInMemoryClient(
    in directory: URL, callbackQueue: DispatchQueue? = nil, interactionTimeout: Int = 5
)
    async throws -> (client: any MobileAuthenticationClient, party: InMemoryRelyingParty, platform: SimulatedPlatform)
{
    let platform = SimulatedPlatform(storageDirectory: directory, deviceProfile: .ios)
    let party = InMemoryRelyingParty(facetID: platform.applicationFacetId)
    let configuration = Configuration(
        baseUrl: URL(string: "https://rp.example")!, userInteractionTimeoutInSeconds: interactionTimeout,
        facetId: platform.applicationFacetId)
    let client = try await MobileAuthenticationClientInitializer().configuration(configuration).platform(platform).transport(party)
        .callbackQueue(callbackQueue).executeAsync()
    return (client, party, platform)
}

/// Records each call the SDK makes into the app, in order, and whether it ran on `queue`.
final class CallWitness: @unchecked Sendable {
    static let key = DispatchSpecificKey<String>()
    let label: String
    let queue: DispatchQueue
    private let lock = NSLock()
    private var calls: [(String, Bool)] = []

    init(label: String = "app.callbacks.\(UUID().uuidString)") {
        self.label = label
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.key, value: label)
    }

    func note(_ call: String) { lock.withLock { calls.append((call, DispatchQueue.getSpecific(key: Self.key) == label)) } }
    var names: [String] { lock.withLock { calls.map(\.0) } }
    var offQueue: [String] { lock.withLock { calls.filter { !$0.1 }.map(\.0) } }
}

/// The app's interaction objects, each noting its calls (the question, and "valid" for
/// `onValidCredentialsProvided()`) before answering from a script.
final class WitnessedSelector: AuthenticatorSelector, @unchecked Sendable {
    let witness: CallWitness
    let inner: ScriptedAuthenticatorSelector
    init(_ witness: CallWitness, choose aaid: String) {
        self.witness = witness
        inner = ScriptedAuthenticatorSelector(choose: aaid)
    }
    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        witness.note("selectAuthenticator")
        inner.selectAuthenticator(context: context, handler: handler)
    }
}

final class WitnessedPinEnroller: PinEnroller, @unchecked Sendable {
    let witness: CallWitness
    let inner: ScriptedPinEnroller
    init(_ witness: CallWitness, pins: [String?]) {
        self.witness = witness
        inner = ScriptedPinEnroller(pins: pins)
    }
    func enrollPin(context: any PinEnrollmentContext, handler: any PinEnrollmentHandler) {
        witness.note("enrollPin")
        inner.enrollPin(context: context, handler: handler)
    }
    func onValidCredentialsProvided() { witness.note("valid") }
}

final class WitnessedPinVerifier: PinUserVerifier, @unchecked Sendable {
    let witness: CallWitness
    let inner: ScriptedPinUserVerifier
    init(_ witness: CallWitness, pins: [String?]) {
        self.witness = witness
        inner = ScriptedPinUserVerifier(pins: pins)
    }
    func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
        witness.note("verifyPin")
        inner.verifyPin(context: context, handler: handler)
    }
    func onValidCredentialsProvided() { witness.note("valid") }
}

final class WitnessedPasswordEnroller: PasswordEnroller, @unchecked Sendable {
    let witness: CallWitness
    let inner: ScriptedPasswordEnroller
    init(_ witness: CallWitness, passwords: [String?]) {
        self.witness = witness
        inner = ScriptedPasswordEnroller(passwords: passwords)
    }
    func passwordPolicy() -> any PasswordPolicy { inner.passwordPolicy() }
    func enrollPassword(context: any PasswordEnrollmentContext, handler: any PasswordEnrollmentHandler) {
        witness.note("enrollPassword")
        inner.enrollPassword(context: context, handler: handler)
    }
    func onValidCredentialsProvided() { witness.note("valid") }
}

final class WitnessedPasswordVerifier: PasswordUserVerifier, @unchecked Sendable {
    let witness: CallWitness
    let inner: ScriptedPasswordUserVerifier
    init(_ witness: CallWitness, passwords: [String?]) {
        self.witness = witness
        inner = ScriptedPasswordUserVerifier(passwords: passwords)
    }
    func verifyPassword(context: any PasswordUserVerificationContext, handler: any PasswordUserVerificationHandler) {
        witness.note("verifyPassword")
        inner.verifyPassword(context: context, handler: handler)
    }
    func onValidCredentialsProvided() { witness.note("valid") }
}

/// One object for the biometric and the device passcode verifier, as an app may write it: one
/// `onValidCredentialsProvided()` serves both.
final class WitnessedOSVerifier: BiometricUserVerifier, DevicePasscodeUserVerifier, @unchecked Sendable {
    let witness: CallWitness
    let inner: ScriptedOSVerifier
    init(_ witness: CallWitness, _ answers: [ScriptedOSAnswer] = []) {
        self.witness = witness
        inner = ScriptedOSVerifier(answers)
    }
    func verifyBiometric(context: any BiometricUserVerificationContext, handler: any BiometricUserVerificationHandler) {
        witness.note("verifyBiometric")
        inner.verifyBiometric(context: context, handler: handler)
    }
    func verifyDevicePasscode(context: any DevicePasscodeUserVerificationContext, handler: any DevicePasscodeUserVerificationHandler) {
        witness.note("verifyDevicePasscode")
        inner.verifyDevicePasscode(context: context, handler: handler)
    }
    func onValidCredentialsProvided() { witness.note("valid") }
}
