import Foundation
import SQLKit

/// Every store, on one database.
public struct Stores: Sendable {
    public let database: StoreDatabase
    public var uafCeremonies: UAFCeremonyStore { UAFCeremonyStore(database: database) }
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
    public var audit: AuditStore { AuditStore(database: database) }
    public var passkeys: PasskeyStore { PasskeyStore(database: database) }
    public var passkeyCeremonies: PasskeyCeremonyStore { PasskeyCeremonyStore(database: database) }
    public var appAttestKeys: AppAttestKeyStore { AppAttestKeyStore(database: database) }
    public var serverSecrets: ServerSecretStore { ServerSecretStore(database: database) }
    public init(database: StoreDatabase) { self.database = database }
}
