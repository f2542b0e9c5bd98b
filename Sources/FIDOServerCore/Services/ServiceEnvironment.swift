import Foundation
import Logging
import NevisProtocol
import Primitives
import UAF
import WireJSON

/// What every service shares, whichever protocol it speaks: the relying party's identity, the limits, the sign-in
/// step (sessions, tokens, cookie), the clock and the decision log, and the rules for usernames, contexts and
/// operation ids. No store: each service declares the stores it uses (its `UsedStores`), and a protocol's own part
/// is its own (``UAFExchange`` for UAF; a passkey service's settings for WebAuthn). The services are pure
/// orchestration: every protocol check is the protocol core's.
package struct ServiceEnvironment: Sendable {
    let identity: AppIdentity
    let limits: ServerConfiguration.Limits
    /// Where every sign-in ends: the session, its JWT and cookie (``SignIn``).
    let signIn: SignIn
    let clock: @Sendable () -> Date
    let onDecision: @Sendable (ServerDecision) -> Void

    /// Usernames are limited in bytes, not characters: one "character" can be many code points.
    static let maximumUsernameBytes = 256
    package func decide(_ operation: OperationName, _ username: String?, _ status: Int, _ detail: String) {
        onDecision(ServerDecision(operation: operation, username: username, statusCode: status, detail: detail))
    }

    static func parseContext<T: Decodable>(_ type: T.Type, _ context: String?) throws -> T? {
        guard let context, !context.isEmpty else { return nil }
        do { return try WireJSONDecoder().decode(T.self, from: context) } catch {
            throw ServiceFailure(.badRequest, "context is not a JSON object of the expected shape")
        }
    }

    /// Whether `caller` may act for the user a request names (any caller with a credential when it names none).
    static func authorizes(_ caller: Principal?, for username: String?) -> Bool {
        guard let caller else { return false }
        return username.map(caller.mayActFor) ?? true
    }

    static func validate(username: String) throws {
        let bytes = username.utf8.count
        guard bytes > 0, bytes <= maximumUsernameBytes else {
            throw ServiceFailure(.badRequest, "username must be 1...\(maximumUsernameBytes) UTF-8 bytes")
        }
        guard !Text.hasControlCharacters(username) else { throw ServiceFailure(.badRequest, "username contains control characters") }
    }

    /// A request's id (its serverData and the session id of its status record): time-ordered (``OrderedToken``),
    /// with 192 random bits, as unguessable as before.
    func newRequestID() -> String { OrderedToken.make(24, now: clock()) }

    /// What ends the session id of an operation started with an access key (the Auth Cloud API, the demo site):
    /// `~` is in neither the time part (hex) nor the random part (base64url) of an ``OrderedToken``.
    static let accessKeyOperationMark = "~k"

    /// What ends the session id of an operation dispatched by a caller without credentials for its user.
    static let anonymousDispatchMark = "~a"

    /// A session id for an operation `principal` dispatches for `username`, marked in two cases:
    /// - the principal is an access key's. Why: the Auth Cloud hands that id to the relying party's front end inside
    ///   the status token, which may poll but not cancel; only the access key may (``StatusService/cancel(_:)``
    ///   refuses such ids);
    /// - the caller may not act for the user (open authentication dispatch). Why: whoever redeems the token gets
    ///   the request an anonymous step-up gets, without the user's key IDs (``AuthenticationService``), or the
    ///   dispatcher could redeem its own token to learn them.
    func newSessionID(dispatchedBy principal: Principal?, for username: String?) -> String {
        switch principal?.source {
        case .accessKey?, .demoSite?: return newRequestID() + Self.accessKeyOperationMark
        default: return newRequestID() + (username != nil && !Self.authorizes(principal, for: username) ? Self.anonymousDispatchMark : "")
        }
    }

    /// Whether `sessionID` names an operation started with an access key.
    static func isAccessKeyOperation(_ sessionID: String) -> Bool { sessionID.hasSuffix(accessKeyOperationMark) }

    /// Whether `sessionID` names an operation dispatched by a caller without credentials for its user.
    static func isAnonymousDispatch(_ sessionID: String) -> Bool { sessionID.hasSuffix(anonymousDispatchMark) }
}
