import Foundation
import UAF

/// The operations of the SDK; each property returns a new builder.
public protocol Operations: Sendable {
    var registration: Registration { get }
    var authCloudApiRegistration: AuthCloudApiRegistration { get }
    var authentication: Authentication { get }
    var deregistration: Deregistration { get }
    var pinChange: PinChange { get }
    var passwordChange: PasswordChange { get }
    var outOfBandPayloadDecode: OutOfBandPayloadDecode { get }
    var outOfBandOperation: OutOfBandOperation { get }
    var pendingOutOfBandOperations: PendingOutOfBandOperations { get }
    var deviceInformationChange: DeviceInformationChange { get }
    var deviceInformationCheck: DeviceInformationCheck { get }
    var deviceInformationSync: DeviceInformationSync { get }
    /// A new passkey through the platform's passkey authenticator (not in the Nevis SDK).
    var passkeyRegistration: PasskeyRegistration { get }
    /// A sign-in with a passkey (not in the Nevis SDK).
    var passkeyAuthentication: PasskeyAuthentication { get }
}

/// What the SDK keeps on the device.
public protocol LocalData: Sendable {
    var accounts: [any Account] { get }
    var authenticators: [any Authenticator] { get }
    var deviceInformation: DeviceInformation? { get }
    /// Deletes the user's authenticator (or all of them when `aaid` is nil) from this device only: keys, records,
    /// PIN or password verifier, and the device information with the last one. The server is not contacted, so
    /// its registrations remain (seed 002, "Remove local data"). `async` because the SDK's storage is an actor;
    /// the Nevis API is synchronous and must not run on the main thread.
    func deleteAuthenticator(username: Username, aaid: String?) async throws(DeleteAuthenticatorError)
}

/// The SDK's entry point, created by ``MobileAuthenticationClientInitializer``. Keep one per app.
public protocol MobileAuthenticationClient: Sendable {
    var operations: any Operations { get }
    var localData: any LocalData { get }
}

struct OperationsValue: Operations {
    let core: ClientCore
    var registration: Registration { Registration(core: core) }
    var authCloudApiRegistration: AuthCloudApiRegistration { AuthCloudApiRegistration(core: core) }
    var authentication: Authentication { Authentication(core: core) }
    var deregistration: Deregistration { Deregistration(core: core) }
    var pinChange: PinChange { PinChange(core: core) }
    var passwordChange: PasswordChange { PasswordChange(core: core) }
    var outOfBandPayloadDecode: OutOfBandPayloadDecode { OutOfBandPayloadDecode(core: core) }
    var outOfBandOperation: OutOfBandOperation { OutOfBandOperation(core: core) }
    var pendingOutOfBandOperations: PendingOutOfBandOperations { PendingOutOfBandOperations(core: core) }
    var deviceInformationChange: DeviceInformationChange { DeviceInformationChange(core: core) }
    var deviceInformationCheck: DeviceInformationCheck { DeviceInformationCheck(core: core) }
    var deviceInformationSync: DeviceInformationSync { DeviceInformationSync(core: core) }
    var passkeyRegistration: PasskeyRegistration { PasskeyRegistration(core: core) }
    var passkeyAuthentication: PasskeyAuthentication { PasskeyAuthentication(core: core) }
}

struct LocalDataValue: LocalData {
    let core: ClientCore
    var accounts: [any Account] { core.mirror.snapshot.accounts }
    var authenticators: [any Authenticator] { core.authenticators(in: core.mirror.snapshot) }
    var deviceInformation: DeviceInformation? { core.mirror.snapshot.publishedDeviceInformation }

    func deleteAuthenticator(username: Username, aaid: String?) async throws(DeleteAuthenticatorError) {
        if let aaid, core.module(aaid) == nil { throw .InvalidAaid(aaid: aaid) }
        let removed = core.mirror.snapshot.registrations.filter { $0.isOf(username, aaid: aaid) }
        do { try await LocalRemoval(core: core).remove(removed) } catch { throw .Unknown(cause: error) }
    }
}

final class DefaultMobileAuthenticationClient: MobileAuthenticationClient {
    let core: ClientCore
    init(core: ClientCore) { self.core = core }
    var operations: any Operations { OperationsValue(core: core) }
    var localData: any LocalData { LocalDataValue(core: core) }
}

extension MobileAuthenticationClient {
    /// Checks a PIN or password of `username` as its authenticator does before it signs (a wrong one counted, an
    /// attempt during a cool-down refused uncounted), outside any operation. Not the Nevis SDK's API: for a device
    /// without a person that holds the secret before it opens an operation (`mauth device approve --pin`), so that a
    /// wrong secret leaves the operation unopened, as a person who mistyped and walked away would. Nil for a client
    /// this SDK did not make.
    package func checkKnowledge(
        _ factor: KnowledgeVerifierStore.Factor, username: Username, secret: String
    ) async throws
        -> KnowledgeVerifierStore.Outcome?
    {
        guard let core = (self as? DefaultMobileAuthenticationClient)?.core else { return nil }
        return try await core.knowledgeStore(factor).verify(username: username, secret: secret, now: core.platform.now())
    }

    /// Releases the client's network resources (servers and tests that create many clients call this).
    public func shutdown() async {
        await (self as? DefaultMobileAuthenticationClient)?.core.transport.shutdown()
    }
}

