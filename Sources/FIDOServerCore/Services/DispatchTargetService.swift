import Foundation
import JOSE
import NevisProtocol
import Primitives
import UAF

/// The Dispatch Target Service (server-api §B.8): a device's name, push address and public keys, per user.
package struct DispatchTargetService: Sendable {
    let environment: ServiceEnvironment
    let stores: UsedStores
    let signatures: DeviceSignatureVerifier

    /// The store the dispatch target API writes.
    struct UsedStores: Sendable {
        let dispatchTargets: DispatchTargetStore
        /// The keys a registration's token links to the device that creates its target.
        let registrations: RegistrationStore
        /// The registration token's session, which names the key it was issued for.
        let sessions: SessionStore
        init(_ stores: Stores) {
            dispatchTargets = stores.dispatchTargets
            registrations = stores.registrations
            sessions = stores.sessions
        }
    }

    /// Endpoint 13: creates a target for the caller's user.
    package func create(_ body: DispatchTargetWire.Creation, principal: Principal) async throws -> DispatchTargetWire.Created {
        guard let username = body.username ?? principal.subject else { throw Refusal(.badRequest, "bad_request", "username is required") }
        do { try ServiceEnvironment.validate(username: username) } catch { throw Refusal(.badRequest, "bad_request", "username is not valid") }
        guard principal.mayCreateDispatchTarget(for: username, deviceId: body.deviceId) else {
            throw AuthorizationFailure.forbidden("\(principal.subject ?? "?") (\(principal.source)) may not create a dispatch target for \(username)")
        }
        try Self.validate(name: body.name)
        if let target = body.target { try Self.validate(pushToken: target) }
        // The rule of the registration's device-id extension: a Nevis SDK's keys take this id when it links them.
        if let deviceId = body.deviceId, !DeviceServiceWire.isValid(deviceId: deviceId) {
            throw Refusal(
                .badRequest, "bad_request", "deviceId must be 1...\(DeviceServiceWire.maximumDeviceIDLength) bytes without control characters")
        }
        let dispatcher = body.dispatcher ?? DispatchTargetWire.Dispatcher.firebaseCloudMessaging.rawValue
        guard DispatchTargetWire.Dispatcher(rawValue: dispatcher) != nil else {
            throw Refusal(.unprocessableContent, "unknown_dispatcher", "The dispatcher is not one this server knows.")
        }
        // Both keys must be usable P-256 keys now: a target whose key cannot verify or encrypt is useless later.
        let signatureKey: JWK
        let encryptionKey: JWK?
        do {
            signatureKey = try JWK(json: body.signatureKey)
            _ = try signatureKey.p256SigningKey()
            encryptionKey = try body.encryptionKey.map { try JWK(json: $0) }
            _ = try encryptionKey?.p256KeyAgreementKey()
        } catch {
            throw Refusal(.badRequest, "bad_request", "signatureKey and encryptionKey must be EC P-256 JWKs (\(error))")
        }
        let now = environment.clock()
        try await linkRegistration(of: principal, to: body.deviceId, username: username, now: now)
        let record = DispatchTargetRecord(
            id: RandomToken.make(18), extId: UUID().uuidString.lowercased(), username: username, name: body.name,
            deviceId: body.deviceId, dispatcher: dispatcher, target: body.target, signatureKey: signatureKey.json,
            encryptionKey: encryptionKey?.json, createdAt: now, updatedAt: now)
        guard try await stores.dispatchTargets.insert(record) else {
            throw Refusal(.unprocessableContent, "name_taken", "The user already has a dispatch target with this name.")
        }
        environment.decide(
            "dispatch target", username, 1200,
            "created \(record.id.prefix(8))… \"\(record.name)\"\(record.encryptionKey == nil ? "" : " with an encryption key")")
        return DispatchTargetWire.Created(id: record.id, extId: record.extId)
    }

    /// The device link a Nevis SDK makes (our contract; server-api §D.1 step 6 leaves it open): a registration whose
    /// response named no device (no `ch.nevis.mauth.device-id` extension) is followed by the device creating its dispatch
    /// target with the token that registration handed out. That token was issued to the device that registered, for
    /// this one call, so the target's `deviceId` is the registration's device: its keys are linked to it, and the
    /// Device Service, device check and sync and device-signed deregistration then see them. Linked before the
    /// target is stored, so a retry after a refused name links nothing twice and loses nothing.
    private func linkRegistration(of principal: Principal, to deviceId: String?, username: String, now: Date) async throws {
        guard case .registration(let sessionId, nil) = principal.source, let deviceId,
            let session = try await stores.sessions.session(id: sessionId, now: now), case .uafKey(let aaid, let keyID) = session.credential
        else { return }
        let linked = try await stores.registrations.link(username: username, aaid: aaid, keyID: keyID, deviceId: deviceId)
        guard !linked.isEmpty else { return }
        environment.decide(
            "dispatch target", username, 1200,
            "linked \(linked.count) key(s) of the registration (\(linked.map { "\($0.prefix(10))…" }.joined(separator: ", "))) to the device creating its target"
        )
    }

    package struct Listing: Encodable {
        package struct Entry: Encodable {
            var name: String
            var id: String
            var dispatcher: String
        }
        var dispatchTargets: [Entry]
    }

    /// Endpoint 14 (internal: the relying party's backend, with a token for the user or an administrator's).
    package func list(username: String?, principal: Principal) async throws -> Listing {
        guard let username, !username.isEmpty else { throw Refusal(.badRequest, "bad_request", "the username query parameter is required") }
        let fromInternalNetwork = if case .internalNetwork = principal.source { true } else { false }
        guard fromInternalNetwork || principal.mayActFor(username) else {
            throw AuthorizationFailure.forbidden("\(principal.subject ?? "?") may not list \(username)'s targets")
        }
        // A device signature lists only its own device's targets.
        let targets = try await stores.dispatchTargets.targets(username: username).filter(principal.mayList)
        guard !targets.isEmpty else { throw Refusal(.notFound, "not_found", "The user has no dispatch targets.") }
        return Listing(dispatchTargets: targets.map { .init(name: $0.name, id: $0.id, dispatcher: $0.dispatcher) })
    }

    /// Endpoint 15: the body is a compact JWS signed with the target's own key (server-api §C.3).
    package func modify(id: String, signed: SignedRequest) async throws {
        let (target, change) = try await signatures.verify(signed, targetID: id, as: DispatchTargetWire.Modification.self)
        switch try await apply(to: target, name: change.name, pushToken: change.target, disablePush: change.disablePushNotifications == true) {
        case .updated:
            environment.decide("dispatch target", target.username, 1200, "modified \(target.id.prefix(8))… by its device")
        case .notFound: throw Refusal(.notFound, "not_found", "No such dispatch target.")
        case .nameTaken: throw Refusal(.unprocessableContent, "name_taken", "The user already has a dispatch target with this name.")
        }
    }

    /// A device's change to one of its targets (PATCH of the target or of the whole device): an absent member stays
    /// as it is, `disablePush` removes the push address. Invalid values are refused before anything is written.
    func apply(
        to target: DispatchTargetRecord, name: String?, pushToken: String?, disablePush: Bool
    ) async throws -> DispatchTargetStore.UpdateOutcome {
        if let name { try Self.validate(name: name) }
        if let pushToken { try Self.validate(pushToken: pushToken) }
        return try await stores.dispatchTargets.update(
            id: target.id, name: name ?? target.name, target: disablePush ? nil : (pushToken ?? target.target),
            now: environment.clock())
    }

    /// Endpoint 16: the user (a session or token for them) or an administrator removes a target.
    package func delete(id: String, principal: Principal) async throws {
        guard let target = try await stores.dispatchTargets.target(id: id), principal.mayReach(target) else {
            // Someone else's target (or another device's, for a device signature) answers like a missing one.
            throw Refusal(.notFound, "not_found", "No such dispatch target.")
        }
        _ = try await stores.dispatchTargets.delete(id: id)
        environment.decide("dispatch target", target.username, 1200, "deleted \(id.prefix(8))…")
    }

    static func validate(name: String) throws {
        guard DispatchTargetWire.isValid(name: name) else {
            throw Refusal(.badRequest, "bad_request", "name must be 1...\(DispatchTargetWire.maximumNameBytes) bytes without control characters")
        }
    }

    static func validate(pushToken: String) throws {
        guard DispatchTargetWire.isValid(pushToken: pushToken) else {
            throw Refusal(.badRequest, "bad_request", "target must be 1...\(DispatchTargetWire.maximumPushTokenBytes) bytes")
        }
    }
}

