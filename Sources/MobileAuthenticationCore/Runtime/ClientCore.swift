import Foundation
import UAF

/// A thread-safe copy of the local state for the synchronous `LocalData` accessors.
package final class StateMirror: @unchecked Sendable {
    private let lock = NSLock()
    private var value: LocalStateData
    init(_ value: LocalStateData) { self.value = value }
    package var snapshot: LocalStateData { lock.withLock { value } }
    func publish(_ new: LocalStateData) { lock.withLock { value = new } }
}

/// The client's dependencies, shared by its builders: configuration, platform, transport, local state, the key
/// store and the authenticators (the ASM layer). The steps of an operation live in ``OperationRunner``.
package final class ClientCore: Sendable {
    package let configuration: Configuration
    package let platform: any Platform
    package let transport: any ClientTransport
    let state: LocalState
    package let mirror: StateMirror
    let keyStore: KeyStore
    /// The five authenticators of the platform's profile.
    let modules: [any AuthenticatorModule]
    /// Trusted facet lists fetched recently, by appID.
    let facetCache = TrustedFacetsCache()
    /// Where the app's callbacks and interaction objects are called.
    package let callbacks: CallbackQueue

    package init(
        configuration: Configuration, platform: any Platform, transport: any ClientTransport, state: LocalState, snapshot: LocalStateData,
        callbackQueue: DispatchQueue? = CallbackQueue.platformDefault
    ) {
        self.configuration = configuration
        self.platform = platform
        self.transport = transport
        self.state = state
        self.callbacks = CallbackQueue(callbackQueue)
        self.mirror = StateMirror(snapshot)
        self.keyStore = KeyStore(state: state, platform: platform)
        self.modules = AuthenticatorDescriptor.all(for: platform.deviceProfile).map(makeAuthenticatorModule)
    }

    var facetID: String { configuration.facetId ?? platform.applicationFacetId }
    package var userInteractionTimeout: TimeInterval { TimeInterval(configuration.userInteractionTimeoutInSeconds) }
    /// How an operation asks the app: with the configured timeout, on the callback queue.
    package var interaction: Interaction { Interaction(timeout: userInteractionTimeout, callbacks: callbacks) }

    package func module(_ aaid: String) -> (any AuthenticatorModule)? {
        modules.first { AAID.equal($0.descriptor.aaid, aaid) }
    }

    package func knowledgeStore(_ factor: KnowledgeVerifierStore.Factor) -> KnowledgeVerifierStore {
        KnowledgeVerifierStore(state: state, factor: factor)
    }

    /// Commits an operation's outcome in one durable write and publishes it to the synchronous mirror.
    @discardableResult
    package func commit<T: Sendable>(_ changes: StateChanges = StateChanges(), _ body: @Sendable (inout LocalStateData) throws -> T) async throws -> T
    {
        let result = try await state.commit(changes, body)
        mirror.publish(await state.snapshot)
        return result
    }

    /// The authenticators as the app sees them: registration per account and hardware support are read from the
    /// local state and the platform now, not assumed.
    package func authenticators(in data: LocalStateData) -> [any Authenticator] {
        modules.map { module in
            let descriptor = module.descriptor
            let accounts = data.registrations.filter { AAID.equal($0.aaid, descriptor.aaid) }
                .map { AccountRecord(username: $0.username, server: $0.server) }
            let unique = accounts.reduce(into: [AccountRecord]()) { if !$0.contains($1) { $0.append($1) } }
            let enrollment: any UserEnrollment =
                descriptor.kind.isKnowledgeFactor
                ? SdkUserEnrollment(accounts: unique)
                : OsUserEnrollment(enrolled: module.isUserEnrolled(platform))
            return AuthenticatorValue(
                aaid: descriptor.aaid, registeredAccounts: unique, enrollment: enrollment,
                isSupportedByHardware: module.isSupportedByHardware(platform, options: RegistrationOptions()))
        }
    }

    package func checkIntegrity() throws(OperationError) {
        try checkIntegrity(
            deviceProtection: { OperationError.DeviceProtectionError(cause: $0) }, noDeviceLock: OperationError.NoDeviceLockError(cause: nil))
    }

    /// The platform's integrity check, as the two cases every operation's error type has.
    package func checkIntegrity<Failure: Error>(deviceProtection: (SDKMessage) -> Failure, noDeviceLock: Failure) throws(Failure) {
        do { try platform.checkIntegrity() } catch {
            switch error {
            case .deviceProtection(let reason): throw deviceProtection(SDKMessage(reason))
            case .noDeviceLock: throw noDeviceLock
            }
        }
    }
}

/// Trusted facet lists the client fetched, kept for ``lifetime`` so that each operation does not fetch the list
/// again (the UAF client algorithm allows caching it; FIDO AppID and Facet spec §3.1.2). Only a list that named our
/// facet is kept: a refusal is always re-checked, and a facet removed from the list is refused within the lifetime.
final class TrustedFacetsCache: @unchecked Sendable {
    static let lifetime: TimeInterval = 300
    private let lock = NSLock()
    private var entries: [String: Date] = [:]

    func isTrusted(appID: String, now: Date) -> Bool {
        lock.withLock { entries[appID].map { now < $0 } ?? false }
    }

    func remember(appID: String, now: Date) {
        lock.withLock { entries[appID] = now.addingTimeInterval(Self.lifetime) }
    }
}

extension ClientCore {
    /// The device keys, or nil before the first registration.
    package func deviceKeys() async throws -> DeviceKeys? { try await state.secret(DeviceKeys.self, DeviceKeys.entry) }
}
