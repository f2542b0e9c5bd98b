import Foundation
import NevisProtocol
import UAF

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

    @discardableResult public func mismatches(_ mismatches: [DeviceInformationMismatch]) -> Self {
        state.update { $0.mismatches = mismatches }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onResult(_ callback: @escaping @Sendable (DeviceInformationSyncResult) -> Void) -> Self {
        state.update { $0.onResult = callback }
        return self
    }

    public func execute() {
        deliver(on: core.callbacks, { await self.executeAsync() }, onResult: state.value.onResult)
    }

    public func executeAsync() async -> DeviceInformationSyncResult {
        do {
            try core.checkIntegrity(
                deviceProtection: { DeviceInformationSyncError.DeviceProtectionError(cause: $0) },
                noDeviceLock: DeviceInformationSyncError.NoDeviceLockError(cause: nil))
        } catch { return DeviceInformationSyncResult(errors: [error]) }
        let fields = state.value
        let client = DeviceServiceClient(core: core, headers: fields.headers.headerPairs, retryPolicy: core.configuration.defaultRetryPolicy)
        var errors: [DeviceInformationSyncError] = []
        // Credentials before targets: deregistering a credential the device lacks is signed as that user's target,
        // which must still exist on the server.
        let ordered =
            fields.mismatches.filter {
                if case .MissingAuthenticatorInMobileDevice = $0 { return true }
                return false
            }
            + fields.mismatches.filter {
                if case .MissingAuthenticatorInMobileDevice = $0 { return false }
                return true
            }
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
                    signerID = try? await client.get(
                        DeviceServiceWire.Credentials.self, DeviceServiceWire.credentialsComponent, server: server,
                        signers: targets.map(\.id), deviceId: deviceId
                    ).get()
                        .dispatchTargets.first { $0.username == username }?.id
                }
                guard let signerID else {
                    errors.append(.Unknown(cause: client.failure(.noDispatchTarget, server, 0, "no dispatch target of \(username) to sign with")))
                    continue
                }
                guard let context = try? UAFMessageCodec.encodeObject(Deregistration.Context(username: username, keyIDs: [keyId])),
                    let body = try? JSONEncoder().encode(GetUAFRequest(op: .deregistration, context: context))
                else { continue }
                let url = core.configuration.url(core.configuration.deregistrationRequestPath, base: server.baseUrl)
                let result = await client.send(.POST, url, server: server, signers: [signerID], body: body, payload: { $0 })
                if case .failure(let failure) = result { errors.append(.init(failure)) }
            case .MissingAuthenticatorInServer(let keyId, let aaid, let username, _):
                let removed = data.registrations.filter {
                    $0.server == server && $0.username == username && $0.keyID == keyId && AAID.equal($0.aaid, aaid)
                }
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
                if let failure = await client.modify(
                    server: server, signers: targets.map(\.id), deviceId: information.deviceId, name: information.name,
                    fcmRegistrationToken: information.fcmRegistrationToken,
                    disablePushNotifications: information.fcmRegistrationToken == nil)
                {
                    errors.append(.init(failure))
                }
            }
        }
        return DeviceInformationSyncResult(errors: errors)
    }
}