/// Verifies device-signed requests (server-api §C.3, our contract in ``DeviceSignature``): the JWS verifies with
/// the signature key of the dispatch target it names, it was created within the clock skew, and its request id
/// was never used before for that target (kept in the repository, so every instance refuses a replay).
package struct DeviceSignatureVerifier: Sendable {
    let stores: UsedStores
    /// The stores a signature check reads and writes: the targets' keys and the request ids already used.
    struct UsedStores: Sendable {
        let dispatchTargets: DispatchTargetStore
        let deviceRequests: DeviceRequestStore
        init(_ stores: Stores) {
            dispatchTargets = stores.dispatchTargets
            deviceRequests = stores.deviceRequests
        }
    }

    let skew: TimeInterval
    /// Whether a signature that names no request is accepted (``ServerConfiguration/Dispatch/acceptUnboundDeviceSignatures``).
    var acceptUnbound = false
    let clock: @Sendable () -> Date

    /// Every refusal is 401 with one generic message; the log gets the reason.
    package func verify<Payload: Decodable>(
        _ signed: SignedRequest, targetID: String?, as type: Payload.Type
    ) async throws -> (DispatchTargetRecord, Payload) {
        guard let compact = signed.signature, !compact.isEmpty else { throw DeviceSignatureRefusal(detail: "no \(DeviceSignature.headerName)") }
        guard compact.utf8.count <= 16 * 1024, let named = DeviceSignature.unverifiedTargetID(compact) else {
            throw DeviceSignatureRefusal(detail: "not a compact JWS whose payload names a dispatchTargetId")
        }
        if let targetID, targetID != named { throw DeviceSignatureRefusal(detail: "the JWS names another dispatch target") }
        guard named.utf8.count <= 128, let target = try await stores.dispatchTargets.target(id: named) else {
            if targetID != nil { throw Refusal(.notFound, "not_found", "No such dispatch target.") }
            throw DeviceSignatureRefusal(detail: "unknown dispatch target")
        }
        let verified: JWS.Verified
        do { verified = try JWS.verify(compact, key: try JWK(json: target.signatureKey).p256SigningKey()) } catch {
            // JOSE quotes what it repeats of the header (`alg`); the audit trail escapes the rest.
            throw DeviceSignatureRefusal(detail: "signature: \(error)")
        }
        guard let claims = try? JSONDecoder().decode(DeviceSignature.Claims.self, from: Data(verified.payload)),
            let payload = try? JSONDecoder().decode(Payload.self, from: Data(verified.payload))
        else {
            throw DeviceSignatureRefusal(detail: "the payload lacks the required members")
        }
        guard !claims.requestId.isEmpty, claims.requestId.utf8.count <= DeviceSignature.maximumRequestIDLength else {
            throw DeviceSignatureRefusal(detail: "requestId must be 1...\(DeviceSignature.maximumRequestIDLength) characters")
        }
        try signed.check(claims, acceptUnbound: acceptUnbound)
        let now = clock()
        let created = Date(epochMillis: claims.creationTimeInEpochMillis)
        guard abs(created.timeIntervalSince(now)) <= skew else {
            throw DeviceSignatureRefusal(detail: "created \(Int(created.timeIntervalSince(now))) s from now, outside ±\(Int(skew)) s")
        }
        // Remembered until the creation time leaves the window on either side, so a replay is refused for as long as
        // its creation time would still be accepted.
        guard
            try await stores.deviceRequests.remember(
                dispatchTargetId: target.id, requestId: claims.requestId,
                until: created.addingTimeInterval(skew * 2))
        else {
            throw DeviceSignatureRefusal(detail: "request id already used (replay)")
        }
        return (target, payload)
    }
}

