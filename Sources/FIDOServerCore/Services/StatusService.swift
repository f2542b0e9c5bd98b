import Foundation
import UAF

/// The Status Service (server-api §B.5): `{"sessionId": …}` in, the record out.
package struct StatusService: Sendable {
    let environment: ServiceEnvironment
    let uaf: UAFExchange
    let stores: UsedStores

    /// The stores the status service reads and a cancel writes: the tokens, the requests and their status records.
    struct UsedStores: Sendable {
        let dispatchTokens: DispatchTokenStore
        let uafCeremonies: UAFCeremonyStore
        let status: StatusStore
        init(_ stores: Stores) {
            dispatchTokens = stores.dispatchTokens
            uafCeremonies = stores.uafCeremonies
            status = stores.status
        }
    }

    package struct Query: Decodable { var sessionId: String }

    /// The answer's shape, with the Nevis field names.
    package struct Answer: Encodable {
        var status: String
        var timestamp: String
        var userId: String?
        var uafStatusCode: Int?
        var asmStatusCode: Int?
        var clientErrorCode: Int?
        var authenticators: [StatusRecord.AuthenticatorReference]
        var tokenInformation: TokenInformation?
    }

    /// `tokenInformation` on the wire (the stored expiry stays internal).
    package struct TokenInformation: Encodable {
        var dispatchTargetExtId: String?
        var tokenResult: StatusRecord.TokenInformation.TokenResult?
        var dispatcherInformation: StatusRecord.TokenInformation.DispatcherInformation?
    }

    /// The status as of `now`, whichever instance is asked (the stored record still says `tokenCreated` or
    /// `client…`): a dispatched token nobody redeemed in time, and a UAF request nobody answered within
    /// `requestLifetime` of its issue (the record took its `client…` status then), mean the operation failed. The
    /// device abandoned it, or could not report its failure.
    static func effectiveStatus(_ record: StatusRecord, now: Date, requestLifetime: TimeInterval) -> StatusRecord.Status {
        switch record.status {
        case .tokenCreated:
            if let expiry = record.tokenInformation?.tokenExpiresAt, expiry < now.epochMillis { return .failed }
        case .clientRegistering, .clientAuthenticating:
            if record.updatedAt.addingTimeInterval(requestLifetime) < now { return .failed }
        default: break
        }
        return record.status
    }

    /// Cancels the operation `query` names, for the relying party that started it (whoever holds the session id,
    /// as for the status itself), and answers its status afterwards. It is cancelled only if it had not got past
    /// the point of no return: its token unredeemed, or its UAF request still there (both removed here, so a redeem
    /// answers "expired" and an answer 1491). A registration's answer removes its request when it arrives, a login's
    /// only when it completes, so a login is cancelled even while its answer is being verified. Once the request is
    /// gone, the answer decides, and the status says how it ended; cancelling again changes nothing.
    /// An operation started with an access key is cancelled only through the Auth Cloud API, with that key: its
    /// front end holds its session id (in the status token) and may poll it, not end it (403).
    package func cancel(_ query: Query) async throws -> Answer {
        guard !ServiceEnvironment.isAccessKeyOperation(query.sessionId) else {
            throw AuthorizationFailure.forbidden("an operation started with an access key is cancelled with it: POST /api/v1/status/cancel")
        }
        if query.sessionId.utf8.count <= 128 { try await withdraw(sessionId: query.sessionId) }
        return try await status(query)
    }

    /// The cancel itself (also the Auth Cloud API's): withdraws the token and the request, then marks the record.
    func withdraw(sessionId: String) async throws {
        let now = environment.clock()
        let withdrawnToken = try await stores.dispatchTokens.cancel(sessionId: sessionId, now: now)
        let withdrawnRequest = try await stores.uafCeremonies.consume(id: sessionId) != nil
        if withdrawnToken || withdrawnRequest, try await stores.status.cancel(sessionId: sessionId, now: now, retention: uaf.statusRetention) {
            environment.decide("cancel", nil, 1200, "operation \(OrderedToken.label(sessionId)) cancelled by the relying party")
        }
    }

    package func status(_ query: Query) async throws -> Answer {
        let formatter = ISO8601DateFormatter()
        guard query.sessionId.utf8.count <= 128,
            let record = try await stores.status.record(sessionId: query.sessionId, now: environment.clock())
        else {
            // Unknown and expired ids answer the same way, so the endpoint does not reveal which ids ever existed.
            return Answer(
                status: StatusRecord.Status.unknown.rawValue, timestamp: formatter.string(from: environment.clock()),
                userId: nil, uafStatusCode: nil, asmStatusCode: nil, clientErrorCode: nil, authenticators: [])
        }
        let status = Self.effectiveStatus(record, now: environment.clock(), requestLifetime: uaf.requestLifetime)
        var token = record.tokenInformation.map {
            TokenInformation(
                dispatchTargetExtId: $0.dispatchTargetExtId, tokenResult: $0.tokenResult, dispatcherInformation: $0.dispatcherInformation)
        }
        var uafStatusCode = record.uafStatusCode
        if status != record.status {
            // Timed out: the token was never redeemed, or the redeemed request never answered (UAF 1408).
            if record.status == .tokenCreated { token?.tokenResult = .tokenTimedOut } else { uafStatusCode = 1408 }
        }
        return Answer(
            status: status.rawValue, timestamp: formatter.string(from: record.updatedAt), userId: record.username,
            uafStatusCode: uafStatusCode, asmStatusCode: record.asmStatusCode, clientErrorCode: record.clientErrorCode,
            authenticators: record.authenticators, tokenInformation: token)
    }
}
