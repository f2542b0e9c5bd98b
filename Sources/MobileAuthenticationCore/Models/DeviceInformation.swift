import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A username–identifier pair of the device information (dispatch target).
public struct IdUsernamePair: Codable, Hashable, Sendable {
    public let identifier: String
    public let username: Username
    public init(identifier: String, username: Username) {
        self.identifier = identifier
        self.username = username
    }
}

/// The device's information, created by its first registration (one per device).
public struct DeviceInformation: Codable, Hashable, Sendable {
    public let name: String
    public let fcmRegistrationToken: String?
    public let deviceId: String
    public let idUsernamePairs: [IdUsernamePair]

    public init(name: String) { self.init(name: name, fcmRegistrationToken: nil) }
    public init(name: String, fcmRegistrationToken: String?) {
        self.name = name
        self.fcmRegistrationToken = fcmRegistrationToken
        self.deviceId = UUID().uuidString
        self.idUsernamePairs = []
    }
    package init(name: String, fcmRegistrationToken: String?, deviceId: String, idUsernamePairs: [IdUsernamePair]) {
        self.name = name
        self.fcmRegistrationToken = fcmRegistrationToken
        self.deviceId = deviceId
        self.idUsernamePairs = idUsernamePairs
    }
}
