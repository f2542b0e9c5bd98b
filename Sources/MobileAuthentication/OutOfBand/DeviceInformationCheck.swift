import Foundation
import NevisProtocol
import UAF

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

    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onResult(_ callback: @escaping @Sendable (DeviceInformationCheckResult) -> Void) -> Self {
        state.update { $0.onResult = callback }
        return self
    }

    public func execute() {
        deliver(on: core.callbacks, { await self.executeAsync() }, onResult: state.value.onResult)
    }

    public func executeAsync() async -> DeviceInformationCheckResult {
        do {
            try core.checkIntegrity(
                deviceProtection: { DeviceInformationCheckError.DeviceProtectionError(cause: $0) },
                noDeviceLock: DeviceInformationCheckError.NoDeviceLockError(cause: nil))
        } catch { return DeviceInformationCheckResult(mismatches: [], errors: [error]) }
        let data = core.mirror.snapshot
        guard let information = data.deviceInformation else { return DeviceInformationCheckResult(mismatches: [], errors: []) }
        let client = DeviceServiceClient(core: core, headers: state.value.headers.headerPairs, retryPolicy: core.configuration.defaultRetryPolicy)
        var mismatches: [DeviceInformationMismatch] = []
        var errors: [DeviceInformationCheckError] = []
        for (server, targets) in client.servers(in: data) {
            switch await client.get(
                DeviceServiceWire.Credentials.self, DeviceServiceWire.credentialsComponent, server: server,
                signers: targets.map(\.id), deviceId: information.deviceId)
            {
            case .failure(let failure): errors.append(.init(failure))
            case .success(let answer): mismatches += Self.compare(answer, device: data, information: information, server: server)
            }
        }
        return DeviceInformationCheckResult(mismatches: mismatches, errors: errors)
    }

    /// The mismatches between one server's answer and the device's state for that server.
    static func compare(
        _ answer: DeviceServiceWire.Credentials, device data: LocalStateData, information: DeviceInformation, server: Server
    ) -> [DeviceInformationMismatch] {
        var mismatches: [DeviceInformationMismatch] = []
        // The server lists credentials of the users the device has targets for there; for the device's other users
        // nothing can be said.
        let listedUsers = Set(answer.dispatchTargets.map(\.username))
        let local = data.registrations.filter { $0.server == server && listedUsers.contains($0.username) }
        for credential in answer.credentials where !local.contains(where: { $0.keyID == credential.keyId && AAID.equal($0.aaid, credential.aaid) }) {
            mismatches.append(
                .MissingAuthenticatorInMobileDevice(keyId: credential.keyId, aaid: credential.aaid, username: credential.username, server: server))
        }
        for registration in local
        where !answer.credentials.contains(where: { $0.keyId == registration.keyID && AAID.equal($0.aaid, registration.aaid) }) {
            mismatches.append(
                .MissingAuthenticatorInServer(keyId: registration.keyID, aaid: registration.aaid, username: registration.username, server: server))
        }
        let localTargets = data.dispatchTargets.filter { $0.server == server }
        for target in answer.dispatchTargets where !localTargets.contains(where: { $0.id == target.id }) {
            mismatches.append(.MissingDeviceInformationInMobileDevice(dispatchTargetId: target.id, username: target.username, server: server))
        }
        for target in localTargets where !answer.dispatchTargets.contains(where: { $0.id == target.id }) {
            mismatches.append(
                .MissingDeviceInformationInServer(idUsernamePair: IdUsernamePair(identifier: target.id, username: target.username), server: server))
        }
        // Name and push token: one mismatch per differing server value (every target of the device should agree).
        let known = answer.dispatchTargets.filter { target in localTargets.contains { $0.id == target.id } }
        var names: [String] = []
        var tokens: [String?] = []
        for target in known {
            if target.name != information.name, !names.contains(target.name) { names.append(target.name) }
            if target.target != information.fcmRegistrationToken, !tokens.contains(target.target) { tokens.append(target.target) }
        }
        mismatches += names.map { .DeviceNameMismatch(nameInServer: $0, nameInMobileDevice: information.name, server: server) }
        mismatches += tokens.map {
            .FcmRegistrationTokenMismatch(tokenInServer: $0, tokenInMobileDevice: information.fcmRegistrationToken, server: server)
        }
        return mismatches
    }
}
