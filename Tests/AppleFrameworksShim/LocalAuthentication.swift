#if os(Linux)
import Foundation

// The subset of LocalAuthentication that `ApplePlatform` calls, with Apple's names, raw values and signatures
// (Apple's developer documentation, "LocalAuthentication"), so that the Apple path compiles on Linux. What each call
// answers comes from `ScriptedAppleDevice`: the tests script a device, not a framework's internals.

/// Foundation on Linux has no `NSErrorPointer`; `&error` passes to either spelling.
public typealias NSErrorPointer = UnsafeMutablePointer<NSError?>?

public let LAErrorDomain = "com.apple.LocalAuthentication"

public enum LAPolicy: Int, Sendable {
    case deviceOwnerAuthenticationWithBiometrics = 1
    case deviceOwnerAuthentication = 2
}

public enum LABiometryType: Int, Sendable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4
}

/// Apple's `LAError` is a bridged `NSError` struct whose `code` is one of these (raw values are Apple's).
public struct LAError: Error, Sendable {
    public enum Code: Int, Sendable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case companionNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004
    }
    public let code: Code
    public init(_ code: Code) { self.code = code }
    /// The `NSError` form the framework hands to `canEvaluatePolicy(_:error:)` and inside a `CFError`.
    public var nsError: NSError { NSError(domain: LAErrorDomain, code: code.rawValue, userInfo: [NSLocalizedDescriptionKey: "\(code)"]) }
}

open class LAContext: NSObject, @unchecked Sendable {
    public var localizedFallbackTitle: String?
    public var localizedCancelTitle: String?
    public private(set) var evaluatedPolicyDomainState: Data?
    /// What the device's biometric sensor is; `.none` until `canEvaluatePolicy(_:error:)` was called, as on iOS.
    public private(set) var biometryType: LABiometryType = .none
    /// Set when an evaluation succeeded: a key use with this context needs no second prompt.
    public private(set) var isAuthenticated = false

    public override init() { super.init() }

    open func canEvaluatePolicy(_ policy: LAPolicy, error: NSErrorPointer) -> Bool {
        let device = ScriptedAppleDevice.current
        biometryType = device.biometryType
        if let refusal = device.availabilityError(policy) {
            error?.pointee = refusal.nsError
            return false
        }
        evaluatedPolicyDomainState = device.biometryType == .none || !device.biometricsEnrolled ? nil : device.biometricDomainState
        return true
    }

    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        let device = ScriptedAppleDevice.current
        device.recordPrompt(.init(policy: policy, reason: localizedReason, fallbackTitle: localizedFallbackTitle, cancelTitle: localizedCancelTitle))
        if let refusal = device.availabilityError(policy) { throw refusal }
        if let outcome = device.nextPromptOutcome() { throw outcome }
        isAuthenticated = true
        return true
    }
}
#endif
