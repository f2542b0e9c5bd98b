import Foundation
import SQLKit

/// An Auth Cloud access key: only its SHA-256 is stored; the key itself is shown once, when it is created.
public struct AccessKeyRecord: Sendable, Equatable {
    public var id: String
    public var name: String
    public var createdAt: Date
    public var revokedAt: Date?
}
