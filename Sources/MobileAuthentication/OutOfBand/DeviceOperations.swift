import Foundation
import NevisProtocol
import UAF

// MARK: Pending out-of-band operations

/// An out-of-band operation dispatched to this device that is neither redeemed nor expired (server-api §D.3).
public struct PendingOutOfBandOperation: Sendable {
    public let creationTime: Date
    /// `firebase-cloud-messaging`, `png-qr-code`, `link` or `link-png-qr-code`.
    public let dispatcherName: String
    /// Decrypted: hand it to `outOfBandOperation.payload(_:)`.
    public let payload: OutOfBandPayload
    /// The dispatch request's `dispatchInformation` JSON (for push, the notification), if any.
    public let dispatchInformation: String?
    public let server: Server
}

public struct PendingOutOfBandOperationsResult: Sendable {
    /// Oldest first, newest last.
    public let operations: [PendingOutOfBandOperation]
    /// One per server that could not be asked (the others' operations are still returned).
    public let errors: [PendingOutOfBandOperationsError]
}

/// Fetches the pending out-of-band operations of this device from every server it has a dispatch target on (the
/// "fetch channel" for pushes that never arrived). Call it when the app starts or returns to the foreground, not in
/// a loop: every call is a signed request the server checks.
public final class PendingOutOfBandOperations: HttpOperation {
    struct Fields: Sendable {
        var headers: [String] = []
        var onResult: (@Sendable (PendingOutOfBandOperationsResult) -> Void)?
    }
    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self { state.update { $0.headers = headers }; return self }
    @discardableResult public func onResult(_ callback: @escaping @Sendable (PendingOutOfBandOperationsResult) -> Void) -> Self { state.update { $0.onResult = callback }; return self }

    public func execute() {
        let callback = state.value.onResult
        Task { callback?(await self.executeAsync()) }
    }

    public func executeAsync() async -> PendingOutOfBandOperationsResult {
        do {
            try core.checkIntegrity(deviceProtection: { PendingOutOfBandOperationsError.DeviceProtectionError(cause: $0) },
                                    noDeviceLock: PendingOutOfBandOperationsError.NoDeviceLockError(cause: nil))
        } catch { return PendingOutOfBandOperationsResult(operations: [], errors: [error]) }
        let data = core.mirror.snapshot
        guard let deviceId = data.deviceInformation?.deviceId else { return PendingOutOfBandOperationsResult(operations: [], errors: []) }
        let client = DeviceServiceClient(core: core, headers: state.value.headers.headerPairs, retryPolicy: core.configuration.defaultRetryPolicy)
        var operations: [PendingOutOfBandOperation] = []
        var errors: [PendingOutOfBandOperationsError] = []
        for (server, targets) in client.servers(in: data) {
            switch await client.get(DeviceServiceWire.PendingOperations.self, DeviceServiceWire.operationsComponent, server: server,
                                    signers: targets.map(\.id), deviceId: deviceId) {
            case .failure(let failure): errors.append(.init(failure))
            case .success(let answer):
                for operation in answer.operations {
                    // An entry that does not decrypt with this device's key is reported, never silently dropped.
                    do {
                        let payload = try await core.open(try DispatchPayload.parse(json: operation.payload))
                        operations.append(PendingOutOfBandOperation(
                            creationTime: Date(timeIntervalSince1970: TimeInterval(operation.creationTimeInEpochMillis) / 1000),
                            dispatcherName: operation.dispatcher, payload: payload, dispatchInformation: operation.dispatchInformation, server: server))
                    } catch {
                        errors.append(.Unknown(cause: client.failure(.other, server, 200, "a pending operation cannot be opened: \(error)")))
                    }
                }
            }
        }
        operations.sort { $0.creationTime < $1.creationTime }
        return PendingOutOfBandOperationsResult(operations: operations, errors: errors)
    }
}

// MARK: Device information change

