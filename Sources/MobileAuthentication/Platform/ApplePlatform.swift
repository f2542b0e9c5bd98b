#if canImport(LocalAuthentication) && canImport(Security)
import Foundation
import LocalAuthentication
import SecureStorage

/// Apple platforms: LocalAuthentication verifies the user (Face ID, Touch ID, the device passcode) and reports
/// the facts the authenticators need (sensor, enrolment, the biometric domain state, whether a passcode is set);
/// the SDK's storage key is protected by the Keychain (``SecureStorage/KeychainKeyProtector``, this device only).
///
/// Authenticator keys are still the SDK's software keys inside that storage: Secure Enclave keys with
/// `.biometryCurrentSet` access control are not built yet, so a removed device lock is not detected after the
/// fact (``deviceLockGeneration`` stays 0). Linux is the tested path; this type is compiled only on Apple platforms.
public struct ApplePlatform: Platform {
    public let storageDirectory: URL
    public let applicationFacetId: String

    public init(storageDirectory: URL, applicationFacetId: String = MetaData.applicationFacetId) {
        self.storageDirectory = storageDirectory; self.applicationFacetId = applicationFacetId
    }

    /// The Keychain secret is already bound to this device (`…ThisDeviceOnly`), so the fingerprint only separates apps.
    public var deviceFingerprint: String { "apple|\(applicationFacetId)" }
    public func now() -> Date { Date() }
    public func makeKeyProtector() throws -> any KeyProtector { KeychainKeyProtector() }
    public var deviceProfile: DeviceProfile { .ios }

    /// A debugger can read keys and PINs from memory (Apple QA1361: the `P_TRACED` flag of the process).
    public func checkIntegrity() throws(PlatformIntegrityError) {
        var info = kinfo_proc()
        var mib: [Int32] = [CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()]
        var size = MemoryLayout<kinfo_proc>.stride
        if sysctl(&mib, UInt32(mib.count), &info, &size, nil, 0) == 0, (info.kp_proc.p_flag & P_TRACED) != 0 {
            throw .deviceProtection("a debugger is attached")
        }
        if !hasDeviceLock { throw .noDeviceLock }
    }

    public var biometricSensors: Set<BiometricSensor> {
        let context = LAContext()
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil)
        switch context.biometryType {
        case .faceID: return [.faceID]
        case .touchID: return [.touchID]
        default: return []
        }
    }

    public var biometricsEnrolled: Bool { LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) }

    public var biometricSetIdentifier: String? {
        let context = LAContext()
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: nil) else { return nil }
        return context.evaluatedPolicyDomainState?.base64EncodedString()
    }

    public var hasDeviceLock: Bool { LAContext().canEvaluatePolicy(.deviceOwnerAuthentication, error: nil) }

    public func verifyWithOS(_ request: OSVerificationRequest) async -> OSVerificationResult {
        let context = LAContext()
        let policy: LAPolicy
        switch request.kind {
        case .biometric(_, let passcodeFallback):
            // Without the fallback the prompt offers no passcode button (an empty title hides it).
            policy = passcodeFallback ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
            context.localizedFallbackTitle = passcodeFallback ? request.fallbackButtonTitle : ""
        case .devicePasscode:
            policy = .deviceOwnerAuthentication
        }
        if let cancel = request.cancelButtonTitle { context.localizedCancelTitle = cancel }
        var availability: NSError?
        guard context.canEvaluatePolicy(policy, error: &availability) else {
            return .notAvailable(availability?.localizedDescription ?? "the device cannot verify the user")
        }
        do {
            return try await context.evaluatePolicy(policy, localizedReason: request.reason) ? .verified : .failed
        } catch let error as LAError {
            switch error.code {
            case .userCancel, .appCancel, .systemCancel, .userFallback: return .cancelled
            case .biometryNotEnrolled, .biometryNotAvailable, .passcodeNotSet: return .notAvailable(error.localizedDescription)
            default: return .failed
            }
        } catch {
            return .failed
        }
    }
}
#endif
