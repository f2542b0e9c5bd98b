import Foundation
import NevisProtocol
import Primitives
import UAF
import WireJSON

/// The answer of a request endpoint, with the status session id of the operation it opened (its request id, the
/// `serverData`), which the controller also sends as a header; nil when the answer opens no UAF exchange.
package struct IssuedRequest: Sendable {
    package var answer: ReturnUAFRequest
    package var sessionID: String?
}

/// UAF's part of the services' environment: what a UAF request and its response need beyond what every service shares
/// (``ServiceEnvironment``): the facets, policies, versions, channel binding and metadata the messages are checked
/// against, and the pending UAF requests with their status records. The services that exchange UAF messages or follow
/// their status (registration, authentication, deregistration, dispatch, status and the Auth Cloud API) take it; the
/// passkey service, the Device Service and the dispatch target API do not.
package struct UAFExchange: Sendable {
    /// The stores a UAF exchange writes: its pending requests and their status records.
    struct UsedStores: Sendable {
        let uafCeremonies: UAFCeremonyStore
        let ceremonies: CeremonyStore
        let status: StatusStore
        init(_ stores: Stores) {
            uafCeremonies = stores.uafCeremonies
            ceremonies = stores.ceremonies
            status = stores.status
        }
    }

    let environment: ServiceEnvironment
    let stores: UsedStores
    let facets: TrustedFacetsSource
    let metadataSource: MetadataSource
    let counterPolicy: RelyingPartyConfiguration.CounterPolicy
    let zeroCounters: RelyingPartyConfiguration.ZeroCounterRule
    /// The protocol versions the server speaks, highest first.
    let versions: [Version]
    /// The configured policies a request's context may name.
    let policies: PolicyChoice
    /// The certificate clients' ChannelBindings are checked against, or nil when the check is off.
    let channelBinding: ServerCertificateSource?
    /// How long an issued request (and a dispatched operation's step) may be answered.
    let requestLifetime: TimeInterval

    /// text/plain transaction content, in UTF-8 bytes (200 characters of up to 4 bytes each).
    static let maximumTransactionTextBytes = Transaction.maximumTextLength * 4
    /// image/png transaction content, decoded bytes.
    static let maximumTransactionImageBytes = 64 * 1024

    /// How long a finished operation's status record stays readable.
    var statusRetention: TimeInterval { TimeInterval(environment.limits.statusRetentionSeconds) }
    var appID: String { environment.identity.appID }
    /// The metadata in force now (a Metadata Service reload swaps it whole).
    var metadata: UAFMetadata { metadataSource.store.uaf }
    /// The built-in policy of the metadata in force (every authenticator it describes).
    var everyAuthenticator: Policy { everyAuthenticatorMemo.policy(for: metadataSource.store) }
    /// A request without a configured policy or a step-up user offers it, and deriving it per request (a set of
    /// algorithms per statement) was about 45 of a login's 750 allocations: it is derived once per metadata store.
    let everyAuthenticatorMemo = PolicyChoice.EveryAuthenticatorMemo()
    var relyingParty: RelyingPartyConfiguration {
        var configuration = RelyingPartyConfiguration(
            appID: appID, trustedFacetIDs: facets.facets, supportedVersions: Set(versions),
            counterPolicy: counterPolicy, channelBinding: channelBinding?.channelBinding(now: environment.clock()))
        configuration.zeroCounters = zeroCounters
        // The extensions this server reads (the registering device's id, the app's attestation); any other marked fail_if_unknown is refused.
        configuration.understoodExtensions = [DeviceServiceWire.deviceIDExtension, AppAttestationWire.extensionID]
        return configuration
    }

    var lifetimeMillis: Int64 { Int64(requestLifetime * 1000) }

    /// A request's UAF message, once per version the server speaks (highest first), as one `uafRequest` text: the
    /// client answers the one of its version (uaf-spec §3.1.1). Only the header's `upv` differs.
    func uafRequest<Message: Encodable>(_ message: Message, header: WritableKeyPath<Message, OperationHeader>) throws -> String {
        try UAFMessageCodec.encode(
            versions.map { version in
                var copy = message
                copy[keyPath: header].upv = version
                return copy
            })
    }
    /// What a caller without credentials may ask of an open endpoint (`request/authentication`,
    /// `dispatch/authentication`): a context of at most `environment.limits.anonymousContextBytes` and no image transactions.
    /// The context is stored with the request (a dispatch token keeps it until it expires), so this bounds what an
    /// anonymous caller makes the server store, and a bank's login page never needs a picture from an anonymous
    /// caller. A caller counts as authorized when its credential may act for the user named (any credential when
    /// no user is named).
    func checkOpenRequest(context: String?, username: String?, transactions: [Transaction], caller: Principal?) throws {
        if ServiceEnvironment.authorizes(caller, for: username) { return }
        guard (context?.utf8.count ?? 0) <= environment.limits.anonymousContextBytes else {
            throw ServiceFailure(
                .badRequest, "context longer than \(environment.limits.anonymousContextBytes) bytes from a caller without credentials for the user")
        }
        guard !transactions.contains(where: { $0.contentType == "image/png" }) else {
            throw ServiceFailure(.unauthorized, "an image/png transaction needs a caller with credentials for the user")
        }
    }

    /// Stores an issued request, after the per-user cap when it is `counted`, and opens its status record (its id
    /// is the status session id, see the wire contract). A request issued for a redeemed dispatch token
    /// (`dispatched`) reuses the token's status record, which moves from `tokenCreated` to `status`.
    ///
    /// Only a request asked for by a caller who may act for its user is `counted` against that user's cap
    /// (`environment.limits.outstandingRequestsPerUsername`): anyone may ask for a step-up request naming any user, and if those
    /// counted, ten anonymous requests would lock the user out of every login, registration and push approval
    /// until they expire. Uncounted requests are bounded by the per-client rate limit and their lifetime instead.
    func issue(_ record: UAFCeremony, status: StatusRecord.Status, dispatched: Bool, counted: Bool) async throws {
        let cap =
            counted
            ? record.username.map { CeremonyCap(username: $0, limit: environment.limits.outstandingRequestsPerUsername, now: environment.clock()) }
            : nil
        if dispatched {
            guard try await stores.uafCeremonies.insert(record, cap: cap) else { throw capReached }
            try await stores.status.tokenRedeemed(
                sessionId: record.id, status: status, result: .tokenRedeemed, now: environment.clock(), retention: statusRetention)
        } else {
            // The usual case: the request and its new status record, written together (one statement on PostgreSQL).
            guard try await stores.ceremonies.open(record, status: openedStatus(record, status), retention: statusRetention, cap: cap) else {
                throw capReached
            }
        }
    }

    /// The status record a newly issued request opens: its id is the status session id.
    private func openedStatus(_ record: UAFCeremony, _ status: StatusRecord.Status) -> StatusRecord {
        StatusRecord(
            sessionId: record.id, status: status, operation: record.operation.rawValue, username: record.username, updatedAt: environment.clock())
    }

    /// Issues a step-up request for `username` (not for a dispatch token): its policy accepts exactly the user's
    /// registered keys, it counts against the per-user cap when `counted` (see ``issue(_:status:dispatched:counted:)``),
    /// and it opens its status record, all in one store call
    /// (``CeremonyStore/openStepUp(username:cap:retention:request:status:)``). `request` makes the request from its
    /// policy.
    func issueStepUp(
        username: String, counted: Bool, status: StatusRecord.Status, request: (Policy) -> UAFCeremony
    ) async throws -> UAFCeremony {
        let cap = counted ? CeremonyCap(username: username, limit: environment.limits.outstandingRequestsPerUsername, now: environment.clock()) : nil
        let outcome = try await stores.ceremonies.openStepUp(username: username, cap: cap, retention: statusRetention, request: request) { record in
            openedStatus(record, status)
        }
        switch outcome {
        case .issued(let record): return record
        case .capReached: throw capReached
        case .noKeys: throw Self.noAuthenticator
        }
    }

    /// A step-up request for a user without a registered key.
    static var noAuthenticator: ServiceFailure { ServiceFailure(.notFound, "no authenticator registered for this user") }

    private var capReached: OutstandingRequestsRefusal {
        OutstandingRequestsRefusal(limit: environment.limits.outstandingRequestsPerUsername, retryAfterSeconds: Int(requestLifetime.rounded(.up)))
    }

    func newChallenge() -> String { RandomToken.make(32) }

    /// How a response takes the request its serverData names.
    enum Taking: Sendable {
        /// Removed at once, once only (``CeremonyStore/consume(id:)``): a registration.
        case consumed
        /// Read and left in place (``CeremonyStore/pending(id:)``, with the registrations of its user):
        /// a login, whose completion removes it with its other writes, or whose refusal does
        /// (``abandon(_:code:report:)``).
        case leftForCompletion
    }

    /// Takes the request named by serverData (uaf-spec §5 step 2) as `taking` says: unknown, expired, already used or
    /// for another operation is 1491, and such a request is not answerable afterwards.
    func take(serverData: String?, operation: UAFOperation, _ taking: Taking) async throws -> CeremonyStore.Answered {
        // A serverData that is not there at all is a malformed header (1498), not a request this server issued
        // and lost (1491): the conformance tool's rule.
        guard let serverData, !serverData.isEmpty, serverData.utf8.count <= OperationHeader.maximumServerDataLength else {
            throw ServiceFailure(UAFVerificationError.malformedServerData)
        }
        let taken =
            switch taking {
            case .consumed: try await stores.ceremonies.consume(id: serverData)
            case .leftForCompletion: try await stores.ceremonies.pending(id: serverData)
            }
        guard let taken else { throw ServiceFailure(.requestInvalid, "unknown or already used request") }
        let record = taken.request
        guard record.operation == operation else {
            // Answered at the wrong endpoint: the request is spent, as a consumed one is.
            if taking == .leftForCompletion { _ = try await stores.uafCeremonies.remove(id: record.id) }
            throw ServiceFailure(.requestInvalid, "request was issued for \(record.operation.rawValue)", username: record.username)
        }
        guard record.expiresAt >= environment.clock() else {
            switch taking {
            case .consumed: try await finish(record, .failed, code: .requestInvalid, report: .none, authenticators: [])
            case .leftForCompletion: try await abandon(record, code: .requestInvalid, report: .none)
            }
            throw ServiceFailure(.requestInvalid, "request expired", username: record.username)
        }
        return taken
    }

    /// Decodes the response array, picks the element whose upv this server speaks (uaf-spec §5 step 1) and takes
    /// the request its serverData names (step 2) as `taking` says.
    func receive<T: Decodable>(
        _ type: T.Type, _ send: SendUAFResponse, operation: UAFOperation, taking: Taking = .consumed,
        header: (T) -> OperationHeader
    ) async throws -> (T, CeremonyStore.Answered) {
        let messages: [T]
        do { messages = try UAFMessageCodec.decodeResponses(T.self, from: send.uafResponse) } catch { throw ServiceFailure(error) }
        guard let message = messages.first(where: { relyingParty.supportedVersions.contains(header($0).upv) }) else {
            throw ServiceFailure(UAFVerificationError.unsupportedVersion(header(messages[0]).upv))
        }
        return (message, try await take(serverData: header(message).serverData, operation: operation, taking))
    }

    /// Refuses the answer to a request left for completion: removes the request and records the refusal (`code`,
    /// status `failed`) in its status record, together (``CeremonyStore/abandon(_:)``).
    func abandon(_ record: UAFCeremony, code: UAFStatusCode, report: ClientReport) async throws {
        try await stores.ceremonies.abandon(outcome(record, .failed, code: code, report: report, authenticators: []))
    }

    /// Moves the request's status record to its outcome.
    func finish(
        _ record: UAFCeremony, _ status: StatusRecord.Status, code: UAFStatusCode, report: ClientReport,
        authenticators: [StatusRecord.AuthenticatorReference], username: String? = nil
    ) async throws {
        try await stores.status.finish(outcome(record, status, code: code, report: report, authenticators: authenticators, username: username))
    }

    /// The status record's outcome for `record` (what ``finish(_:_:code:report:authenticators:username:)`` writes).
    func outcome(
        _ record: UAFCeremony, _ status: StatusRecord.Status, code: UAFStatusCode, report: ClientReport,
        authenticators: [StatusRecord.AuthenticatorReference], username: String? = nil
    ) -> StatusStore.Outcome {
        StatusStore.Outcome(
            sessionId: record.id, status: status, username: username ?? record.username, uafStatusCode: code.rawValue,
            asmStatusCode: report.asmStatusCode, clientErrorCode: report.clientErrorCode, authenticators: authenticators,
            now: environment.clock(), retention: statusRetention)
    }

    /// What the device reported in the SendUAFResponse context (the Nevis extension, server-api §B.3): the ASM
    /// status code and the client error code, kept in the status record. A context that is not such an object is
    /// ignored: it is the device's report, not an input the verification depends on.
    package struct ClientReport: Decodable, Sendable {
        var asmStatusCode: Int?
        var clientErrorCode: Int?
        static let none = ClientReport(asmStatusCode: nil, clientErrorCode: nil)
        init(asmStatusCode: Int?, clientErrorCode: Int?) {
            self.asmStatusCode = asmStatusCode
            self.clientErrorCode = clientErrorCode
        }
        init(context: String?) { self = ((try? ServiceEnvironment.parseContext(ClientReport.self, context)) ?? nil) ?? .none }
    }
}
