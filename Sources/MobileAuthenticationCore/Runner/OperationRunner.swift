import Foundation
import UAF
import WireJSON

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The shared steps of every UAF operation, done once: get the UAF request through the transport, check the
/// facets, match the policy, let the app select an account and an authenticator, verify the user through the
/// interaction objects, sign, post the response, and commit the local state in one durable write.
package struct OperationRunner: Sendable {
    let core: ClientCore
    let objects: InteractionObjects
    /// The operation's extra headers (the app's request headers and its authorization or session).
    package let headers: [(String, String)]
    let retryPolicy: RetryPolicy

    package init(core: ClientCore, objects: InteractionObjects, headers: [(String, String)], retryPolicy: RetryPolicy? = nil) {
        self.core = core
        self.objects = objects
        self.headers = headers
        self.retryPolicy = retryPolicy ?? core.configuration.defaultRetryPolicy
    }

    var interaction: Interaction { core.interaction }
    var session: VerificationSession {
        VerificationSession(platform: core.platform, keyStore: core.keyStore, state: core.state, objects: objects, interaction: interaction)
    }

    // MARK: Transport steps

    /// The operation's error for a request that got no answer; a network failure carries the request (``HttpError``).
    package func map(_ failure: TransportFailure, request: HTTPRequest, server: Server?) -> OperationError {
        if Task.isCancelled { return .FidoError(errorCode: .userCanceled, cause: SDKMessage("the operation's task was cancelled")) }
        switch failure {
        case .insecure(let reason): return .FidoError(errorCode: .insecureTransport, cause: SDKMessage(reason))
        case .network(let error): return .NetworkError(cause: HttpError(request: request, server: server, exchange: nil, underlying: error))
        }
    }

    /// A header that signs one request (a `Device-Signature`), made afresh for every attempt.
    package typealias RequestSigner = @Sendable (HTTPRequest) throws -> (String, String)

    /// Sends with the operation's retry policy: only failures to reach the server are retried, never an answer.
    func send(_ request: HTTPRequest, server: Server?, signer: RequestSigner? = nil) async throws(OperationError) -> HTTPExchange {
        do {
            return try await retryPolicy.send(core.transport) {
                guard let signer else { return request }
                var signed = request
                signed.headers.append(try signer(request))
                return signed
            }
        } catch let failure as TransportFailure { throw map(failure, request: request, server: server) } catch is CancellationError {
            throw .FidoError(errorCode: .userCanceled, cause: SDKMessage("the operation's task was cancelled"))
        } catch {
            // The wait between attempts throws only when the task was cancelled; the signer when its key fails.
            if Task.isCancelled { throw .FidoError(errorCode: .userCanceled, cause: SDKMessage("the operation's task was cancelled")) }
            throw .Unknown(cause: error)
        }
    }

    /// POSTs a GetUAFRequest to `server` and returns the UAF message string of a 1200 answer.
    package func fetchUAFRequest(
        server: Server, path: String, op: UAFOperation, context: String, signer: RequestSigner? = nil
    ) async throws(OperationError) -> String {
        let body: Data
        do { body = try JSONEncoder().encode(GetUAFRequest(op: op, context: context)) } catch { throw .Unknown(cause: error) }
        let request = HTTPRequest(method: .POST, url: core.configuration.url(path, base: server.baseUrl), body: body, headers: headers)
        let exchange = try await send(request, server: server, signer: signer)
        // A device-signed request refused while the clocks disagree: the user can fix the date (sdk-api.md,
        // `ClockSkewTooBig` of a JWS deregistration); any other refusal stays a refusal.
        if signer != nil, exchange.status == 401, let offset = ServerClock.excessOffset(of: exchange, now: core.platform.now()) {
            throw .ClockSkewTooBig(
                cause: ServerStatusError(
                    statusCode: 0, httpStatus: 401, message: "the device clock is \(Int(offset)) s off the server's",
                    httpError: HttpError(request: request, server: server, exchange: exchange, underlying: nil)))
        }
        guard let answer = try? WireJSONDecoder().decode(ReturnUAFRequest.self, from: exchange.body) else {
            throw Self.serverFailure(exchange, statusCode: 0, request: request, server: server, now: core.platform.now())
        }
        guard exchange.status == 200, answer.statusCode == UAFStatusCode.ok.rawValue, let message = answer.uafRequest else {
            throw Self.serverFailure(exchange, statusCode: answer.statusCode, request: request, server: server, now: core.platform.now())
        }
        return message
    }

    /// Decodes the UAF request message and picks the UAF 1.1 entry.
    func decodeRequest<R: Decodable>(_ type: R.Type, from message: String, header: (R) -> OperationHeader) throws(OperationError) -> R {
        guard let requests = try? UAFMessageCodec.decode(R.self, from: message) else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the server's \(R.self) cannot be decoded"))
        }
        guard let request = requests.first(where: { header($0).upv == .uaf11 }) else { throw .FidoError(errorCode: .unsupportedVersion, cause: nil) }
        return request
    }

    /// POSTs a SendUAFResponse (with `context`, e.g. a ``FailureReport``) and returns the 1200 ServerResponse. Never
    /// retried: a response is single-use.
    func sendUAFResponse<T: Encodable>(
        server: Server, path: String, response: T, context: String? = nil
    ) async throws(OperationError) -> ServerResponse {
        let body: Data
        do { body = try JSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]), context: context)) } catch {
            throw .Unknown(cause: error)
        }
        let exchange: HTTPExchange
        let request = HTTPRequest(method: .POST, url: core.configuration.url(path, base: server.baseUrl), body: body, headers: headers)
        do { exchange = try await core.transport.send(request) } catch { throw map(error, request: request, server: server) }
        guard let answer = try? WireJSONDecoder().decode(ServerResponse.self, from: exchange.body) else {
            throw Self.serverFailure(exchange, statusCode: 0, request: request, server: server, now: core.platform.now())
        }
        guard exchange.status == 200, answer.statusCode == UAFStatusCode.ok.rawValue else {
            throw Self.serverFailure(
                exchange, statusCode: answer.statusCode, message: answer.description, request: request, server: server, now: core.platform.now())
        }
        return answer
    }

    /// The operation's error for an answer that is not a success; each cause carries the request and the answer.
    static func serverFailure(
        _ exchange: HTTPExchange, statusCode: Int, message: String? = nil, request: HTTPRequest? = nil,
        server: Server? = nil, now: Date = Date()
    ) -> OperationError {
        let http = request.map { HttpError(request: $0, server: server, exchange: exchange, underlying: nil) }
        if exchange.status == 404 || exchange.status == 405, statusCode == 0 {
            // No UAF answer and no such endpoint: a server without this operation (an older backend, or one that
            // does not offer it). A UAF error sent with 404 is the operation's answer and stays a FIDO error.
            return .OperationNotSupportedByBackend(
                cause: ServerStatusError(
                    statusCode: 0, httpStatus: exchange.status,
                    message: "no endpoint for this operation", httpError: http))
        }
        if exchange.status == 429 {
            // Too many requests: not a protocol violation, and nothing the user did wrong. Say when to try again.
            return .NetworkError(cause: RateLimitError(exchange, now: now, httpError: http))
        }
        if exchange.status == 401 || exchange.status == 403 {
            // The server refused the credentials (or their absence): say so, whatever the body holds.
            let reason =
                exchange.status == 401
                ? "the server requires valid authorization: pass an authorizationProvider (a JWT or the session of a prior authentication)"
                : "the authorization given may not act for this user"
            return .NetworkError(cause: ServerStatusError(statusCode: statusCode, httpStatus: exchange.status, message: reason, httpError: http))
        }
        let cause = ServerStatusError(
            statusCode: statusCode, httpStatus: exchange.status,
            message: message ?? UAFStatusCode(rawValue: statusCode)?.reasonPhrase, httpError: http)
        // 1497: the server's policy wanted proof that this is the genuine app and did not get it (NevisProtocol's
        // AppAttestationWire): the Nevis SDK's AppAttestationError, not a protocol error.
        if statusCode == UAFStatusCode.unacceptableClientCapabilities.rawValue { return .AppAttestationError(cause: cause) }
        return .FidoError(errorCode: .protocolError, cause: cause)
    }

    /// FacetID / AppID check (uaf-spec §4, client algorithm): an empty appID becomes our FacetID; an https appID
    /// is fetched as a TrustedFacets list and our FacetID must be listed for UAF 1.1.
    func checkAppID(_ appID: String?) async throws(OperationError) -> String {
        let facetID = core.facetID
        guard let appID, !appID.isEmpty else { return facetID }
        guard appID == facetID || appID.lowercased().hasPrefix("https://"), let url = URL(string: appID) else {
            throw .FidoError(errorCode: .untrustedFacetID, cause: SDKMessage("appID \(appID) is not an https URL"))
        }
        if appID == facetID { return appID }
        if core.facetCache.isTrusted(appID: appID, now: core.platform.now()) { return appID }
        let exchange = try await send(
            HTTPRequest(method: .GET, url: url, body: nil, headers: [], accept: "application/fido.trusted-apps+json"), server: nil)
        guard exchange.status == 200, let list = try? WireJSONDecoder().decode(TrustedFacets.self, from: exchange.body) else {
            throw .FidoError(errorCode: .untrustedFacetID, cause: SDKMessage("the trusted facet list at \(appID) cannot be read"))
        }
        let ids = list.trustedFacets.filter { $0.version == .uaf11 }.flatMap(\.ids)
        guard ids.contains(facetID) else {
            throw .FidoError(errorCode: .untrustedFacetID, cause: SDKMessage("\(facetID) is not a trusted facet of \(appID)"))
        }
        core.facetCache.remember(appID: appID, now: core.platform.now())
        return appID
    }

    func finalChallenge(appID: String, challenge: String) throws(OperationError) -> String {
        do { return try FinalChallengeParams(appID: appID, challenge: challenge, facetID: core.facetID).encodedFCParams() } catch {
            throw .Unknown(cause: error)
        }
    }

    // MARK: Selection

    /// Asks the app's authenticator selector. Without one, the only compliant authenticator is taken, unless the
    /// content of a transaction must be shown first (`mustShow`).
    func selectAuthenticator(
        account: AccountRecord, compliant: Set<String>, data: LocalStateData, transaction: Data?,
        mustShow: Bool
    ) async throws(OperationError) -> String {
        guard let selector = objects.authenticatorSelector else {
            if mustShow {
                throw .FidoError(
                    errorCode: .invalidTransactionContent,
                    cause: SDKMessage("a transaction must be shown before it is confirmed: set an authenticatorSelector (or an accountSelector)"))
            }
            guard compliant.count == 1, let only = compliant.first else {
                throw .Unknown(cause: SDKMessage("several authenticators are possible: set an authenticatorSelector"))
            }
            return only
        }
        let context = SelectionContextValue(
            account: account, authenticators: core.authenticators(in: data),
            transactionConfirmationData: transaction, compliant: compliant)
        return try await interaction.ask { (gate: InteractionGate<String>) in
            selector.selectAuthenticator(context: context, handler: TextAnswerHandler(gate: gate))
        }
    }
}