/// Changes the device's name or push token, or turns push off, on every server the device has dispatch targets on,
/// then on the device. The device's state changes only when every server accepted.
public final class DeviceInformationChange: HttpOperation {
    struct Fields: Sendable {
        var name: String?
        var fcmRegistrationToken: String?
        var disablePushNotifications = false
        var retryPolicy: RetryPolicy?
        var headers: [String] = []
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (DeviceInformationChangeError) -> Void)?
    }
    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func name(_ name: String) -> Self { state.update { $0.name = name }; return self }
    @discardableResult public func fcmRegistrationToken(_ token: String) -> Self { state.update { $0.fcmRegistrationToken = token }; return self }
    @discardableResult public func disablePushNotifications() -> Self { state.update { $0.disablePushNotifications = true }; return self }
    @discardableResult public func retryPolicy(_ policy: RetryPolicy) -> Self { state.update { $0.retryPolicy = policy }; return self }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self { state.update { $0.headers = headers }; return self }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self { state.update { $0.onSuccess = callback }; return self }
    @discardableResult public func onError(_ callback: @escaping @Sendable (DeviceInformationChangeError) -> Void) -> Self { state.update { $0.onError = callback }; return self }

    public func execute() {
        let fields = state.value
        deliverInBackground({ () async throws(DeviceInformationChangeError) in try await self.executeAsync() }, onSuccess: fields.onSuccess, onError: fields.onError)
    }

    public func executeAsync() async throws(DeviceInformationChangeError) {
        let fields = state.value
        try core.checkIntegrity(deviceProtection: { DeviceInformationChangeError.DeviceProtectionError(cause: $0) },
                                noDeviceLock: DeviceInformationChangeError.NoDeviceLockError(cause: nil))
        if fields.disablePushNotifications && fields.fcmRegistrationToken != nil {
            throw .Unknown(cause: SDKMessage("give fcmRegistrationToken(_:) or disablePushNotifications(), not both"))
        }
        guard fields.name != nil || fields.fcmRegistrationToken != nil || fields.disablePushNotifications else {
            throw .Unknown(cause: SDKMessage("nothing to change: give name(_:), fcmRegistrationToken(_:) or disablePushNotifications()"))
        }
        // The server's rules (one home, in NevisProtocol), checked before anything is sent.
        if let name = fields.name, !DispatchTargetWire.isValid(name: name) {
            throw .Unknown(cause: SDKMessage("the name must be 1...\(DispatchTargetWire.maximumNameBytes) bytes without control characters"))
        }
        if let token = fields.fcmRegistrationToken, !DispatchTargetWire.isValid(pushToken: token) {
            throw .Unknown(cause: SDKMessage(token.isEmpty ? "the push token is empty: use disablePushNotifications()"
                                                           : "the push token is longer than \(DispatchTargetWire.maximumPushTokenBytes) bytes"))
        }
        let data = core.mirror.snapshot
        guard let information = data.deviceInformation else { throw .NotFound(cause: SDKMessage("the device has no device information yet (no registration)")) }
        let client = DeviceServiceClient(core: core, headers: fields.headers.headerPairs, retryPolicy: fields.retryPolicy ?? core.configuration.defaultRetryPolicy)
        for (server, targets) in client.servers(in: data) {
            if let failure = await client.modify(server: server, signers: targets.map(\.id), deviceId: information.deviceId, name: fields.name,
                                                 fcmRegistrationToken: fields.fcmRegistrationToken,
                                                 disablePushNotifications: fields.disablePushNotifications) {
                throw DeviceInformationChangeError(failure)
            }
        }
        do {
            try await core.commit { data in
                guard let current = data.deviceInformation else { return }
                data.deviceInformation = DeviceInformation(
                    name: fields.name ?? current.name,
                    fcmRegistrationToken: fields.disablePushNotifications ? nil : (fields.fcmRegistrationToken ?? current.fcmRegistrationToken),
                    deviceId: current.deviceId, idUsernamePairs: [])
            }
        } catch { throw .Unknown(cause: error) }
    }
}

// MARK: Device information check and sync