/// Creates the client.
public final class MobileAuthenticationClientInitializer: Operation {
    struct Fields: Sendable {
        var configuration: Configuration?
        var platform: (any Platform)?
        var onSuccess: (@Sendable (any MobileAuthenticationClient) -> Void)?
        var onError: (@Sendable (InitializationError) -> Void)?
        var trace: (@Sendable (HTTPTraceEvent) -> Void)?
        var transport: (any ClientTransport)?
        var callbackQueue: DispatchQueue? = CallbackQueue.platformDefault
    }

    private let state = BuilderState(Fields())

    public init() {}

    @discardableResult public func configuration(_ configuration: Configuration) -> Self {
        state.update { $0.configuration = configuration }
        return self
    }
    /// The platform services. Without one: `ApplePlatform` on Apple platforms (the Secure Enclave, the Keychain,
    /// LocalAuthentication; no Secure Enclave in the Simulator), `SoftwarePlatform` elsewhere, each with its storage
    /// in the user's data folder.
    @discardableResult public func platform(_ platform: any Platform) -> Self {
        state.update { $0.platform = platform }
        return self
    }
    /// Reports every HTTP exchange (for the virtual device, QA tooling and debugging). The SDK never sends a
    /// PIN or a private key, so the bodies hold only protocol messages. Tokens, session cookies and encrypted payloads
    /// in them are replaced by `[redacted]` unless the app passes `HTTPTraceSecrets.included`: a trace is easily
    /// logged, and a bearer token in a log authorizes whoever reads it.
    @discardableResult public func httpTrace(secrets: HTTPTraceSecrets = .redacted, _ trace: @escaping @Sendable (HTTPTraceEvent) -> Void) -> Self {
        let hook: @Sendable (HTTPTraceEvent) -> Void
        switch secrets {
        case .redacted: hook = { trace($0.redacted()) }
        case .included: hook = trace
        }
        state.update { $0.trace = hook }
        return self
    }
    /// The queue the SDK calls the app's code on: every operation's result callbacks and the methods of its
    /// interaction objects (selectors, enrollers, verifiers, policies). The default is the main queue on Apple
    /// platforms, so UI code runs where UIKit and SwiftUI expect it; on Linux, where a tool or server has no main run
    /// loop, it is `nil`: the SDK's own executor calls at once, on a background thread. Handlers may be answered from
    /// any thread.
    @discardableResult public func callbackQueue(_ queue: DispatchQueue?) -> Self {
        state.update { $0.callbackQueue = queue }
        return self
    }
    /// Replaces the HTTPS transport (tests of the operation runner answer in memory).
    @discardableResult func transport(_ transport: any ClientTransport) -> Self {
        state.update { $0.transport = transport }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable (any MobileAuthenticationClient) -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (InitializationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: CallbackQueue(fields.callbackQueue), { () async throws(InitializationError) in try await self.executeAsync() },
            onSuccess: fields.onSuccess, onError: fields.onError)
    }

    /// Creates the client: checks the device, opens the SDK's secure storage and prepares the transport.
    public func executeAsync() async throws(InitializationError) -> any MobileAuthenticationClient {
        let fields = state.value
        guard let configuration = fields.configuration else { throw .Unknown(cause: SDKMessage("configuration is required")) }
        let platform = fields.platform ?? Self.defaultPlatform(configuration)
        do { try platform.checkIntegrity() } catch {
            switch error {
            case .deviceProtection(let reason): throw .DeviceProtectionError(cause: SDKMessage(reason))
            case .noDeviceLock: throw .NoDeviceLockError(cause: nil)
            }
        }
        do {
            let transport = try fields.transport ?? Self.defaultTransport(configuration, trace: fields.trace)
            let state = try await LocalState.open(platform: platform)
            let core = ClientCore(
                configuration: configuration, platform: platform, transport: transport, state: state, snapshot: await state.snapshot,
                callbackQueue: fields.callbackQueue)
            return DefaultMobileAuthenticationClient(core: core)
        } catch {
            throw .Unknown(cause: error)
        }
    }

    /// URLSession on Apple platforms (VPN On Demand, the system's proxy, HTTP/2, App Transport Security; the debug
    /// flavor's roots only in the debug flavor), AsyncHTTPClient on NIO elsewhere.
    static func defaultTransport(_ configuration: Configuration, trace: (@Sendable (HTTPTraceEvent) -> Void)?) throws -> any ClientTransport {
        #if canImport(Darwin)
        return try URLSessionTransport(configuration: configuration, trace: trace)
        #else
        return try HTTPTransport(configuration: configuration, trace: trace)
        #endif
    }

    /// The platform when the app names none: `ApplePlatform` on Apple platforms (without the Secure Enclave in
    /// the Simulator, which has none), `SoftwarePlatform` elsewhere, each with its storage in the user's data folder.
    static func defaultPlatform(_ configuration: Configuration) -> any Platform {
        let facet = configuration.facetId ?? MetaData.applicationFacetId
        let folder = facet.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? String($0) : "_" }.joined()
        #if canImport(LocalAuthentication) && canImport(Security)
        let support =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Application Support")
        #if targetEnvironment(simulator)
        let secureEnclave = false
        #else
        let secureEnclave = true
        #endif
        return ApplePlatform(
            storageDirectory: support.appendingPathComponent("mauth/\(folder)"), applicationFacetId: facet, secureEnclave: secureEnclave)
        #else
        let base: URL
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            base = URL(fileURLWithPath: xdg)
        } else {
            base = URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share")
        }
        return SoftwarePlatform(storageDirectory: base.appendingPathComponent("mauth/\(folder)"), applicationFacetId: facet)
        #endif
    }
}
