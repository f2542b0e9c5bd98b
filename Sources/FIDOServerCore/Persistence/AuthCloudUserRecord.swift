import Foundation
import SQLKit

/// A user of the Auth Cloud API: a stable `userId` (a UUID) for a relying party's username. The user's
/// authenticators are the ordinary registrations of that username; the row only adds the id and its dates.
public struct AuthCloudUserRecord: Sendable, Equatable {
    public var userId: String
    public var username: String
    public var createdAt: Date
    public var updatedAt: Date
    /// Who created the user: ``demoSite`` for the web demo, nil for a user of the API.
    public var createdBy: String? = nil

    /// ``createdBy`` of the users the web demo created.
    public static let demoSite = "demo-site"
}
