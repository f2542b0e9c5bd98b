import Foundation

/// What the OS prompt of a biometric authenticator shows (iOS SDK 4.2+).
public struct BiometricPromptOptions: Sendable, Equatable {
    public let reason: String
    /// The title of the device-passcode button; shown only if the registration allowed the passcode fallback.
    public let fallbackButtonTitle: String?
    public let cancelButtonTitle: String?
    public init(reason: String, fallbackButtonTitle: String? = nil, cancelButtonTitle: String? = nil) {
        self.reason = reason
        self.fallbackButtonTitle = fallbackButtonTitle
        self.cancelButtonTitle = cancelButtonTitle
    }
}

/// What the OS prompt of the device passcode authenticator shows.
public struct DevicePasscodePromptOptions: Sendable, Equatable {
    public let reason: String
    public init(reason: String) { self.reason = reason }
}

/// The context of every user verification: the authenticator being used.
public protocol UserVerificationContext: Sendable {
    var authenticator: any Authenticator { get }
}

public protocol BiometricUserVerificationContext: UserVerificationContext {}
public protocol DevicePasscodeUserVerificationContext: UserVerificationContext {}
public protocol FingerprintUserVerificationContext: UserVerificationContext {}

/// The base of every handler: the app can always cancel the operation.
public protocol UserVerificationHandler: Sendable {
    func cancel()
}

/// Starts the OS prompt (after the app showed whatever it wants first) or cancels the operation.
public protocol BiometricUserVerificationHandler: Sendable {
    func verify(using options: BiometricPromptOptions)
    /// The pre-4.2 form: the OS prompt with the SDK's default texts.
    func verify()
    func cancel()
}

public protocol DevicePasscodeUserVerificationHandler: Sendable {
    func verify(using options: DevicePasscodePromptOptions)
    func verify()
    func cancel()
}

/// The Android fingerprint authenticator's handler: the app shows its own UI and lets the SDK listen.
public protocol FingerprintUserVerificationHandler: Sendable {
    func listenForOsCredentials()
    func cancel()
}

/// What the enrollers and verifiers have in common: `onValidCredentialsProvided()`, called once the SDK accepted what
/// the user gave (a PIN or password the policy accepts, the right PIN or password, a user the OS verified), so the
/// screen that asked can close. Optional, as on iOS in the Nevis SDK (its Android and cross-platform SDKs require
/// it). One protocol declares it, so an object that is several verifiers at once has one default, not several.
public protocol ValidCredentialsObserver: Sendable {
    func onValidCredentialsProvided()
}

extension ValidCredentialsObserver {
    public func onValidCredentialsProvided() {}
}

/// Implemented by the app for Touch ID, Face ID and the Android biometric authenticator. Called once: the OS
/// itself shows the retries.
public protocol BiometricUserVerifier: ValidCredentialsObserver {
    func verifyBiometric(context: any BiometricUserVerificationContext, handler: any BiometricUserVerificationHandler)
}

public protocol DevicePasscodeUserVerifier: ValidCredentialsObserver {
    func verifyDevicePasscode(context: any DevicePasscodeUserVerificationContext, handler: any DevicePasscodeUserVerificationHandler)
}

/// Implemented by the app for the Android fingerprint authenticator (Android profile only).
public protocol FingerprintUserVerifier: ValidCredentialsObserver {
    func verifyFingerprint(context: any FingerprintUserVerificationContext, handler: any FingerprintUserVerificationHandler)
}

/// The OS prompt the app asked for, with its texts.
struct OSPromptRequest: Sendable {
    let reason: String
    let fallbackButtonTitle: String?
    let cancelButtonTitle: String?

    static let defaultBiometric = OSPromptRequest(reason: "Please authenticate", fallbackButtonTitle: "Enter Passcode", cancelButtonTitle: "Cancel")
    static let defaultPasscode = OSPromptRequest(reason: "Please enter your device passcode", fallbackButtonTitle: nil, cancelButtonTitle: nil)
    static let defaultFingerprint = OSPromptRequest(reason: "Touch the fingerprint sensor", fallbackButtonTitle: nil, cancelButtonTitle: nil)
}

struct OSVerificationContextValue: BiometricUserVerificationContext, DevicePasscodeUserVerificationContext, FingerprintUserVerificationContext {
    let authenticator: any Authenticator
}
