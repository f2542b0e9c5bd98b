import Crypto
import Foundation
import JOSE
import NevisProtocol
import UAF

/// The device's two P-256 key pairs of its device information (server-api §C.3, §C.4): one signs its JWS requests
/// to the device and dispatch-target services, one receives encrypted out-of-band payloads. They are made with the
/// device information at the first registration, kept encrypted in the SDK's SecureStorage (`device/keys`), shared
/// by every account and server of the device, and deleted with the last authenticator.
struct DeviceKeys: Codable, Sendable {
    static let entry = "device/keys"
    /// Raw P-256 scalars.
    var signing: [UInt8]
    var encryption: [UInt8]

    static func generate() -> DeviceKeys {
        DeviceKeys(signing: Array(P256.Signing.PrivateKey().rawRepresentation), encryption: Array(P256.KeyAgreement.PrivateKey().rawRepresentation))
    }

    func signingKey() throws -> P256.Signing.PrivateKey { try P256.Signing.PrivateKey(rawRepresentation: signing) }
    func encryptionKey() throws -> P256.KeyAgreement.PrivateKey { try P256.KeyAgreement.PrivateKey(rawRepresentation: encryption) }
}

extension ClientCore {
    /// The device keys, or nil before the first registration.
    func deviceKeys() async throws -> DeviceKeys? { try await state.secret(DeviceKeys.self, DeviceKeys.entry) }
}

extension OperationRunner {
    /// Creates the device's dispatch target for `username` on `server` after a registration (server-api §D.1 step 6),
    /// or after an authentication when it has none there: the device's name, push token and public keys.
    /// Authorized with the session of the server's answer (the registration's or the authentication's), or else the
    /// operation's own authorization.
    ///
    /// Failing here does not undo the registration the server already accepted: the device then has no dispatch
    /// target on that server, which `DeviceInformationCheck` reports as `MissingDeviceInformationInServer`.
    func createDispatchTarget(username: Username, server: Server, authorizedBy answer: ServerResponse) async -> Bool {
        let data = core.mirror.snapshot
        guard let information = data.deviceInformation,
              !data.dispatchTargets.contains(where: { $0.server == server && $0.username == username }),
              let keys = try? await core.deviceKeys(), let signing = try? keys.signingKey(), let encryption = try? keys.encryptionKey() else { return false }
        let creation = DispatchTargetWire.Creation(
            username: username, name: information.name, deviceId: information.deviceId,
            dispatcher: DispatchTargetWire.Dispatcher.firebaseCloudMessaging.rawValue, target: information.fcmRegistrationToken,
            signatureKey: JWK(publicKey: signing.publicKey).json, encryptionKey: JWK(encryptionKey: encryption.publicKey).json)
        let authorization = Self.authorizationProvider(from: answer.additionalTokens ?? [], server: server.baseUrl)?.httpHeaders ?? headers
        guard let body = try? JSONEncoder().encode(creation),
              let exchange = try? await core.transport.send(HTTPRequest(
                  method: .POST, url: core.configuration.url(core.configuration.dispatchTargetResourcePath, base: server.baseUrl), body: body,
                  headers: authorization, accept: "application/json", contentType: "application/json")),
              exchange.status == 201, let created = try? JSONDecoder().decode(DispatchTargetWire.Created.self, from: exchange.body) else { return false }
        do {
            try await core.commit { data in
                data.dispatchTargets.append(LocalDispatchTarget(server: server, username: username, id: created.id, extId: created.extId))
            }
            return true
        } catch {
            return false
        }
    }
}
