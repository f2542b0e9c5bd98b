import Crypto
import Foundation
import Logging
import UAF

/// A decision the server took, for logs and for the demo's narration.
public struct ServerDecision: Sendable, CustomStringConvertible {
    public var operation: String
    public var username: String?
    public var statusCode: Int
    public var detail: String
    public var description: String {
        "\(operation)\(username.map { " for \($0)" } ?? ""): \(statusCode) \(detail)"
    }
}

/// A rejection with its UAF status code.
struct ServiceFailure: Error {
    let status: UAFStatusCode
    let detail: String
    init(_ status: UAFStatusCode, _ detail: String) { self.status = status; self.detail = detail }
}

/// The registration and authentication orchestration (no HTTP here): issues requests, consumes challenges
/// once, delegates every protocol check to the `UAF` verifiers and stores the outcome.
public struct UAFService: Sendable {
    public let appID: String
    public let facets: [String]
    let repository: any Repository
    let metadata: MetadataStore
    let requestLifetime: TimeInterval
    let relyingParty: RelyingPartyConfiguration
    let clock: @Sendable () -> Date
    let onDecision: @Sendable (ServerDecision) -> Void

    public init(appID: String, facets: [String], repository: any Repository, metadata: MetadataStore, requestLifetime: TimeInterval,
                counterPolicy: RelyingPartyConfiguration.CounterPolicy = .reject,
                clock: @escaping @Sendable () -> Date = { Date() }, onDecision: @escaping @Sendable (ServerDecision) -> Void = { _ in }) {
        self.appID = appID; self.facets = facets; self.repository = repository; self.metadata = metadata
        self.requestLifetime = requestLifetime; self.clock = clock; self.onDecision = onDecision
        relyingParty = RelyingPartyConfiguration(appID: appID, trustedFacetIDs: facets, counterPolicy: counterPolicy)
    }

