import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

public typealias Username = String

/// The server an account is registered with.
public struct Server: Codable, Hashable, Sendable {
    public let baseUrl: URL
    public init(baseUrl: URL) { self.baseUrl = baseUrl }
}

/// A user registered on this device.
public protocol Account: Encodable, Sendable {
    var username: Username { get }
    var server: Server { get }
}

package struct AccountRecord: Account, Codable, Hashable {
    package let username: Username
    package let server: Server
}

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

/// A username–identifier pair of the device information (dispatch target).
public struct IdUsernamePair: Codable, Hashable, Sendable {
    public let identifier: String
    public let username: Username
    public init(identifier: String, username: Username) { self.identifier = identifier; self.username = username }
}

/// The device's information, created by its first registration (one per device).
public struct DeviceInformation: Codable, Hashable, Sendable {
    public let name: String
    public let fcmRegistrationToken: String?
    public let deviceId: String
    public let idUsernamePairs: [IdUsernamePair]

    public init(name: String) { self.init(name: name, fcmRegistrationToken: nil) }
    public init(name: String, fcmRegistrationToken: String?) {
        self.name = name; self.fcmRegistrationToken = fcmRegistrationToken
        self.deviceId = UUID().uuidString; self.idUsernamePairs = []
    }
    package init(name: String, fcmRegistrationToken: String?, deviceId: String, idUsernamePairs: [IdUsernamePair]) {
        self.name = name; self.fcmRegistrationToken = fcmRegistrationToken; self.deviceId = deviceId; self.idUsernamePairs = idUsernamePairs
    }
}

/// Credentials the server hands out after a successful authentication, or needed to authorize a call.
public protocol AuthorizationProvider: Sendable {
    /// Headers to add to the request this provider authorizes.
    var httpHeaders: [(String, String)] { get }
}

/// Session cookies from a prior login.
public struct CookieAuthorizationProvider: AuthorizationProvider {
    public let cookies: [HTTPCookie]
    public init(_ cookies: [HTTPCookie]) { self.cookies = cookies }
    public var httpHeaders: [(String, String)] {
        cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; "))]
    }
}

/// A JWT sent as `Authorization: Bearer <jwt>`.
public struct JwtAuthorizationProvider: AuthorizationProvider {
    public let jwt: String
    public init(jwt: String) { self.jwt = jwt }
    public var httpHeaders: [(String, String)] { [("Authorization", "Bearer \(jwt)")] }
}

/// Authorization by the device itself: each request carries a fresh `Device-Signature` JWS, signed with the device
/// key of the user's dispatch target on that server (server-api §C.3). It needs no user interaction, so it serves
/// removal only: our server accepts it for deregistration (of this device's credentials) and never for enrolment.
/// The headers are computed per request by the operation, so ``httpHeaders`` is empty.
public struct JwsAuthorizationProvider: AuthorizationProvider {
    public init() {}
    public var httpHeaders: [(String, String)] { [] }
}

/// A session to continue (second factor) or that the server returned.
public protocol SessionProvider: Sendable {
    var httpHeaders: [(String, String)] { get }
}

public struct CookieSessionProvider: SessionProvider {
    public let cookies: [HTTPCookie]
    public init(_ cookies: [HTTPCookie]) { self.cookies = cookies }
    public var httpHeaders: [(String, String)] { CookieAuthorizationProvider(cookies).httpHeaders }
}

public struct JwtSessionProvider: SessionProvider {
    public let jwt: String
    public init(jwt: String) { self.jwt = jwt }
    public var httpHeaders: [(String, String)] { [("Authorization", "Bearer \(jwt)")] }
}
