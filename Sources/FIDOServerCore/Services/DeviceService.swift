import Foundation
import JOSE
import NevisProtocol
import UAF
import WireJSON

/// The Device Service (server-api §A.5, §B.9; our contract in ``DeviceServiceWire``): a device, proving itself with a
/// `Device-Signature`, reads and changes what the server knows about it.
///
/// A device is the set of dispatch targets with its device id **and** the signing target's signature key: the SDK
/// uses one key pair for all its targets, so a target another party created with the same device id (or even the
/// same public key, which it cannot sign with) never lets it read or change this device's data, and the device sees
/// it only if it carries the device's own public key.
package struct DeviceService: Sendable {
    let environment: ServiceEnvironment
    let stores: UsedStores
    let signatures: DeviceSignatureVerifier
    /// Changes targets by the same rules as a target's own PATCH.
    let targets: DispatchTargetService

    /// The stores the Device Service reads and writes: a device's keys, targets, pending tokens and sessions.
    struct UsedStores: Sendable {
        let registrations: RegistrationStore
        let dispatchTargets: DispatchTargetStore
        let dispatchTokens: DispatchTokenStore
        let sessions: SessionStore
        init(_ stores: Stores) {
            registrations = stores.registrations
            dispatchTargets = stores.dispatchTargets
            dispatchTokens = stores.dispatchTokens
            sessions = stores.sessions
        }
    }

    /// What the Device Service answers a device, and the dispatch target that signed for it.
    package struct Answer<Body: Encodable & Sendable>: Sendable {
        package let body: Body
        package let signer: DispatchTargetRecord

        /// The media type of ``encrypted()``.
        package static var joseContentType: String { "application/jose;charset=UTF-8" }

        /// The body as a compact JWE (ECDH-ES, A256GCM; `kid` the signing target's id, `cty` `application/json`)
        /// to the signing target's encryption key: what a device that asks for `application/jose` gets (the Nevis
        /// SDK does, server-api #17). Nil when the target registered no encryption key. Why encrypted rather than
        /// signed: the device holds no key of the server's to check a signature with, but it holds the private half
        /// of the key it registered, so the listing is readable by that device alone.
        package func encrypted() throws -> String? {
            guard let jwk = signer.encryptionKey else { return nil }
            return try JWE.encrypt(
                try WireJSONEncoder().encode(body), to: try JWK(json: jwk).p256KeyAgreementKey(), keyID: signer.id,
                contentType: "application/json")
        }
    }

    /// Verifies the signature and answers the device's targets.
    private func device<Payload: Decodable>(
        _ deviceId: String, signed: SignedRequest, as type: Payload.Type
    ) async throws
        -> (targets: [DispatchTargetRecord], payload: Payload, signer: DispatchTargetRecord)
    {
        let (signer, payload) = try await signatures.verify(signed, targetID: nil, as: Payload.self)
        // The signing target must be one of the device the path names: a key of one device never reads another.
        guard signer.deviceId == deviceId else { throw DeviceSignatureRefusal(detail: "signed by a dispatch target of another device") }
        let targets = try await stores.dispatchTargets.targets(deviceId: deviceId).filter(DeviceScope(signer: signer).holds)
        return (targets, payload, signer)
    }

    /// The credentials the device registered, of the users it has targets for (a label alone shows nothing).
    private func credentials(of deviceId: String, targets: [DispatchTargetRecord]) async throws -> [RegistrationRecord] {
        try await stores.registrations.registrations(deviceId: deviceId, usernames: Array(Set(targets.map(\.username))))
    }

    /// GET credentials.
    package func credentials(deviceId: String, signed: SignedRequest) async throws -> Answer<DeviceServiceWire.Credentials> {
        let (targets, _, signer) = try await device(deviceId, signed: signed, as: DeviceSignature.Claims.self)
        let registrations = try await credentials(of: deviceId, targets: targets)
        environment.decide(
            "device credentials", nil, 1200, "device \(deviceId.prefix(8))…: \(targets.count) target(s), \(registrations.count) credential(s)")
        return Answer(
            body: DeviceServiceWire.Credentials(
                deviceId: deviceId,
                dispatchTargets: targets.map {
                    .init(id: $0.id, extId: $0.extId, username: $0.username, name: $0.name, dispatcher: $0.dispatcher, target: $0.target)
                },
                credentials: registrations.map {
                    .init(username: $0.username, aaid: $0.aaid, keyId: $0.keyID, creationTimeInEpochMillis: $0.createdAt.epochMillis)
                }),
            signer: signer)
    }

    /// PATCH credentials: renames the device or changes its push address on every one of its targets.
    package func modify(deviceId: String, signed: SignedRequest) async throws {
        let (devices, change, _) = try await device(deviceId, signed: signed, as: DeviceServiceWire.Modification.self)
        for target in devices {
            switch try await targets.apply(
                to: target, name: change.name, pushToken: change.fcmRegistrationToken,
                disablePush: change.disablePushNotifications == true)
            {
            case .updated, .notFound: continue  // a target deleted meanwhile has nothing left to change
            case .nameTaken: throw Refusal(.unprocessableContent, "name_taken", "A dispatch target of \(target.username) already has this name.")
            }
        }
        environment.decide("device modify", nil, 1200, "device \(deviceId.prefix(8))…: \(devices.count) target(s) changed")
    }

    /// DELETE credentials: removes the device's targets and the credentials it registered for their users.
    package func delete(deviceId: String, signed: SignedRequest) async throws {
        let (targets, _, _) = try await device(deviceId, signed: signed, as: DeviceSignature.Claims.self)
        let registrations = try await credentials(of: deviceId, targets: targets)
        for registration in registrations { _ = try await stores.registrations.delete(aaid: registration.aaid, keyID: registration.keyID) }
        // The sessions the device's keys opened end with them: one statement per user.
        for (username, keys) in Dictionary(grouping: registrations, by: \.username) {
            _ = try await stores.sessions.revoke(username: username, .uaf, ids: keys.map(\.keyID), now: environment.clock())
        }
        for target in targets { _ = try await stores.dispatchTargets.delete(id: target.id) }
        environment.decide(
            "device delete", nil, 1200, "device \(deviceId.prefix(8))…: \(targets.count) target(s), \(registrations.count) credential(s) deleted")
    }

    /// GET operations: what was dispatched to the device's targets and is neither redeemed nor expired.
    package func pendingOperations(deviceId: String, signed: SignedRequest) async throws -> Answer<DeviceServiceWire.PendingOperations> {
        let (targets, _, signer) = try await device(deviceId, signed: signed, as: DeviceSignature.Claims.self)
        let now = environment.clock()
        var operations: [DeviceServiceWire.PendingOperations.Operation] = []
        for target in targets {
            for token in try await stores.dispatchTokens.pending(dispatchTargetId: target.id, now: now) {
                // Only a payload encrypted to the target is kept (a plain one would be a redeemable token at rest).
                guard let payload = token.payload else { continue }
                let context = try? JSONCoding.value(GetUAFRequest.self, token.getUAFRequest).context
                    .flatMap { try ServiceEnvironment.parseContext(AuthenticationService.Context.self, $0) }
                operations.append(
                    .init(
                        creationTimeInEpochMillis: token.createdAt.epochMillis, dispatcher: token.dispatcher,
                        dispatchTargetId: target.id, payload: payload, dispatchInformation: token.dispatchInformation,
                        operation: token.operation, username: token.username ?? context?.username,
                        transactionText: context?.transaction?.lazy.compactMap(\.plainText).first))
            }
        }
        operations.sort { ($0.creationTimeInEpochMillis, $0.payload) < ($1.creationTimeInEpochMillis, $1.payload) }
        environment.decide("device operations", nil, 1200, "device \(deviceId.prefix(8))…: \(operations.count) pending operation(s)")
        return Answer(body: DeviceServiceWire.PendingOperations(operations: operations), signer: signer)
    }
}