/// A device signature with the request it came with, which the signature must name (``DeviceSignature``): without
/// that binding a captured header would authorize any other device-signed call until its request id is used.
package struct SignedRequest: Sendable {
    /// The compact JWS: the `Device-Signature` header, or the body of a target's PATCH.
    var signature: String?
    var method: String
    /// The path as the server received it (before the Auth Cloud `/_app` alias is mapped), percent-encoded.
    var path: String
    /// The body, for a signature in the header; nil when the JWS is the body.
    var body: [UInt8]?
    package init(signature: String?, method: String, path: String, body: [UInt8]?) {
        self.signature = signature
        self.method = method
        self.path = path
        self.body = body
    }

    func check(_ claims: DeviceSignature.Claims, acceptUnbound: Bool = false) throws {
        // The Nevis SDKs' shape, when the operator accepts it: bound to the device and the request id only. A signature
        // with any binding member comes from a client that binds, and is held to all of them: a partly bound one is
        // never read as "unbound where it says nothing".
        if acceptUnbound, claims.htm == nil, claims.htu == nil, claims.bodyHash == nil { return }
        // The claims are the caller's text: quoted, escaped and capped before they reach a decision.
        guard claims.htm == method else {
            throw DeviceSignatureRefusal(
                detail:
                    "signed for method \(claims.htm.map { UntrustedText.quoted($0, limit: 16) } ?? "none"), used with \(UntrustedText.quoted(method, limit: 16))"
            )
        }
        guard claims.htu == path else {
            throw DeviceSignatureRefusal(
                detail:
                    "signed for path \(claims.htu.map { UntrustedText.quoted($0, limit: 160) } ?? "none"), used on \(UntrustedText.quoted(path, limit: 160))"
            )
        }
        if let body, claims.bodyHash != DeviceSignature.bodyHash(body) {
            throw DeviceSignatureRefusal(detail: claims.bodyHash == nil ? "no bodyHash" : "signed for another body")
        }
    }
}

/// A refused device signature: 401 to the caller, `detail` to the log.
package struct DeviceSignatureRefusal: Error {
    package let detail: String
    package var failure: Refusal { Refusal(.unauthorized, "invalid_device_signature", "The device signature is invalid, stale or replayed.") }
}
