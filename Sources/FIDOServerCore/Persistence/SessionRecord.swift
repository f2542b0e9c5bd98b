import Crypto
import Foundation
import Primitives
import SQLKit
import UAF

/// A session opened by a sign-in (a UAF login or a passkey), or by a UAF registration for the device's next call.
public struct SessionRecord: Sendable, Equatable {
    /// Public identifier (the `sid` claim of the issued JWT); not a credential.
    public var id: String
    public var username: String
    /// The UAF key or passkey that opened it.
    public var credential: SessionCredential
    public var createdAt: Date
    public var expiresAt: Date
    public var revokedAt: Date?
}
