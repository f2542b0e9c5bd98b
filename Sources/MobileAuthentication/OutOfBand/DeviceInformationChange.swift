import Foundation
import NevisProtocol
import UAF

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

    @discardableResult public func name(_ name: String) -> Self {
        state.update { $0.name = name }
        return self
    }
    @discardableResult public func fcmRegistrationToken(_ token: String) -> Self {
        state.update { $0.fcmRegistrationToken = token }
        return self
    }
    @discardableResult public func disablePushNotifications() -> Self {
        state.update { $0.disablePushNotifications = true }
        return self
    }
    @discardableResult public func retryPolicy(_ policy: RetryPolicy) -> Self {
        state.update { $0.retryPolicy = policy }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (DeviceInformationChangeError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(DeviceInformationChangeError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    public func executeAsync() async throws(DeviceInformationChangeError) {
        let fields = state.value
        try core.checkIntegrity(
            deviceProtection: { DeviceInformationChangeError.DeviceProtectionError(cause: $0) },
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
            throw .Unknown(
                cause: SDKMessage(
                    token.isEmpty
                        ? "the push token is empty: use disablePushNotifications()"
                        : "the push token is longer than \(DispatchTargetWire.maximumPushTokenBytes) bytes"))
        }
        let data = core.mirror.snapshot
        guard let information = data.deviceInformation else {
            throw .NotFound(cause: SDKMessage("the device has no device information yet (no registration)"))
        }
        let client = DeviceServiceClient(
            core: core, headers: fields.headers.headerPairs, retryPolicy: fields.retryPolicy ?? core.configuration.defaultRetryPolicy)
        for (server, targets) in client.servers(in: data) {
            if let failure = await client.modify(
                server: server, signers: targets.map(\.id), deviceId: information.deviceId, name: fields.name,
                fcmRegistrationToken: fields.fcmRegistrationToken,
                disablePushNotifications: fields.disablePushNotifications)
            {
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
