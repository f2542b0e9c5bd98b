import Crypto
import Foundation
import Primitives
import UAF

/// In-band authentication and transaction confirmation; a success opens a session and hands out its tokens.
package struct AuthenticationService: Sendable {
    let environment: ServiceEnvironment
    let uaf: UAFExchange
    let appAttestation: AppAttestationGate
    let stores: UsedStores

    /// The stores a UAF login reads and writes beyond its exchange: the registrations, and the login's completion (counter and session in one unit).
    struct UsedStores: Sendable {
        let registrations: RegistrationStore
        let ceremonies: CeremonyStore
        init(_ stores: Stores) {
            registrations = stores.registrations
            ceremonies = stores.ceremonies
        }
    }

    package struct Context: Decodable {
        var username: String?
        var transaction: [Transaction]?
        var policy: String?
    }

    /// A success: the UAF answer and the session cookie to set.
    package struct Outcome: Sendable {
        package var response: ServerResponse
        package var setCookie: String?
    }

    /// Endpoint 3: issues an AuthenticationRequest, optionally for one user (step-up) and with transactions.
    /// `caller` is the principal of the credential the caller presented, if any (the endpoint is open).
    /// `dispatchedSession` is the status session of a redeemed dispatch token, which the request then continues.
    package func request(_ request: GetUAFRequest, caller: Principal?, dispatchedSession: String? = nil) async throws -> IssuedRequest {
        // Required (nevisFIDO lists it so): a body without it must not run a authentication, least of all a deregistration.
        guard request.op == .authentication else {
            throw ServiceFailure(.badRequest, request.op == nil ? "op is missing (it must be Auth)" : "op must be Auth")
        }
        let context = try ServiceEnvironment.parseContext(Context.self, request.context)
        let transactions = context?.transaction ?? []
        try Self.validate(transactions: transactions)
        // A dispatched request was checked against its dispatching caller when it was dispatched.
        if dispatchedSession == nil {
            try uaf.checkOpenRequest(context: request.context, username: context?.username, transactions: transactions, caller: caller)
        }
        let (id, challenge) = (dispatchedSession ?? environment.newRequestID(), uaf.newChallenge())
        let expiresAt = environment.clock().addingTimeInterval(uaf.requestLifetime)
        // A named policy that is not configured is refused before anything is stored.
        let configuredSet = try uaf.policies.configuredSet(transactions.isEmpty ? .authentication : .transaction, name: context?.policy)
        let configured = configuredSet?.policy
        let asked = AppAttestationGate.stored(appAttestation.ask(transactions.isEmpty ? .authentication : .transaction, policyName: context?.policy))
        let makeRecord = { (policy: Policy) in
            UAFCeremony(
                id: id, operation: .authentication, challenge: challenge, username: context?.username, policy: policy,
                transactions: transactions, expiresAt: expiresAt, policyName: configuredSet?.name, appAttestation: asked)
        }
        if let username = context?.username { try ServiceEnvironment.validate(username: username) }
        // The named user's keys are offered only to a caller who may act for her (for a redeemed dispatch token: who
        // dispatched it may). Anyone else gets the policy a login without a username gets, whether she has keys or
        // not: her key IDs, or a 1404 for a user without any, would tell anyone which usernames are registered
        // (WebAuthn §14.6.2 makes the same point). The response is still verified against the user named: another
        // user's key is refused (1401), an unknown key too (1481).
        let stepUpUser = context?.username.flatMap { username in
            (dispatchedSession.map { !ServiceEnvironment.isAnonymousDispatch($0) } ?? ServiceEnvironment.authorizes(caller, for: username))
                ? username : nil
        }
        let record: UAFCeremony
        if let username = stepUpUser {
            // Counted against her cap only when asked for in band: a dispatched request counts against nobody
            // (authentication dispatch is open to anyone; the token was the unit).
            let counted = dispatchedSession == nil
            if dispatchedSession == nil, configured == nil {
                // Step-up: the policy accepts exactly the user's registered keys (those a configured policy accepts).
                record = try await uaf.issueStepUp(username: username, counted: counted, status: .clientAuthenticating, request: makeRecord)
            } else {
                let keys = try await stores.registrations.registrations(username: username)
                guard !keys.isEmpty else { throw UAFExchange.noAuthenticator }
                let policy =
                    try configured.map { configured in
                        guard let policy = PolicyChoice.stepUp(configured, keys: keys, metadata: uaf.metadata) else {
                            throw ServiceFailure(.notFound, "no authenticator of this user is one the policy accepts")
                        }
                        return policy
                    } ?? CeremonyStore.stepUpPolicy(keys.map { CeremonyStore.StepUpKey(aaid: $0.aaid, keyID: $0.keyID) })
                record = makeRecord(policy)
                try await uaf.issue(record, status: .clientAuthenticating, dispatched: dispatchedSession != nil, counted: counted)
            }
        } else {
            record = makeRecord(configured ?? uaf.everyAuthenticator)
            try await uaf.issue(record, status: .clientAuthenticating, dispatched: dispatchedSession != nil, counted: false)
        }
        // With a transaction, the client is offered only authenticators with a display (an empty policy when none of
        // the user's has one: the client then finds no suitable authenticator); the verifier holds the answer to it.
        let policy = transactions.isEmpty ? record.policy : record.policy.askingForTransactionDisplay(metadata: uaf.metadata)
        let message = AuthenticationRequest(
            header: OperationHeader(
                op: .authentication, appID: uaf.appID, serverData: record.id,
                exts: AppAttestationGate.requestExtensions(asked: record.appAttestation)),
            challenge: record.challenge, transaction: transactions.isEmpty ? nil : transactions, policy: policy)
        environment.decide(
            "authentication request", context?.username, 1200,
            "issued challenge \(record.challenge.prefix(10))…\(transactions.isEmpty ? "" : " with a transaction to confirm")")
        return IssuedRequest(
            answer: ReturnUAFRequest(
                statusCode: UAFStatusCode.ok.rawValue, uafRequest: try uaf.uafRequest(message, header: \AuthenticationRequest.header),
                op: .authentication, lifetimeMillis: uaf.lifetimeMillis),
            sessionID: record.id)
    }

    static func validate(transactions: [Transaction]) throws {
        guard transactions.count <= 4 else { throw ServiceFailure(.badRequest, "at most 4 transactions") }
        for transaction in transactions {
            guard let content = Base64URL.decode(transaction.content) else {
                throw ServiceFailure(.badRequest, "transaction content is not base64url")
            }
            switch transaction.contentType {
            case "text/plain":
                guard let text = String(data: content, encoding: .utf8), !text.isEmpty,
                    content.count <= UAFExchange.maximumTransactionTextBytes, text.count <= Transaction.maximumTextLength
                else {
                    throw ServiceFailure(
                        .badRequest,
                        "text/plain transaction must be 1...\(Transaction.maximumTextLength) UTF-8 characters and at most \(UAFExchange.maximumTransactionTextBytes) bytes"
                    )
                }
            case "image/png":
                guard let declared = transaction.tcDisplayPNGCharacteristics else {
                    throw ServiceFailure(.badRequest, "image/png transaction needs tcDisplayPNGCharacteristics")
                }
                guard content.count <= UAFExchange.maximumTransactionImageBytes else {
                    throw ServiceFailure(.badRequest, "image/png transaction larger than \(UAFExchange.maximumTransactionImageBytes) bytes")
                }
                // The user confirms what the device shows: content that is not the PNG the relying party described
                // (another size or format, or no PNG at all) would be shown as something else, or not at all.
                guard let header = DisplayPNGCharacteristicsDescriptor(png: Array(content)) else {
                    throw ServiceFailure(.badRequest, "image/png transaction content is not a PNG image")
                }
                guard declared.describes(header) else {
                    throw ServiceFailure(
                        .badRequest,
                        "image/png transaction: the image is \(header.width)×\(header.height), bit depth \(header.bitDepth), colour type \(header.colorType), not what tcDisplayPNGCharacteristics says"
                    )
                }
            default:
                throw ServiceFailure(.badRequest, "transaction content type must be text/plain or image/png")
            }
        }
    }

    /// Endpoint 4: verifies an AuthenticationResponse, advances the counters, opens a session and answers its
    /// tokens (a JWT and the session cookie) in `additionalTokens`.
    ///
    /// The request is read, not removed, before the response is verified (``UAFExchange/Taking/leftForCompletion``):
    /// the completion removes it in the statement that writes the login, and every refusal removes it too, so it is
    /// answered at most once and a refused answer cannot be tried again.
    package func response(_ send: SendUAFResponse) async throws -> Outcome {
        // The registrations of a step-up request's user come back with the request (one round trip on PostgreSQL).
        let (response, taken) = try await uaf.receive(
            AuthenticationResponse.self, send, operation: .authentication, taking: .leftForCompletion
        ) { $0.header }
        let record = taken.request
        let report = UAFExchange.ClientReport(context: send.context)
        do {
            let verified = try await AuthenticationVerifier(configuration: uaf.relyingParty, metadata: uaf.metadata).verify(
                response,
                issued: IssuedAuthentication(
                    challenge: record.challenge, policy: record.policy,
                    transactions: record.transactions, username: record.username),
                now: environment.clock()
            ) { aaid, keyID in
                // A key not among them (no user named, or another user's key, which the verifier refuses) is looked up.
                if let prefetched = taken.registration(aaid: aaid, keyID: keyID) { return prefetched.registeredKey }
                return try await stores.registrations.registration(aaid: aaid, keyID: keyID)?.registeredKey
            }
            guard let first = verified.first, let last = verified.last else { throw ServiceFailure(.badRequest, "no assertion") }
            // The app, once the keys are verified and before anything is written: what the request asked of it.
            try await appAttestation.check(
                record.transactions.isEmpty ? .authentication : .transaction, asked: record.appAttestation, header: response.header,
                fcParams: response.fcParams, username: first.username)
            // Compare-and-set from the counter the verifier compared against: if another request advanced it
            // meanwhile, this one is a replay. Every counter but the last here; the last one with the session and the
            // status record below, which are written only if it advances.
            for result in verified.dropLast() {
                guard
                    try await stores.registrations.updateSignCounter(
                        aaid: result.aaid, keyID: result.keyID,
                        from: result.previousSignCounter, to: result.signCounter)
                else {
                    throw UAFVerificationError.counterRegression(stored: result.previousSignCounter, received: result.signCounter)
                }
            }
            let confirmed = verified.first { $0.mode == .transactionConfirmed }
            // The sign-in every protocol shares; nothing of it is stored until the store call below.
            let opened = try environment.signIn.open(
                username: first.username, credential: .uaf(aaid: first.aaid, keyID: first.keyID),
                at: environment.clock(), transactionContentHash: confirmed?.transactionContentHash ?? [],
                policy: record.policyName)
            let references = verified.map { StatusRecord.AuthenticatorReference(aaid: AAID.normalized($0.aaid), keyId: $0.keyID) }
            let completion = CeremonyStore.Authentication(
                counter: .init(aaid: last.aaid, keyID: last.keyID, from: last.previousSignCounter, to: last.signCounter),
                sessionToken: opened.token, session: opened.session,
                status: uaf.outcome(record, .succeeded, code: .ok, report: report, authenticators: references, username: first.username))
            switch try await stores.ceremonies.completeAuthentication(completion) {
            case .completed:
                environment.decide(
                    "authentication", first.username, 1200,
                    "\(confirmed == nil ? "user verified" : "transaction confirmed") with \(verified.map(\.aaid).joined(separator: ", ")), counter \(first.signCounter); session \(OrderedToken.label(opened.session.id)) opened"
                )
                return Outcome(
                    response: ServerResponse(
                        statusCode: UAFStatusCode.ok.rawValue, description: "Authenticated \(first.username)",
                        additionalTokens: [Token(type: .jwt, value: opened.jwt), Token(type: .httpCookie, value: opened.cookie)]),
                    setCookie: opened.cookie)
            case .counterMoved:
                throw UAFVerificationError.counterRegression(stored: last.previousSignCounter, received: last.signCounter)
            case .requestGone:
                // Another answer completed or refused it meanwhile, or the relying party cancelled it: that decided.
                break
            }
        } catch let error as UAFVerificationError {
            try await uaf.abandon(record, code: error.statusCode, report: report)
            throw ServiceFailure(error.statusCode, error.description, username: record.username)
        } catch let refused as AppAttestationGate.Refused {
            try await uaf.abandon(record, code: .unacceptableClientCapabilities, report: report)
            throw ServiceFailure(.unacceptableClientCapabilities, refused.description, username: record.username)
        } catch {
            // Any other refusal or failure spends the request too, so an answer is never verified twice. When the
            // database itself failed this may fail as well; the request then expires unanswered.
            try? await uaf.abandon(record, code: (error as? ServiceFailure)?.status ?? .internalServerError, report: report)
            throw error
        }
        throw ServiceFailure(.requestInvalid, "unknown or already used request", username: record.username)
    }
}