/// How often and how long to wait before an exchange that could not reach the server is tried again.
public enum RetryPolicy: Sendable, Equatable {
    case noRetry
    case constant(maxRetries: Int, delayInSeconds: TimeInterval)
    case exponential(maxRetries: Int, initialDelayInSeconds: TimeInterval, multiplier: Double, maximumDelayInSeconds: TimeInterval)

    /// The wait before retry number `retry` (1-based), or nil when no retry is left.
    func delay(beforeRetry retry: Int) -> TimeInterval? {
        switch self {
        case .noRetry: return nil
        case .constant(let maxRetries, let delay): return retry <= maxRetries ? max(delay, 0) : nil
        case .exponential(let maxRetries, let initial, let multiplier, let maximum):
            guard retry <= maxRetries else { return nil }
            return min(max(initial, 0) * pow(max(multiplier, 1), Double(retry - 1)), max(maximum, 0))
        }
    }
}

extension RetryPolicy {
    /// Sends the request `make` builds (anew for each attempt, so a signed request is signed again) until an answer
    /// arrives, the failure is other than reaching the server, or no retry is left, waiting the policy's delay in
    /// between. An answer, whatever it says, is never retried. Throws the transport's failure, `make`'s error, or
    /// `CancellationError` when the task is cancelled during a wait.
    package func send(_ transport: any ClientTransport, _ make: () throws -> HTTPRequest) async throws -> HTTPExchange {
        var attempt = 0
        while true {
            let request = try make()
            do { return try await transport.send(request) } catch {
                guard case .network = error, let delay = delay(beforeRetry: attempt + 1), !Task.isCancelled else { throw error }
                attempt += 1
                try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
            }
        }
    }
}

extension Configuration {
    /// `authenticationMaxRetries` times, `authenticationRetryIntervalInSeconds` apart (the Nevis default: 3 × 1 s).
    package var defaultRetryPolicy: RetryPolicy {
        .constant(maxRetries: max(authenticationMaxRetries, 0), delayInSeconds: TimeInterval(max(authenticationRetryIntervalInSeconds, 0)))
    }
}
