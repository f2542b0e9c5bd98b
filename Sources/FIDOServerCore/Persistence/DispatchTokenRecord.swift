import Foundation
import SQLKit

/// A dispatched token (server-api §B.6): what it redeems and how it was sent. The token itself is never stored,
/// only its SHA-256: a database reader cannot redeem what it reads.
public struct DispatchTokenRecord: Sendable, Equatable {
    public var tokenHash: String
    public var sessionId: String
    public var operation: String
    /// The JSON of the dispatch request's `getUafRequest`, answered when the token is redeemed.
    public var getUAFRequest: String
    public var username: String?
    public var dispatchTargetId: String?
    public var dispatcher: String
    public var dispatchInformation: String?
    /// The payload as dispatched (JSON), kept only when encrypted: the device's pending operations return it.
    public var payload: String?
    public var createdAt: Date
    public var expiresAt: Date
    public var redeemedAt: Date?
    /// The device the dispatching credential was confined to (a device signature): the operation stays within it.
    public var deviceId: String? = nil
}
