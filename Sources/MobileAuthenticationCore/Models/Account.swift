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

/// A user registered on this device. `Hashable`, as in the Nevis SDK: accounts go in sets and dictionary keys.
public protocol Account: Encodable, Hashable, Sendable {
    var username: Username { get }
    var server: Server { get }
}

package struct AccountRecord: Account, Codable, Hashable {
    package let username: Username
    package let server: Server
}
