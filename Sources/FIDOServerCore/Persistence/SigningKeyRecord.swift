import Foundation
import SQLKit

/// A token-signing key held in the database, and where it is in its life.
public struct SigningKeyRecord: Sendable, Equatable {
    public enum State: String, Sendable { case pending, active, retired }
    public var kid: String
    public var pem: String
    public var createdAt: Date
    public var activatedAt: Date?
    public var retiredAt: Date?

    public var state: State { retiredAt != nil ? .retired : activatedAt != nil ? .active : .pending }
}
