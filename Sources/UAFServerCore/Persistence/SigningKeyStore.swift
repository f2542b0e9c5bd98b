import Foundation
import SQLKit

/// The server's token-signing key when none is configured: generated once and shared through the database, so
/// every instance signs with, and publishes, the same key. Whoever can read the database can then forge tokens;
/// production deployments configure `tokens.signingKeyPath` instead (see the production checklist in the UAFServer documentation, "Deploying the server").
public struct SigningKeyStore: Sendable {
    let database: StoreDatabase

    /// The oldest stored key, inserting `candidate` first if there is none. Two instances starting together may
    /// both insert; both then read back the same oldest row.
    public func sharedKey(candidate: (kid: String, pem: String), now: Date) async throws -> (kid: String, pem: String) {
        try await database.run { sql in
            if let row = try await sql.raw("SELECT kid, private_key_pem FROM signing_keys ORDER BY created_at, kid LIMIT 1").first() {
                return (try row.decode(column: "kid", as: String.self), try row.decode(column: "private_key_pem", as: String.self))
            }
            try await sql.raw("""
                INSERT INTO signing_keys (kid, private_key_pem, created_at) VALUES (\(bind: candidate.kid), \(bind: candidate.pem), \(bind: now.epochMillis))
                ON CONFLICT DO NOTHING
                """).run()
            guard let row = try await sql.raw("SELECT kid, private_key_pem FROM signing_keys ORDER BY created_at, kid LIMIT 1").first() else {
                throw StoreError.malformedRow("signing_keys is empty after insert")
            }
            return (try row.decode(column: "kid", as: String.self), try row.decode(column: "private_key_pem", as: String.self))
        }
    }
}

/// Every store, on one database.
public struct Stores: Sendable {
    public let database: StoreDatabase
    public var requests: UAFRequestStore { UAFRequestStore(database: database) }
    public var registrations: RegistrationStore { RegistrationStore(database: database) }
    public var sessions: SessionStore { SessionStore(database: database) }
    public var status: StatusStore { StatusStore(database: database) }
    public var signingKeys: SigningKeyStore { SigningKeyStore(database: database) }
    public var dispatchTargets: DispatchTargetStore { DispatchTargetStore(database: database) }
    public var dispatchTokens: DispatchTokenStore { DispatchTokenStore(database: database) }
    public var deviceRequests: DeviceRequestStore { DeviceRequestStore(database: database) }
    public var authCloudUsers: AuthCloudUserStore { AuthCloudUserStore(database: database) }
    public var accessKeys: AccessKeyStore { AccessKeyStore(database: database) }
    public var ceremonies: CeremonyStore { CeremonyStore(database: database) }
    public init(database: StoreDatabase) { self.database = database }
}
