import Foundation
import SQLKit

/// A device's dispatch target (server-api §B.8): where and how to reach it, and its two public keys.
public struct DispatchTargetRecord: Sendable, Equatable {
    public var id: String
    public var extId: String
    public var username: String
    public var name: String
    public var deviceId: String?
    public var dispatcher: String
    /// The push address (FCM registration token); nil when push is off.
    public var target: String?
    /// JWK JSON of the key that verifies the device's JWS requests.
    public var signatureKey: String
    /// JWK JSON of the key payloads are encrypted to.
    public var encryptionKey: String?
    public var createdAt: Date
    public var updatedAt: Date
}
