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
public protocol UserEnrollment: Encodable, Equatable, Sendable {}

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

/// One authenticator of the SDK as the app sees it. `Equatable`, as in the Nevis SDK: two values are equal when
/// they show the same AAID, registrations, enrollment and hardware support.
public protocol Authenticator: Encodable, Equatable, Sendable {
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

    static func == (lhs: AuthenticatorValue, rhs: AuthenticatorValue) -> Bool {
        lhs.aaid == rhs.aaid && lhs.registeredAccounts == rhs.registeredAccounts && lhs.isSupportedByHardware == rhs.isSupportedByHardware
            && Self.same(lhs.enrollment, rhs.enrollment)
    }

    /// Two enrollments of any kind: equal when of the same type and equal as that type.
    private static func same<SameEnrollment: UserEnrollment>(_ lhs: SameEnrollment, _ rhs: any UserEnrollment) -> Bool {
        (rhs as? SameEnrollment) == lhs
    }

    enum CodingKeys: String, CodingKey { case aaid, registeredAccounts, isSupportedByHardware }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(aaid, forKey: .aaid)
        try c.encode(registeredAccounts, forKey: .registeredAccounts)
        try c.encode(isSupportedByHardware, forKey: .isSupportedByHardware)
    }
}
