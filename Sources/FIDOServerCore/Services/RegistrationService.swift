import Foundation
import NevisProtocol
import Primitives
import UAF

/// In-band registration: issues RegistrationRequests to authorized callers and verifies RegistrationResponses.
package struct RegistrationService: Sendable {
    let environment: ServiceEnvironment
    let uaf: UAFExchange
    let appAttestation: AppAttestationGate
    let stores: UsedStores

    /// The stores a UAF registration writes beyond its exchange: the registrations.
    struct UsedStores: Sendable {
        let registrations: RegistrationStore
        init(_ stores: Stores) {
            registrations = stores.registrations
        }
    }

    package struct Context: Decodable {
        var username: String?
        var policy: String?
    }

    /// Endpoint 1: issues a RegistrationRequest for the context's username, if `principal` may act for it.
    /// `dispatchedSession` is the status session of a redeemed dispatch token, which the request then continues.
    package func request(_ request: GetUAFRequest, principal: Principal, dispatchedSession: String? = nil) async throws -> IssuedRequest {
        // Required (nevisFIDO lists it so): a body without it must not run a registration, least of all a deregistration.
        guard request.op == .registration else {
            throw ServiceFailure(.badRequest, request.op == nil ? "op is missing (it must be Reg)" : "op must be Reg")
        }
        guard let context = try ServiceEnvironment.parseContext(Context.self, request.context), let username = context.username else {
            throw ServiceFailure(.badRequest, "context.username is required")
        }
        try ServiceEnvironment.validate(username: username)
        // The account-takeover rule: a caller registers keys only for the user its credentials speak for.
        guard principal.mayRegisterFor(username) else {
            throw AuthorizationFailure.forbidden("\(principal.subject ?? "?") (\(principal.source)) may not register \(username)")
        }
        try environment.signIn.requireRecentAuthentication(principal)
        // The policy the context names (or the built-in one: every authenticator with metadata); the user's
        // registered keys are disallowed, as in the spec's example, so a device does not register the same
        // authenticator twice.
        let accepted =
            try uaf.policies.configured(.registration, name: context.policy)
            ?? uaf.everyAuthenticator
        let policy = PolicyChoice.registration(accepted, existing: try await stores.registrations.registrations(username: username))
        let record = UAFCeremony(
            id: dispatchedSession ?? environment.newRequestID(), operation: .registration,
            challenge: uaf.newChallenge(), username: username, policy: policy, transactions: [],
            expiresAt: environment.clock().addingTimeInterval(uaf.requestLifetime),
            appAttestation: AppAttestationGate.stored(appAttestation.ask(.registration, policyName: context.policy)))
        // Registration is asked for (or dispatched) only by a caller who may register for the user: it counts.
        try await uaf.issue(record, status: .clientRegistering, dispatched: dispatchedSession != nil, counted: true)
        let message = RegistrationRequest(
            header: OperationHeader(
                op: .registration, appID: uaf.appID, serverData: record.id, exts: AppAttestationGate.requestExtensions(asked: record.appAttestation)),
            challenge: record.challenge, username: username, policy: policy)
        environment.decide(
            "registration request", username, 1200,
            "issued challenge \(record.challenge.prefix(10))… valid \(Int(uaf.requestLifetime)) s (authorized by \(principal.source))")
        return IssuedRequest(
            answer: ReturnUAFRequest(
                statusCode: UAFStatusCode.ok.rawValue, uafRequest: try uaf.uafRequest(message, header: \RegistrationRequest.header),
                op: .registration, lifetimeMillis: uaf.lifetimeMillis),
            sessionID: record.id)
    }

    /// The device id the response's header names (``DeviceServiceWire/deviceIDExtension``). It is a label, not a
    /// credential: it only decides which device's Device Service listing shows the credential, and that listing
    /// also requires the user to have a dispatch target of the same device, so a false label shows nothing to anyone.
    static func deviceID(_ header: OperationHeader) throws -> String? {
        let values = (header.exts ?? []).filter { $0.id == DeviceServiceWire.deviceIDExtension }.map(\.data)
        guard let value = values.first else { return nil }
        guard values.count == 1, DeviceServiceWire.isValid(deviceId: value) else {
            throw ServiceFailure(
                UAFVerificationError.malformedHeader(
                    "the \(DeviceServiceWire.deviceIDExtension) extension must appear once, 1...\(DeviceServiceWire.maximumDeviceIDLength) bytes without control characters"
                ))
        }
        return value
    }

    /// Endpoint 2: verifies a RegistrationResponse and stores the registrations.
    package func response(_ send: SendUAFResponse) async throws -> ServerResponse {
        let (response, consumed) = try await uaf.receive(RegistrationResponse.self, send, operation: .registration) { $0.header }
        let record = consumed.request
        let username = record.username ?? ""
        let report = UAFExchange.ClientReport(context: send.context)
        let deviceId = try Self.deviceID(response.header)
        do {
            let verified = try await RegistrationVerifier(configuration: uaf.relyingParty, metadata: uaf.metadata).verify(
                response, issued: IssuedRegistration(challenge: record.challenge, username: username, policy: record.policy),
                now: environment.clock(),
                isRegistered: { aaid, keyID in try await stores.registrations.registration(aaid: aaid, keyID: keyID) != nil })
            // The app, once the keys are verified: what the request asked of it (App attestation).
            let attested = try await appAttestation.check(
                .registration, asked: record.appAttestation, header: response.header, fcParams: response.fcParams, username: username,
                keyAttestations: verified.compactMap(\.androidKeyDescription))
            do {
                // One time for every key of the response: it is what ties them together when the device names itself
                // later (``RegistrationStore/link(username:aaid:keyID:deviceId:)``).
                let registeredAt = environment.clock()
                try await stores.registrations.insert(
                    verified.map {
                        var stored = RegistrationRecord($0, createdAt: registeredAt, deviceId: deviceId)
                        stored.appAttestation = attested?.summary
                        stored.appAttestKeyID = attested?.appAttestKeyID
                        return stored
                    })
            } catch StoreError.duplicateRegistration {
                // Another response registered the same key between the check and the insert.
                throw UAFVerificationError.keyIDAlreadyRegistered
            }
            let references = verified.map { StatusRecord.AuthenticatorReference(aaid: AAID.normalized($0.aaid), keyId: $0.keyID) }
            try await uaf.finish(record, .succeeded, code: .ok, report: report, authenticators: references)
            let summary = verified.map { "\($0.aaid) key \($0.keyID.prefix(10))…" }.joined(separator: ", ")
            // The device's short session for its next call, handed out in additionalTokens (``SignIn/openForRegistration``).
            guard let first = verified.first else { throw ServiceFailure(.badRequest, "no assertion") }
            let jwt = try await environment.signIn.openForRegistration(
                username: username, credential: .uaf(aaid: first.aaid, keyID: first.keyID),
                deviceId: deviceId, at: environment.clock())
            environment.decide("registration", username, 1200, "registered \(summary)")
            return ServerResponse(
                statusCode: UAFStatusCode.ok.rawValue, description: "Registered \(verified.count) authenticator(s)",
                additionalTokens: [Token(type: .jwt, value: jwt)])
        } catch let error as UAFVerificationError {
            try await uaf.finish(record, .failed, code: error.statusCode, report: report, authenticators: [])
            throw ServiceFailure(error.statusCode, error.description, username: username)
        } catch let refused as AppAttestationGate.Refused {
            try await uaf.finish(record, .failed, code: .unacceptableClientCapabilities, report: report, authenticators: [])
            throw ServiceFailure(.unacceptableClientCapabilities, refused.description, username: username)
        }
    }
}