/// A difference between what a server and this device know (server-api §D.4).
public enum DeviceInformationMismatch: Sendable, Hashable {
    /// The server has a credential of this device that the device does not.
    case MissingAuthenticatorInMobileDevice(keyId: String, aaid: String, username: Username, server: Server)
    /// The device has a registration the server does not.
    case MissingAuthenticatorInServer(keyId: String, aaid: String, username: Username, server: Server)
    /// The server has a dispatch target of this device that the device does not know.
    case MissingDeviceInformationInMobileDevice(dispatchTargetId: String, username: Username, server: Server)
    /// The device has a dispatch target the server does not.
    case MissingDeviceInformationInServer(idUsernamePair: IdUsernamePair, server: Server)
    case DeviceNameMismatch(nameInServer: String, nameInMobileDevice: String, server: Server)
    case FcmRegistrationTokenMismatch(tokenInServer: String?, tokenInMobileDevice: String?, server: Server)

    public var server: Server {
        switch self {
        case .MissingAuthenticatorInMobileDevice(_, _, _, let server), .MissingAuthenticatorInServer(_, _, _, let server),
             .MissingDeviceInformationInMobileDevice(_, _, let server), .MissingDeviceInformationInServer(_, let server),
             .DeviceNameMismatch(_, _, let server), .FcmRegistrationTokenMismatch(_, _, let server):
            return server
        }
    }
}

public struct DeviceInformationCheckResult: Sendable {
    public let mismatches: [DeviceInformationMismatch]
    /// One per server that could not be checked (the others' mismatches are still returned).
    public let errors: [DeviceInformationCheckError]
}

/// Compares what each server the device has dispatch targets on knows about the device (its Device Service) with
/// what the device knows: credentials, dispatch targets, name and push token.
public final class DeviceInformationCheck: HttpOperation {
    struct Fields: Sendable {
        var headers: [String] = []
        var onResult: (@Sendable (DeviceInformationCheckResult) -> Void)?
    }
    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self { state.update { $0.headers = headers }; return self }
    @discardableResult public func onResult(_ callback: @escaping @Sendable (DeviceInformationCheckResult) -> Void) -> Self { state.update { $0.onResult = callback }; return self }

    public func execute() {
        let callback = state.value.onResult
        Task { callback?(await self.executeAsync()) }
    }

    public func executeAsync() async -> DeviceInformationCheckResult {
        do {
            try core.checkIntegrity(deviceProtection: { DeviceInformationCheckError.DeviceProtectionError(cause: $0) },
                                    noDeviceLock: DeviceInformationCheckError.NoDeviceLockError(cause: nil))
        } catch { return DeviceInformationCheckResult(mismatches: [], errors: [error]) }
        let data = core.mirror.snapshot
        guard let information = data.deviceInformation else { return DeviceInformationCheckResult(mismatches: [], errors: []) }
        let client = DeviceServiceClient(core: core, headers: state.value.headers.headerPairs, retryPolicy: core.configuration.defaultRetryPolicy)
        var mismatches: [DeviceInformationMismatch] = []
        var errors: [DeviceInformationCheckError] = []
        for (server, targets) in client.servers(in: data) {
            switch await client.get(DeviceServiceWire.Credentials.self, DeviceServiceWire.credentialsComponent, server: server,
                                    signers: targets.map(\.id), deviceId: information.deviceId) {
            case .failure(let failure): errors.append(.init(failure))
            case .success(let answer): mismatches += Self.compare(answer, device: data, information: information, server: server)
            }
        }
        return DeviceInformationCheckResult(mismatches: mismatches, errors: errors)
    }

