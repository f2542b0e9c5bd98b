import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The AAIDs of the SDK's authenticators (iOS numbering; Android uses `F1D0#000x`).
public enum AuthenticatorAaid: String, CaseIterable, Sendable {
    case Pin = "F1D0#1001"
    case Fingerprint = "F1D0#1002"
    case FaceRecognition = "F1D0#1003"
    case DevicePasscode = "F1D0#1004"
    case Password = "F1D0#1005"
}

/// Which accounts an authenticator is registered for.
public protocol RegistrationInfo: Encodable, Sendable {
    var registeredAccounts: [any Account] { get }
    func isRegistered(_ username: Username) -> Bool
}

/// Whether the user is enrolled in an authenticator.
public protocol UserEnrollment: Encodable, Sendable {}

/// Enrollment managed by the SDK (PIN, password): per account.
public struct SdkUserEnrollment: UserEnrollment, Hashable {
    let accounts: [AccountRecord]
    public var enrolledAccounts: [any Account] { accounts }
    public func isEnrolled(_ username: Username) -> Bool { accounts.contains { $0.username == username } }
}

/// Enrollment managed by the operating system (biometrics, device passcode).
public struct OsUserEnrollment: UserEnrollment, Hashable {
    let enrolled: Bool
    public func isEnrolled() -> Bool { enrolled }
}

/// One authenticator of the SDK as the app sees it.
public protocol Authenticator: Encodable, Sendable {
    var aaid: String { get }
    var registration: any RegistrationInfo { get }
    var userEnrollment: any UserEnrollment { get }
    var isSupportedByHardware: Bool { get }
}

struct RegistrationInfoValue: RegistrationInfo {
    let accounts: [AccountRecord]
    var registeredAccounts: [any Account] { accounts }
    func isRegistered(_ username: Username) -> Bool { accounts.contains { $0.username == username } }
}

struct AuthenticatorValue: Authenticator {
    let aaid: String
    let registeredAccounts: [AccountRecord]
    let enrollment: any UserEnrollment
    let isSupportedByHardware: Bool
    var registration: any RegistrationInfo { RegistrationInfoValue(accounts: registeredAccounts) }
    var userEnrollment: any UserEnrollment { enrollment }

    enum CodingKeys: String, CodingKey { case aaid, registeredAccounts, isSupportedByHardware }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(aaid, forKey: .aaid); try c.encode(registeredAccounts, forKey: .registeredAccounts)
        try c.encode(isSupportedByHardware, forKey: .isSupportedByHardware)
    }
}
