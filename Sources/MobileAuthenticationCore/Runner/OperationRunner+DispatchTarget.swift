import Foundation
import JOSE
import NevisProtocol
import UAF
import WireJSON

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
            let keys = try? await core.deviceKeys(), let signing = try? keys.signingKey(), let encryption = try? keys.encryptionKey()
        else { return false }
        let creation = DispatchTargetWire.Creation(
            username: username, name: information.name, deviceId: information.deviceId,
            dispatcher: DispatchTargetWire.Dispatcher.firebaseCloudMessaging.rawValue, target: information.fcmRegistrationToken,
            signatureKey: JWK(publicKey: signing.publicKey).json, encryptionKey: JWK(encryptionKey: encryption.publicKey).json)
        let authorization = Self.authorizationProvider(from: answer.additionalTokens ?? [], server: server.baseUrl)?.httpHeaders ?? headers
        guard let body = try? JSONEncoder().encode(creation),
            let exchange = try? await core.transport.send(
                HTTPRequest(
                    method: .POST, url: core.configuration.url(core.configuration.dispatchTargetResourcePath, base: server.baseUrl), body: body,
                    headers: authorization, accept: "application/json", contentType: "application/json")),
            exchange.status == 201, let created = try? WireJSONDecoder().decode(DispatchTargetWire.Created.self, from: exchange.body)
        else { return false }
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
