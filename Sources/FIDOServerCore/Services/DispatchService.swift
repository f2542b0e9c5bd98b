import Crypto
import Foundation
import JOSE
import NevisProtocol
import Primitives
import UAF
import WireJSON

/// The Dispatch Token Service and Redeem Token (server-api §B.6, §B.7): a relying party asks for a UAF operation
/// to be sent to a device (QR code, link, push); the device redeems the single-use token and continues with the
/// ordinary UAF exchange, whose status record the dispatch opened.
package struct DispatchService: Sendable {
    let environment: ServiceEnvironment
    let uaf: UAFExchange
    let stores: UsedStores
    let registration: RegistrationService
    let authentication: AuthenticationService
    let deregistration: DeregistrationService
    let configuration: ServerConfiguration.Dispatch
    /// The `firebase-cloud-messaging` dispatcher, when Firebase is configured.
    let firebase: FirebaseDispatcher?
    /// Draws the png-qr-code dispatchers' images (and the Auth Cloud enrollments').
    let qr: QRRenderer

    /// The stores a dispatch reads and writes: the users' keys and targets, the tokens and their status records.
    struct UsedStores: Sendable {
        let registrations: RegistrationStore
        let dispatchTargets: DispatchTargetStore
        let dispatchTokens: DispatchTokenStore
        let status: StatusStore
        init(_ stores: Stores) {
            registrations = stores.registrations
            dispatchTargets = stores.dispatchTargets
            dispatchTokens = stores.dispatchTokens
            status = stores.status
        }
    }

    /// The dispatch request (§B.6).
    package struct TokenRequest: Decodable, Sendable {
        var dispatcher: String?
        var dispatchTargetId: String?
        var dispatchInformation: String?
        var getUafRequest: GetUAFRequest
    }

    /// The dispatch answer: HTTP 200 for every well-formed request; `dispatchResult` says what happened.
    package struct TokenAnswer: Encodable, Sendable {
        var token: String?
        var sessionId: String?
        var dispatcherInformation: StatusRecord.TokenInformation.DispatcherInformation?
        var dispatchResult: DispatchResult
    }

    package enum DispatchResult: String, Encodable, Sendable {
        case dispatched, dispatchError, dispatchTargetExpired, dispatchTargetNotFound, dispatcherNotFound, userNotFound, internalError
    }

    /// Endpoints 8–10. `linkBase` replaces the configured app-link base for the `link` dispatchers (the Auth Cloud
    /// API hands out its own `appLinkUri`).
    package func dispatch(
        _ request: TokenRequest, operation: UAFOperation, principal: Principal?, linkBase: String? = nil
    ) async throws -> TokenAnswer {
        guard request.getUafRequest.op == operation else {
            throw ServiceFailure(.badRequest, "getUafRequest.op must be \(operation.rawValue)")
        }
        guard (request.dispatchInformation?.utf8.count ?? 0) <= 4096 else {
            throw ServiceFailure(.badRequest, "dispatchInformation longer than 4096 bytes")
        }
        // The members dispatching reads (the authentication context's, a superset of the others'); the full context is
        // the ceremony service's to check at redeem time.
        let context = try ServiceEnvironment.parseContext(AuthenticationService.Context.self, request.getUafRequest.context)
        var username = context?.username
        if let username { try ServiceEnvironment.validate(username: username) }
        if operation == .authentication { try AuthenticationService.validate(transactions: context?.transaction ?? []) }
        // A named policy that is not configured is refused now, not when the user opens the link.
        if operation != .deregistration, context?.policy != nil {
            let transactions = !(context?.transaction ?? []).isEmpty
            _ = try uaf.policies.configured(
                operation == .registration ? .registration : transactions ? .transaction : .authentication,
                name: context?.policy)
        }

        var target: DispatchTargetRecord?
        if let id = request.dispatchTargetId {
            // A dispatch to a device reaches a person's phone (a push carries the caller's title, body and transaction
            // text through the relying party's Firebase project), so it needs a credential for the target's user,
            // also for authentication: a target id is no secret, it is the `kid` of every JWE sent to it.
            guard let principal else {
                throw AuthorizationFailure.unauthenticated("a dispatch to a dispatch target needs credentials for its user")
            }
            // A target of another user (or of another device, for a device signature) is "not found": the answer
            // does not tell which ids exist.
            guard id.utf8.count <= 128, let found = try await stores.dispatchTargets.target(id: id), username == nil || found.username == username,
                operation == .authentication ? principal.mayDispatchAuthentication(to: found) : principal.mayReach(found)
            else {
                environment.decide(.dispatch(operation), username, 1404, "dispatch target not found")
                return TokenAnswer(dispatchResult: .dispatchTargetNotFound)
            }
            try await checkDispatchRate(to: found)
            target = found
            username = username ?? found.username
        }
        if operation == .authentication {
            // After the target: its user is the one the caller's credential has to speak for.
            try uaf.checkOpenRequest(
                context: request.getUafRequest.context, username: username,
                transactions: context?.transaction ?? [], caller: principal)
        } else {
            // Registration and deregistration dispatch need a caller who may act for the user (the same rule as the
            // in-band request endpoints); authentication needs none, as in nevisFIDO's defaults.
            guard let username else { throw ServiceFailure(.badRequest, "context.username is required") }
            guard let principal, operation == .registration ? principal.mayRegisterFor(username) : principal.mayActFor(username) else {
                throw AuthorizationFailure.forbidden("\(principal?.subject ?? "?") may not dispatch \(operation.rawValue) for \(username)")
            }
            if operation == .registration { try environment.signIn.requireRecentAuthentication(principal) }
        }
        // A deregistration asked for with a device signature stays within its device once the token is redeemed.
        let confinedDevice = operation == .deregistration ? try principal?.confinedDeviceId() : nil
        // Only a caller who may act for the user learns that she has no key: to anyone else, an unknown user is
        // dispatched like a known one (an enumeration oracle otherwise; the redeemed request names no keys either).
        if operation != .registration, let username, ServiceEnvironment.authorizes(principal, for: username),
            try await stores.registrations.registrations(username: username).isEmpty
        {
            return TokenAnswer(dispatchResult: .userNotFound)
        }
        guard let dispatcherName = request.dispatcher ?? target?.dispatcher,
            let dispatcher = DispatchTargetWire.Dispatcher(rawValue: dispatcherName)
        else {
            return TokenAnswer(dispatchResult: .dispatcherNotFound)
        }

        let token = RandomToken.make(32)
        let sessionID = environment.newSessionID(dispatchedBy: principal, for: username)
        let dispatchInformation = DispatchInformation(request.dispatchInformation)
        let content = DispatchPayload.Content(token: token, redeemURL: redeemURL(operation), data: dispatchInformation.appData)
        // Encrypted whenever the device's key is known: a QR code, link or push read by anyone else is useless to them.
        let payload: String
        let encrypted: Bool
        if let target, let jwk = target.encryptionKey {
            payload = try DispatchPayload.encrypted(content, to: try JWK(json: jwk).p256KeyAgreementKey(), keyID: target.id)
            encrypted = true
        } else {
            payload = DispatchPayload.plain(content)
            encrypted = false
        }
        var response: String?
        switch dispatcher {
        case .pngQRCode: response = try await qr.render(payload).dataURI
        case .link: response = DispatchPayload.link(base: linkBase ?? configuration.linkBaseURL, payload: payload)
        case .linkPNGQRCode:
            let link = DispatchPayload.link(base: linkBase ?? configuration.linkBaseURL, payload: payload)
            response = try await qr.render(link).dataURI
        case .firebaseCloudMessaging:
            guard firebase != nil else {
                environment.decide(.dispatch(operation), username, 1404, "push is not configured (dispatch.firebase)")
                return TokenAnswer(dispatchResult: .dispatcherNotFound)
            }
            // Push is always encrypted (server-api §C.4): a push message passes through Google's servers and the
            // device's notification system. Without the target's key and push address nothing is sent.
            guard let target, target.target != nil, encrypted else {
                environment.decide(.dispatch(operation), username, 1404, "push needs a dispatch target with a push token and an encryption key")
                return TokenAnswer(dispatchResult: .dispatchTargetNotFound)
            }
            response = nil  // the FCM message name, once sent
        }

        var get = request.getUafRequest
        if let username, context?.username == nil { get.context = try Self.context(get.context, addingUsername: username) }
        let now = environment.clock()
        let expiresAt = now.addingTimeInterval(TimeInterval(configuration.tokenLifetimeSeconds))
        try await stores.dispatchTokens.insert(
            DispatchTokenRecord(
                tokenHash: SecretHash.of(token), sessionId: sessionID, operation: operation.rawValue, getUAFRequest: try JSONCoding.string(get),
                username: username, dispatchTargetId: target?.id, dispatcher: dispatcher.rawValue, dispatchInformation: request.dispatchInformation,
                payload: encrypted ? payload : nil, createdAt: now, expiresAt: expiresAt, redeemedAt: nil, deviceId: confinedDevice),
            retention: uaf.statusRetention)
        // The status record names the dispatcher but keeps no `response`: for the QR and link dispatchers that is the
        // payload or a picture of it, which carries the token in clear unless the target's key encrypted it, and the
        // status service answers anyone who holds the session id (the Auth Cloud status token leads there too). A
        // redeemable link must leave the server only in the dispatch answer, to the caller who asked for it.
        let information = StatusRecord.TokenInformation.DispatcherInformation(name: dispatcher.rawValue, response: nil)
        try await stores.status.create(
            StatusRecord(
                sessionId: sessionID, status: .tokenCreated, operation: operation.rawValue, username: username, updatedAt: now,
                tokenInformation: .init(
                    dispatchTargetExtId: target?.extId, tokenResult: nil, dispatcherInformation: information,
                    tokenExpiresAt: expiresAt.epochMillis)),
            retention: TimeInterval(configuration.tokenLifetimeSeconds) + uaf.statusRetention)
        var result = DispatchResult.dispatched
        if dispatcher == .firebaseCloudMessaging, let firebase, let target, let pushToken = target.target {
            // The token and status exist before the push leaves, so a device that answers at once finds them. A push
            // that fails leaves the operation pending: the device can still fetch it (PendingOutOfBandOperations)
            // until it expires, so the answer keeps the token and session with `dispatchError`.
            switch await firebase.send(
                registrationToken: pushToken, data: try DispatchPayload.pushData(payload),
                notification: dispatchInformation.notification)
            {
            case .sent(let name):
                response = name
            case .unregistered:
                result = .dispatchError
                if firebase.configuration.removeUnregisteredClients {
                    _ = try await stores.dispatchTargets.update(id: target.id, name: target.name, target: nil, now: now)
                }
                environment.decide(
                    .dispatch(operation), username, 1500,
                    "FCM: the push token is unregistered\(firebase.configuration.removeUnregisteredClients ? "; removed from the target" : "")")
            case .failed(let reason):
                result = .dispatchError
                environment.decide(.dispatch(operation), username, 1500, "FCM: \(reason)")
            }
        }
        if result == .dispatched {
            environment.decide(
                .dispatch(operation), username, 1200,
                "operation \(OrderedToken.label(sessionID)): token dispatched by \(dispatcher.rawValue)\(encrypted ? ", payload encrypted to target \(target!.id.prefix(8))…" : ", payload in clear"), valid \(configuration.tokenLifetimeSeconds) s"
            )
        }
        return TokenAnswer(
            token: token, sessionId: sessionID,
            dispatcherInformation: .init(name: dispatcher.rawValue, response: response), dispatchResult: result)
    }

    /// Endpoint 11: redeems a token once and answers the UAF request of the dispatched `getUafRequest`.
    ///
    /// Our contract for refusals (server-api §(f).7), HTTP 200 with a ReturnUAFRequest as for every UAF answer:
    /// an unknown or already redeemed token is `statusCode` 1401, an expired one 1408. The SDK reports them as
    /// `TokenAlreadyRedeemed` and `TokenExpired`.
    package func redeem(token: String, operation: UAFOperation) async throws -> IssuedRequest {
        guard !token.isEmpty, token.utf8.count <= 256 else { throw ServiceFailure(.badRequest, "token must be 1...256 bytes") }
        let now = environment.clock()
        switch try await stores.dispatchTokens.redeem(tokenHash: SecretHash.of(token), operation: operation.rawValue, now: now) {
        case .refused:
            throw ServiceFailure(.unauthorized, "unknown or already redeemed token")
        case .expired(let record):
            try await stores.status.tokenRedeemed(
                sessionId: record.sessionId, status: .failed, result: .tokenTimedOut, now: now,
                retention: uaf.statusRetention)
            throw ServiceFailure(.requestTimeout, "token expired")
        case .redeemed(let record):
            let get = try JSONCoding.value(GetUAFRequest.self, record.getUAFRequest)
            let principal = Principal(source: .dispatchToken(deviceId: record.deviceId), subject: record.username, isAdmin: false)
            do {
                switch operation {
                case .registration:
                    return try await registration.request(get, principal: principal, dispatchedSession: record.sessionId)
                case .authentication:
                    return try await authentication.request(get, caller: nil, dispatchedSession: record.sessionId)
                case .deregistration:
                    // Dereg has no response message: the operation is done when the device has its request.
                    let issued = try await deregistration.request(get, principal: principal)
                    try await stores.status.tokenRedeemed(
                        sessionId: record.sessionId, status: .succeeded, result: .tokenRedeemed, now: now,
                        retention: uaf.statusRetention)
                    return IssuedRequest(answer: issued.answer, sessionID: record.sessionId)
                }
            } catch {
                // The dispatched request could not be issued (e.g. the user has no authenticator any more).
                _ = try? await stores.status.tokenRedeemed(
                    sessionId: record.sessionId, status: .failed, result: .tokenRedeemed, now: now,
                    retention: uaf.statusRetention)
                throw error
            }
        }
    }

    /// At most `limits.dispatchesPerTargetPerMinute` dispatches to one target within a minute, counted on every
    /// instance (the tokens are in the shared store). Concurrent dispatches to one target may overshoot by the
    /// number in flight, which is bounded by the caller's rate limit.
    private func checkDispatchRate(to target: DispatchTargetRecord) async throws {
        let limit = environment.limits.dispatchesPerTargetPerMinute
        let recent = try await stores.dispatchTokens.count(dispatchTargetId: target.id, since: environment.clock().addingTimeInterval(-60))
        guard recent < limit else {
            throw Refusal(
                .tooManyRequests, "too_many_dispatches", "This dispatch target had \(limit) dispatches within a minute; try again later.",
                retryAfterSeconds: 60)
        }
    }

    func redeemURL(_ operation: UAFOperation) -> String {
        let base = configuration.redeemBaseURL ?? environment.identity.baseURL
        return base.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + Self.redeemPath(operation)
    }

    /// `/nevisfido/token/redeem/<op>`: where a payload's `redeem_url` points (nevisFIDO's path; the HTTP layer routes
    /// it).
    package static func redeemPath(_ operation: UAFOperation) -> String {
        switch operation {
        case .registration: return "/nevisfido/token/redeem/registration"
        case .authentication: return "/nevisfido/token/redeem/authentication"
        case .deregistration: return "/nevisfido/token/redeem/deregistration"
        }
    }

    static func context(_ context: String?, addingUsername username: String) throws -> String {
        var object = ((try? WireJSONDecoder().decode([String: JSONValue].self, from: (context ?? "{}").utf8)) ?? [:])
        object["username"] = .string(username)
        return try JSONCoding.string(object)
    }
}

/// What the server reads of a dispatch request's `dispatchInformation` (a JSON object as text, parsed once): `data`
/// goes into the payload for the app, `notification` (`{"title", "body"}`) into a push for the device's
/// notification system. Anything else in it is only stored and handed back with the pending operation.
struct DispatchInformation {
    /// The `data` member, as text (a string as it is, anything else as JSON).
    var appData: String?
    /// Nil for a data-only push.
    var notification: (title: String?, body: String?)?

    init(_ text: String?) {
        guard let text, let object = try? WireJSONDecoder().decode([String: JSONValue].self, from: text.utf8) else { return }
        switch object["data"] {
        case .string(let data)?: appData = data
        case let data?: appData = try? JSONCoding.string(data)
        case nil: break
        }
        if case .object(let fields)? = object["notification"], fields["title"]?.string != nil || fields["body"]?.string != nil {
            notification = (fields["title"]?.string, fields["body"]?.string)
        }
    }
}