    /// The mismatches between one server's answer and the device's state for that server.
    static func compare(_ answer: DeviceServiceWire.Credentials, device data: LocalStateData, information: DeviceInformation, server: Server) -> [DeviceInformationMismatch] {
        var mismatches: [DeviceInformationMismatch] = []
        // The server lists credentials of the users the device has targets for there; for the device's other users
        // nothing can be said.
        let listedUsers = Set(answer.dispatchTargets.map(\.username))
        let local = data.registrations.filter { $0.server == server && listedUsers.contains($0.username) }
        for credential in answer.credentials where !local.contains(where: { $0.keyID == credential.keyId && AAID.equal($0.aaid, credential.aaid) }) {
            mismatches.append(.MissingAuthenticatorInMobileDevice(keyId: credential.keyId, aaid: credential.aaid, username: credential.username, server: server))
        }
        for registration in local where !answer.credentials.contains(where: { $0.keyId == registration.keyID && AAID.equal($0.aaid, registration.aaid) }) {
            mismatches.append(.MissingAuthenticatorInServer(keyId: registration.keyID, aaid: registration.aaid, username: registration.username, server: server))
        }
        let localTargets = data.dispatchTargets.filter { $0.server == server }
        for target in answer.dispatchTargets where !localTargets.contains(where: { $0.id == target.id }) {
            mismatches.append(.MissingDeviceInformationInMobileDevice(dispatchTargetId: target.id, username: target.username, server: server))
        }
        for target in localTargets where !answer.dispatchTargets.contains(where: { $0.id == target.id }) {
            mismatches.append(.MissingDeviceInformationInServer(idUsernamePair: IdUsernamePair(identifier: target.id, username: target.username), server: server))
        }
        // Name and push token: one mismatch per differing server value (every target of the device should agree).
        let known = answer.dispatchTargets.filter { target in localTargets.contains { $0.id == target.id } }
        var names: [String] = [], tokens: [String?] = []
        for target in known {
            if target.name != information.name, !names.contains(target.name) { names.append(target.name) }
            if target.target != information.fcmRegistrationToken, !tokens.contains(target.target) { tokens.append(target.target) }
        }
        mismatches += names.map { .DeviceNameMismatch(nameInServer: $0, nameInMobileDevice: information.name, server: server) }
        mismatches += tokens.map { .FcmRegistrationTokenMismatch(tokenInServer: $0, tokenInMobileDevice: information.fcmRegistrationToken, server: server) }
        return mismatches
    }
}

public struct DeviceInformationSyncResult: Sendable {
    /// One per mismatch that could not be resolved.
    public let errors: [DeviceInformationSyncError]
}

/// Resolves the mismatches a ``DeviceInformationCheck`` found, best effort, the device's state winning where it can:
///
/// | Mismatch | Resolution |
/// |---|---|
/// | `MissingAuthenticatorInMobileDevice` | the credential is deregistered on the server (device-signed; the device has no key for it) |
/// | `MissingAuthenticatorInServer` | the registration is deleted on the device (the server would refuse it) |
/// | `MissingDeviceInformationInMobileDevice` | the dispatch target is deleted on the server (device-signed) |
/// | `MissingDeviceInformationInServer` | the stale local record is dropped; the user's next authentication on that server creates the target again (creating one needs the user's authorization) |
/// | `DeviceNameMismatch`, `FcmRegistrationTokenMismatch` | the device's name and push token are written to the server |
public final class DeviceInformationSync: HttpOperation {
    struct Fields: Sendable {
        var mismatches: [DeviceInformationMismatch] = []
        var headers: [String] = []
        var onResult: (@Sendable (DeviceInformationSyncResult) -> Void)?
    }
    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func mismatches(_ mismatches: [DeviceInformationMismatch]) -> Self { state.update { $0.mismatches = mismatches }; return self }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self { state.update { $0.headers = headers }; return self }
    @discardableResult public func onResult(_ callback: @escaping @Sendable (DeviceInformationSyncResult) -> Void) -> Self { state.update { $0.onResult = callback }; return self }

    public func execute() {
        let callback = state.value.onResult
        Task { callback?(await self.executeAsync()) }
    }

