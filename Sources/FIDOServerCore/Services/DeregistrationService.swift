import Foundation
import UAF

/// Deregistration (uaf-spec §1.4, server-api §B.1): the server deletes the registrations, then answers the
/// DeregistrationRequest that tells the device which keys to forget. UAF Dereg has no response message.
package struct DeregistrationService: Sendable {
    let environment: ServiceEnvironment
    let uaf: UAFExchange
    let stores: UsedStores

    /// The stores a deregistration writes: the registrations and the sessions they opened.
    struct UsedStores: Sendable {
        let registrations: RegistrationStore
        let sessions: SessionStore
        init(_ stores: Stores) {
            registrations = stores.registrations
            sessions = stores.sessions
        }
    }

    /// Our deregistration context: `username`, plus at most one of `aaid` (AAIDs) or `keyIDs` (base64url KeyIDs).
    /// Without a list every registration of the user is removed.
    package struct Context: Decodable {
        var username: String?
        var aaid: [String]?
        var keyIDs: [String]?
    }

    package func request(_ request: GetUAFRequest, principal: Principal) async throws -> IssuedRequest {
        // Required (nevisFIDO lists it so): a body without it must not run a deregistration, least of all a deregistration.
        guard request.op == .deregistration else {
            throw ServiceFailure(.badRequest, request.op == nil ? "op is missing (it must be Dereg)" : "op must be Dereg")
        }
        guard let context = try ServiceEnvironment.parseContext(Context.self, request.context), let username = context.username else {
            throw ServiceFailure(.badRequest, "context.username is required")
        }
        try ServiceEnvironment.validate(username: username)
        guard context.aaid == nil || context.keyIDs == nil else { throw ServiceFailure(.badRequest, "give aaid or keyIDs, not both") }
        guard (context.aaid?.count ?? 0) <= 64, (context.keyIDs?.count ?? 0) <= 64 else { throw ServiceFailure(.badRequest, "at most 64 entries") }
        // Only the user (a session of theirs) or an administrator removes a user's keys; a relying-party token
        // for the user is accepted too, since the relying party vouches for the user as it does at registration.
        guard principal.mayActFor(username) else {
            throw AuthorizationFailure.forbidden("\(principal.subject ?? "?") (\(principal.source)) may not deregister \(username)")
        }
        let deviceId = try principal.confinedDeviceId()
        let removed = try await UserData.removeRegistrations(
            from: stores.registrations, endingSessionsIn: stores.sessions, username: username, aaids: context.aaid, keyIDs: context.keyIDs,
            deviceId: deviceId, now: environment.clock())
        let authenticators = removed.map { DeregisterAuthenticator(aaid: $0.aaid, keyID: $0.keyID) }
        let message = DeregistrationRequest(
            header: OperationHeader(op: .deregistration, appID: uaf.appID, serverData: nil),
            authenticators: authenticators)
        environment.decide(
            "deregistration", username, 1200,
            removed.isEmpty ? "nothing matched" : "removed \(removed.map { "\($0.aaid) key \($0.keyID.prefix(10))…" }.joined(separator: ", "))")
        // Dereg has no response message, so it opens no status session.
        return IssuedRequest(
            answer: ReturnUAFRequest(
                statusCode: UAFStatusCode.ok.rawValue, uafRequest: try uaf.uafRequest(message, header: \DeregistrationRequest.header),
                op: .deregistration, lifetimeMillis: nil),
            sessionID: nil)
    }
}