    static func randomToken(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    var lifetimeMillis: Int64 { Int64(requestLifetime * 1000) }

    // MARK: Contexts (the stringified JSON objects of GetUAFRequest.context)

    struct RegistrationContext: Decodable { var username: String?; var policy: String? }
    struct AuthenticationContext: Decodable { var username: String?; var transaction: [Transaction]? }

    static func parseContext<T: Decodable>(_ type: T.Type, _ context: String?) throws -> T? {
        guard let context, !context.isEmpty else { return nil }
        do { return try JSONDecoder().decode(T.self, from: Data(context.utf8)) } catch {
            throw ServiceFailure(.badRequest, "context is not a JSON object of the expected shape")
        }
    }

    static func validate(username: String) throws {
        guard !username.isEmpty, username.count <= 128 else { throw ServiceFailure(.badRequest, "username must be 1...128 characters") }
    }

    // MARK: Registration

    /// Endpoint 1: issues a RegistrationRequest for the context's username.
    func registrationRequest(_ request: GetUAFRequest) async throws -> ReturnUAFRequest {
        guard request.op == nil || request.op == .registration else { throw ServiceFailure(.badRequest, "op must be Reg") }
        guard let username = try Self.parseContext(RegistrationContext.self, request.context)?.username else {
            throw ServiceFailure(.badRequest, "context.username is required")
        }
        try Self.validate(username: username)
        // Every authenticator with metadata is accepted; the user's registered keys are disallowed, as in the
        // spec's example, so a device does not register the same authenticator twice.
        let existing = try await repository.registrations(username: username)
        let disallowed = Dictionary(grouping: existing, by: \.aaid).map { aaid, records in
            MatchCriteria(aaid: [aaid], keyIDs: records.map(\.keyID))
        }.sorted { ($0.aaid?.first ?? "") < ($1.aaid?.first ?? "") }
        let policy = Policy(accepted: metadata.all.map { [MatchCriteria(aaid: [$0.aaid])] }, disallowed: disallowed.isEmpty ? nil : disallowed)
        let record = ChallengeRecord(id: Self.randomToken(24), operation: .registration, challenge: Self.randomToken(32),
                                     username: username, policy: policy, transactions: [], expiresAt: clock().addingTimeInterval(requestLifetime))
        try await repository.insertChallenge(record)
        let message = RegistrationRequest(header: OperationHeader(op: .registration, appID: appID, serverData: record.id),
                                          challenge: record.challenge, username: username, policy: policy)
        onDecision(ServerDecision(operation: "registration request", username: username, statusCode: 1200,
                                  detail: "issued challenge \(record.challenge.prefix(10))… valid \(Int(requestLifetime)) s"))
        return ReturnUAFRequest(statusCode: UAFStatusCode.ok.rawValue, uafRequest: try UAFMessageCodec.encode([message]),
                                op: .registration, lifetimeMillis: lifetimeMillis)
    }

    /// Consumes the challenge named by serverData (uaf-spec §5 step 2): unknown, expired, already used or for
    /// another operation is 1491.
    func consumeChallenge(serverData: String?, operation: UAFOperation) async throws -> ChallengeRecord {
        guard let serverData, !serverData.isEmpty, serverData.count <= OperationHeader.maximumServerDataLength else {
            throw ServiceFailure(.requestInvalid, "serverData is missing")
        }
        guard let record = try await repository.consumeChallenge(id: serverData) else {
            throw ServiceFailure(.requestInvalid, "unknown or already used request")
        }
        guard record.operation == operation else { throw ServiceFailure(.requestInvalid, "request was issued for \(record.operation.rawValue)") }
        guard record.expiresAt >= clock() else { throw ServiceFailure(.requestInvalid, "request expired") }
        return record
    }

    /// Decodes the response array, picks the element whose upv this server speaks (uaf-spec §5 step 1) and
    /// consumes the request its serverData names (step 2).
    func receive<T: Decodable>(_ type: T.Type, _ send: SendUAFResponse, operation: UAFOperation,
                               header: (T) -> OperationHeader) async throws -> (T, ChallengeRecord) {
        guard let messages = try? UAFMessageCodec.decode(T.self, from: send.uafResponse) else {
            throw ServiceFailure(.badRequest, "uafResponse is not a \(T.self) array")
        }
        guard let message = messages.first(where: { relyingParty.supportedVersions.contains(header($0).upv) }) else {
            throw ServiceFailure(.badRequest, "no response in a supported protocol version")
        }
        return (message, try await consumeChallenge(serverData: header(message).serverData, operation: operation))
    }

    /// Endpoint 2: verifies a RegistrationResponse and stores the registrations.
    func registrationResponse(_ send: SendUAFResponse) async throws -> ServerResponse {
        let (response, record) = try await receive(RegistrationResponse.self, send, operation: .registration) { $0.header }
        let username = record.username ?? ""
        do {
            let verified = try await RegistrationVerifier(configuration: relyingParty, metadata: metadata).verify(
                response, issued: IssuedRegistration(challenge: record.challenge, username: username, policy: record.policy), now: clock())
            do {
                try await repository.insertRegistrations(verified.map { RegistrationRecord($0, createdAt: clock()) })
            } catch RepositoryError.duplicateRegistration {
                throw UAFVerificationError(.keyIDAlreadyRegistered)
            }
            let summary = verified.map { "\($0.aaid) key \($0.keyID.prefix(10))…" }.joined(separator: ", ")
            onDecision(ServerDecision(operation: "registration", username: username, statusCode: 1200, detail: "registered \(summary)"))
            return ServerResponse(statusCode: UAFStatusCode.ok.rawValue, description: "Registered \(verified.count) authenticator(s)")
        } catch let error as UAFVerificationError {
            throw ServiceFailure(error.statusCode, error.description)
        }
    }

    // MARK: Authentication

    /// Endpoint 3: issues an AuthenticationRequest, optionally for one user (step-up) and with transactions.
    func authenticationRequest(_ request: GetUAFRequest) async throws -> ReturnUAFRequest {
        guard request.op == nil || request.op == .authentication else { throw ServiceFailure(.badRequest, "op must be Auth") }
        let context = try Self.parseContext(AuthenticationContext.self, request.context)
        let transactions = context?.transaction ?? []
        try Self.validate(transactions: transactions)
        let policy: Policy
        if let username = context?.username {
            try Self.validate(username: username)
            let registrations = try await repository.registrations(username: username)
            guard !registrations.isEmpty else { throw ServiceFailure(.notFound, "no authenticator registered for this user") }
            policy = Policy(accepted: Dictionary(grouping: registrations, by: \.aaid).sorted { $0.key < $1.key }.map { aaid, records in
                [MatchCriteria(aaid: [aaid], keyIDs: records.map(\.keyID))]
            })
        } else {
            policy = Policy(accepted: metadata.all.map { [MatchCriteria(aaid: [$0.aaid])] })
        }
        let record = ChallengeRecord(id: Self.randomToken(24), operation: .authentication, challenge: Self.randomToken(32),
                                     username: context?.username, policy: policy, transactions: transactions,
                                     expiresAt: clock().addingTimeInterval(requestLifetime))
        try await repository.insertChallenge(record)
        let message = AuthenticationRequest(header: OperationHeader(op: .authentication, appID: appID, serverData: record.id),
                                            challenge: record.challenge, transaction: transactions.isEmpty ? nil : transactions, policy: policy)
        onDecision(ServerDecision(operation: "authentication request", username: context?.username, statusCode: 1200,
                                  detail: "issued challenge \(record.challenge.prefix(10))…\(transactions.isEmpty ? "" : " with a transaction to confirm")"))
        return ReturnUAFRequest(statusCode: UAFStatusCode.ok.rawValue, uafRequest: try UAFMessageCodec.encode([message]),
                                op: .authentication, lifetimeMillis: lifetimeMillis)
    }

    static func validate(transactions: [Transaction]) throws {
        for transaction in transactions {
            guard let content = Base64URL.decode(transaction.content) else { throw ServiceFailure(.badRequest, "transaction content is not base64url") }
            switch transaction.contentType {
            case "text/plain":
                guard let text = String(data: content, encoding: .utf8), !text.isEmpty, text.count <= Transaction.maximumTextLength else {
                    throw ServiceFailure(.badRequest, "text/plain transaction must be 1...\(Transaction.maximumTextLength) UTF-8 characters")
                }
            case "image/png":
                guard transaction.tcDisplayPNGCharacteristics != nil else {
                    throw ServiceFailure(.badRequest, "image/png transaction needs tcDisplayPNGCharacteristics")
                }
            default:
                throw ServiceFailure(.badRequest, "transaction content type must be text/plain or image/png")
            }
        }
    }

    /// Endpoint 4: verifies an AuthenticationResponse and advances the counters.
    func authenticationResponse(_ send: SendUAFResponse) async throws -> ServerResponse {
        let (response, record) = try await receive(AuthenticationResponse.self, send, operation: .authentication) { $0.header }
        var stored: [String: UInt32] = [:]
        do {
            let verified = try await AuthenticationVerifier(configuration: relyingParty, metadata: metadata).verify(
                response, issued: IssuedAuthentication(challenge: record.challenge, policy: record.policy,
                                                       transactions: record.transactions, username: record.username)
            ) { aaid, keyID in
                let found = try await repository.registration(aaid: aaid, keyID: keyID)
                if let found { stored[found.aaid + "/" + found.keyID] = found.signCounter }
                return found?.registeredKey
            }
            for result in verified {
                let previous = stored[AAID.normalized(result.aaid) + "/" + result.keyID] ?? 0
                // Compare-and-set: if another request advanced the counter meanwhile, this one is a replay.
                guard try await repository.updateSignCounter(aaid: result.aaid, keyID: result.keyID, from: previous, to: result.signCounter) else {
                    throw ServiceFailure(.requestInvalid, "the counter was advanced by a concurrent request")
                }
            }
            let user = verified.first?.username
            let mode = verified.contains { $0.mode == .transactionConfirmed } ? "transaction confirmed" : "user verified"
            onDecision(ServerDecision(operation: "authentication", username: user, statusCode: 1200,
                                      detail: "\(mode) with \(verified.map(\.aaid).joined(separator: ", ")), counter \(verified.first?.signCounter ?? 0)"))
            return ServerResponse(statusCode: UAFStatusCode.ok.rawValue, description: "Authenticated \(user ?? "")")
        } catch let error as UAFVerificationError {
            throw ServiceFailure(error.statusCode, error.description)
        }
    }

    /// Endpoint 6.
    var trustedFacets: TrustedFacets { TrustedFacets(trustedFacets: [.init(version: .uaf11, ids: facets)]) }

    /// Records a rejection for the logs / narration.
    func reject(_ operation: String, _ failure: ServiceFailure) {
        onDecision(ServerDecision(operation: operation, username: nil, statusCode: failure.status.rawValue, detail: "rejected: \(failure.detail)"))
    }
}