    public func executeAsync() async -> DeviceInformationSyncResult {
        do {
            try core.checkIntegrity(deviceProtection: { DeviceInformationSyncError.DeviceProtectionError(cause: $0) },
                                    noDeviceLock: DeviceInformationSyncError.NoDeviceLockError(cause: nil))
        } catch { return DeviceInformationSyncResult(errors: [error]) }
        let fields = state.value
        let client = DeviceServiceClient(core: core, headers: fields.headers.headerPairs, retryPolicy: core.configuration.defaultRetryPolicy)
        var errors: [DeviceInformationSyncError] = []
        // Credentials before targets: deregistering a credential the device lacks is signed as that user's target,
        // which must still exist on the server.
        let ordered = fields.mismatches.filter { if case .MissingAuthenticatorInMobileDevice = $0 { return true }; return false }
            + fields.mismatches.filter { if case .MissingAuthenticatorInMobileDevice = $0 { return false }; return true }
        var pushedDeviceInformation: Set<Server> = []
        for mismatch in ordered {
            let data = core.mirror.snapshot
            let server = mismatch.server
            let targets = data.dispatchTargets.filter { $0.server == server }
            switch mismatch {
            case .MissingAuthenticatorInMobileDevice(let keyId, _, let username, _):
                // Signed as one of the user's targets on the server (the device's key signs for each of them).
                // The device may no longer know the user's target (its authenticator was removed locally): then the
                // server's listing names it.
                var signerID = targets.first { $0.username == username }?.id
                if signerID == nil, let deviceId = data.deviceInformation?.deviceId {
                    signerID = try? await client.get(DeviceServiceWire.Credentials.self, DeviceServiceWire.credentialsComponent, server: server,
                                                     signers: targets.map(\.id), deviceId: deviceId).get()
                        .dispatchTargets.first { $0.username == username }?.id
                }
                guard let signerID else {
                    errors.append(.Unknown(cause: client.failure(.noDispatchTarget, server, 0, "no dispatch target of \(username) to sign with")))
                    continue
                }
                guard let context = try? UAFMessageCodec.encodeObject(Deregistration.Context(username: username, keyIDs: [keyId])),
                      let body = try? JSONEncoder().encode(GetUAFRequest(op: .deregistration, context: context)) else { continue }
                let url = core.configuration.url(core.configuration.deregistrationRequestPath, base: server.baseUrl)
                let result = await client.send(.POST, url, server: server, signers: [signerID], body: body, payload: { $0 })
                if case .failure(let failure) = result { errors.append(.init(failure)) }
            case .MissingAuthenticatorInServer(let keyId, let aaid, let username, _):
                let removed = data.registrations.filter { $0.server == server && $0.username == username && $0.keyID == keyId && AAID.equal($0.aaid, aaid) }
                do { try await LocalRemoval(core: core).remove(removed) } catch { errors.append(.Unknown(cause: error)) }
            case .MissingDeviceInformationInMobileDevice(let id, _, _):
                let url = core.configuration.url(core.configuration.dispatchTargetResourcePath, segments: [id], base: server.baseUrl)
                // Signed naming the target itself: it carries this device's public key, so the device may remove it.
                let result = await client.send(.DELETE, url, server: server, signers: [id], payload: { $0 })
                if case .failure(let failure) = result { errors.append(.init(failure)) }
            case .MissingDeviceInformationInServer(let pair, _):
                do {
                    try await core.commit { data in data.dispatchTargets.removeAll { $0.server == server && $0.id == pair.identifier } }
                } catch { errors.append(.Unknown(cause: error)) }
            case .DeviceNameMismatch, .FcmRegistrationTokenMismatch:
                // One write of the device's name and token per server resolves both kinds.
                guard !pushedDeviceInformation.contains(server), let information = data.deviceInformation else { continue }
                pushedDeviceInformation.insert(server)
                if let failure = await client.modify(server: server, signers: targets.map(\.id), deviceId: information.deviceId, name: information.name,
                                                     fcmRegistrationToken: information.fcmRegistrationToken,
                                                     disablePushNotifications: information.fcmRegistrationToken == nil) {
                    errors.append(.init(failure))
                }
            }
        }
        return DeviceInformationSyncResult(errors: errors)
    }
}
