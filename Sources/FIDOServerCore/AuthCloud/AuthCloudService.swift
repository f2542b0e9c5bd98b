import Crypto
import Foundation
import JWTKit
import NevisProtocol
import Primitives
import UAF
import WireJSON

/// The Nevis Authentication Cloud API subset (server-api §A.7, §B.10): a relying party's backend enrolls users and
/// asks for approvals with an access key; its front end polls the status with the status token. Everything runs on
/// the ordinary machinery: an enrollment is a dispatched registration (link and QR code), an approval a dispatched
/// authentication (push or QR code), the status is the operation's status record. On the `fido2` channel they are
/// passkey ceremonies of nevisFIDO's FIDO2 API, and the status is the ceremony's.
package struct AuthCloudService: Sendable {
    let environment: ServiceEnvironment
    let uaf: UAFExchange
    /// Passkeys, when `fido2` is configured: the `fido2` channel's ceremonies.
    let passkeys: PasskeyService?
    let stores: UsedStores
    let dispatch: DispatchService
    /// The status service, whose cancel the Auth Cloud's cancel is.
    let statusService: StatusService
    let issuer: TokenIssuer
    let configuration: ServerConfiguration.Dispatch

    /// The stores the Auth Cloud API reads and writes: its users, their keys, passkeys, targets and sessions, and the
    /// operations' status records. Deleting a user erases everything the server holds for her (``UserData/erase(_:username:now:)``),
    /// which reaches every store that holds a user's data: `everyUserStore`, for that one call.
    struct UsedStores: Sendable {
        let authCloudUsers: AuthCloudUserStore
        let dispatchTargets: DispatchTargetStore
        let passkeys: PasskeyStore
        /// The `fido2` channel's ceremonies, whose status the status token reads.
        let passkeyCeremonies: PasskeyCeremonyStore
        let registrations: RegistrationStore
        let sessions: SessionStore
        let status: StatusStore
        let everyUserStore: Stores
        init(_ stores: Stores) {
            authCloudUsers = stores.authCloudUsers
            dispatchTargets = stores.dispatchTargets
            passkeys = stores.passkeys
            passkeyCeremonies = stores.passkeyCeremonies
            registrations = stores.registrations
            sessions = stores.sessions
            status = stores.status
            everyUserStore = stores
        }
    }

    /// How long a result token is valid: long enough for the front end to hand it to its backend.
    static let resultTokenLifetime: TimeInterval = 300
    /// The Auth Cloud username rule (server-api §B.10), within our own 256-byte username limit.
    static let usernameCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.@")

    // MARK: Operations

    /// `POST /api/v1/users/enroll`: the user (created when new) and a registration to scan or open.
    package func enroll(_ request: EnrollRequest, principal: Principal) async throws -> User {
        let channel = request.channel ?? "app"
        guard channel == "app" || channel == "fido2" else {
            throw Refusal(.badRequest, "unsupported_channel", "channel must be app or fido2 for enrollment.")
        }
        if channel == "fido2" { return try await enrollPasskey(request, principal: principal) }
        guard request.displayName == nil, request.fido2Options == nil else {
            throw Refusal(.badRequest, "bad_request", "displayName and fido2Options belong to the fido2 channel.")
        }
        let user: AuthCloudUserRecord
        if let userId = request.userId {
            user = try await enrolledUser(id: userId, named: request.username, principal: principal)
        } else {
            guard let username = request.username else { throw Refusal(.badRequest, "bad_request", "username or userId is required.") }
            try Self.validate(username: username)
            user =
                principal.source == .demoSite
                ? try await demoUser(username: username)
                : try await stores.authCloudUsers.findOrCreate(username: username, now: environment.clock()).record
        }
        let context = try JSONCoding.string(["username": user.username])
        let answer = try await dispatch.dispatch(
            DispatchService.TokenRequest(
                dispatcher: DispatchTargetWire.Dispatcher.link.rawValue,
                getUafRequest: GetUAFRequest(op: .registration, context: context)),
            operation: .registration, principal: principal, linkBase: appLinkBase)
        guard answer.dispatchResult == .dispatched, let sessionID = answer.sessionId, let link = answer.dispatcherInformation?.response else {
            throw ServiceFailure(.internalServerError, "enrollment dispatch answered \(answer.dispatchResult.rawValue)")
        }
        let statusToken = try await statusToken(transactionId: sessionID, user: user, op: "enroll", channel: channel, transactionHash: nil)
        var answerUser = try await describe(user)
        answerUser.enrollment = Enrollment(
            transactionId: sessionID, statusToken: statusToken, qrCode: try await qrCode(link), appLinkUri: link, fido2Options: nil)
        environment.decide(
            "auth cloud enroll", user.username, 1200, "registration dispatched as an app link, transaction \(OrderedToken.label(sessionID))")
        return answerUser
    }

    /// `POST /api/v1/approval`: an authentication (with `message`, a transaction to confirm) by push to the user's
    /// device, or as an app link and QR code (`app`), also without a user (usernameless).
    package func approval(_ request: ApprovalRequest, principal: Principal) async throws -> ApprovalAnswer {
        let channel = request.channel ?? "push"
        guard channel == "push" || channel == "app" || channel == "fido2" else {
            throw Refusal(.badRequest, "unsupported_channel", "channel must be push, app or fido2.")
        }
        if channel == "fido2" {
            try Self.refuseUAFMembers(request)
        } else if request.fido2Options != nil {
            throw Refusal(.badRequest, "bad_request", "fido2Options belong to the fido2 channel.")
        }
        var user: AuthCloudUserRecord?
        if let userId = request.userId {
            guard let found = try await stores.authCloudUsers.user(id: userId) else { throw Self.userNotFound }
            user = found
        } else if let username = request.username {
            try Self.validate(username: username)
            // The demo reaches only the users it created, never one registered in band.
            user = principal.source == .demoSite ? try await stores.authCloudUsers.user(username: username) : try await apiUser(username: username)
        }
        if principal.source == .demoSite, request.userId != nil || request.username != nil {
            // The demo pushes approvals only to users it created; anyone else answers like an unknown user.
            guard let user, Self.mayReach(user, principal) else { throw Self.userNotFound }
        }
        if channel == "fido2" { return try await approvePasskey(request, user: user, principal: principal) }
        if let username = user?.username ?? request.username {
            guard user != nil else { throw Self.userNotFound }
            let registered = !(try await stores.registrations.registrations(username: username)).isEmpty
            guard registered else { throw Refusal(.notFound, "no_authenticator", "The user has no registered authenticator.") }
        }
        if request.prompt == true && request.message == nil {
            throw Refusal(.badRequest, "bad_request", "message is required when prompt is true.")
        }
        var transactions: [Transaction] = []
        var messageHash: String?
        if let message = request.message {
            do { try LimitedHTML.validate(message, limit: Transaction.maximumTextLength) } catch {
                throw Refusal(.badRequest, "invalid_message", "message: \(error.description).")
            }
            // The message is confirmed verbatim (markup included): the signed transaction is exactly what was asked.
            transactions = [Transaction(contentType: "text/plain", content: Base64URL.encode(Array(message.utf8)))]
            messageHash = Self.transactionHash(of: message)
        }
        if let notification = request.notificationMessage, notification.utf8.count > 1024 || Text.hasControlCharacters(notification) {
            throw Refusal(.badRequest, "bad_request", "notificationMessage must be at most 1024 bytes without control characters.")
        }
        let context = AuthenticationContext(username: user?.username, transaction: transactions.isEmpty ? nil : transactions)
        let get = GetUAFRequest(op: .authentication, context: user == nil && transactions.isEmpty ? nil : try JSONCoding.string(context))

        var tokenRequest = DispatchService.TokenRequest(getUafRequest: get)
        switch channel {
        case "push":
            guard let user else { throw Refusal(.badRequest, "bad_request", "push needs username or userId.") }
            guard request.authenticatorId != "*" else {
                throw Refusal(.badRequest, "bad_request", "authenticatorId * is only allowed with the app channel.")
            }
            let targets = try await stores.dispatchTargets.targets(username: user.username).filter { $0.target != nil && $0.encryptionKey != nil }
            let target = request.authenticatorId.map { id in targets.first { $0.id == id } } ?? targets.max { $0.createdAt < $1.createdAt }
            guard let target else {
                throw Refusal(
                    .notFound, "no_push_target",
                    "The user has no device that can receive push notifications\(request.authenticatorId == nil ? "" : " with this authenticatorId")."
                )
            }
            tokenRequest.dispatcher = DispatchTargetWire.Dispatcher.firebaseCloudMessaging.rawValue
            tokenRequest.dispatchTargetId = target.id
            let notification: [String: JSONValue] = [
                "title": .string("Approval requested"),
                "body": .string(request.notificationMessage ?? "Open the app to approve or deny."),
            ]
            tokenRequest.dispatchInformation = try JSONCoding.string(["notification": JSONValue.object(notification)])
        default:
            tokenRequest.dispatcher = DispatchTargetWire.Dispatcher.link.rawValue
        }
        let answer = try await dispatch.dispatch(tokenRequest, operation: .authentication, principal: principal, linkBase: appLinkBase)
        guard answer.dispatchResult == .dispatched || answer.dispatchResult == .dispatchError, let sessionID = answer.sessionId else {
            switch answer.dispatchResult {
            case .dispatcherNotFound:
                throw Refusal(.conflict, "push_unavailable", "Push notifications are not configured on this server.")
            case .userNotFound, .dispatchTargetNotFound, .dispatchTargetExpired:
                throw Refusal(.notFound, "no_push_target", "The user's device cannot be reached.")
            default:
                throw ServiceFailure(.internalServerError, "approval dispatch answered \(answer.dispatchResult.rawValue)")
            }
        }
        let statusToken = try await statusToken(transactionId: sessionID, user: user, op: "approval", channel: channel, transactionHash: messageHash)
        var result = ApprovalAnswer(
            transactionId: sessionID, statusToken: statusToken, userId: user?.userId, username: user?.username,
            channel: channel, dispatchResult: answer.dispatchResult.rawValue)
        if channel == "app", let link = answer.dispatcherInformation?.response {
            result.appLinkUri = link
            result.qrCode = try await qrCode(link)
        }
        environment.decide(
            "auth cloud approval", user?.username, 1200,
            "authentication dispatched by \(channel)\(transactions.isEmpty ? "" : " with a message to confirm"), transaction \(OrderedToken.label(sessionID))"
        )
        return result
    }

    /// The `txn_hash` of the status and result tokens: base64url SHA-256 of the approval message's UTF-8 bytes.
    package static func transactionHash(of message: String) -> String { Base64URL.encode(Array(SHA256.hash(data: Data(message.utf8)))) }

    /// `POST /api/v1/status/cancel`: cancels the enrollment or approval the status token names
    /// (``StatusService/withdraw(sessionId:)``) and answers its status afterwards: `cancelled`, or how it had ended.
    package func cancel(_ request: StatusRequest) async throws -> (answer: StatusAnswer, ending: Ending?) {
        let claims = try await statusClaims(request)
        if claims.channel == "fido2" {
            // Unanswered, the ceremony's challenge can no longer be answered; answered, it keeps how it ended.
            if try await stores.passkeyCeremonies.cancel(sessionID: claims.sub) {
                environment.decide(
                    "cancel", claims.username, 1200, "passkey ceremony \(OrderedToken.label(claims.sub)) cancelled by the relying party")
            }
        } else {
            try await statusService.withdraw(sessionId: claims.sub)
        }
        return try await outcome(claims)
    }

    /// `POST /api/v1/status`: what became of an enrollment or approval; its result token once it succeeded.
    package func status(_ request: StatusRequest) async throws -> StatusAnswer { try await outcome(request).answer }

    /// The claims of a status token this server issued and that has not expired.
    private func statusClaims(_ request: StatusRequest) async throws -> StatusClaims {
        guard let claims = await issuer.verify(request.statusToken, as: StatusClaims.self, now: environment.clock()) else {
            throw Refusal(.badRequest, "invalid_status_token", "The status token is not valid (altered, expired or not from this server).")
        }
        return claims
    }

    /// Why an operation did not succeed, for a page that explains it (the web demo); not part of the API's answer.
    package enum Ending: Sendable, Equatable {
        /// The user declined on the phone (the device reported "user cancelled").
        case declined
        /// The phone reported another failure (a locked authenticator, none that fits, …) or the server refused its answer.
        case failed
        /// Nobody redeemed the token, or answered the request, in time.
        case expired
        /// The relying party cancelled it.
        case cancelled
    }

    /// The status answer and, for an operation that ended without success, why.
    package func outcome(_ request: StatusRequest) async throws -> (answer: StatusAnswer, ending: Ending?) {
        try await outcome(try await statusClaims(request))
    }

    private func outcome(_ claims: StatusClaims) async throws -> (answer: StatusAnswer, ending: Ending?) {
        let now = environment.clock()
        let formatter = ISO8601DateFormatter()
        var answer = StatusAnswer(
            transactionId: claims.sub, status: "unknown", userId: claims.uid, username: claims.username,
            createdAt: formatter.string(from: Date(timeIntervalSince1970: TimeInterval(claims.iat))))
        if claims.channel == "fido2" { return try await passkeyOutcome(claims, answer: answer) }
        guard let record = try await stores.status.record(sessionId: claims.sub, now: now) else { return (answer, nil) }
        answer.lastUpdatedAt = formatter.string(from: record.updatedAt)
        let status = StatusService.effectiveStatus(record, now: now, requestLifetime: uaf.requestLifetime)
        var ending: Ending?
        switch status {
        case .succeeded:
            let first = record.authenticators.first
            try await succeed(&answer, claims, username: record.username, aaid: first?.aaid, keyID: first?.keyId, now: now)
        case .failed:
            answer.status = "failed"
            let timedOut = status != record.status || record.tokenInformation?.tokenResult == .tokenTimedOut
            ending = timedOut ? .expired : record.clientErrorCode == Int(UAFErrorCode.userCancelled.rawValue) ? .declined : .failed
        case .cancelled:
            answer.status = "cancelled"
            ending = .cancelled
        case .unknown:
            answer.status = "unknown"
        case .tokenCreated, .clientRegistering, .clientAuthenticating, .clientDeregistering:
            answer.status = "pending"
        }
        return (answer, ending)
    }

    /// `GET /api/v1/users/{userId}` and `GET /api/v1/users?username=`.
    package func user(id: String?, username: String?) async throws -> User {
        let found: AuthCloudUserRecord?
        if let id {
            found = try await stores.authCloudUsers.user(id: id)
        } else if let username {
            found = try await apiUser(username: username)
        } else {
            throw Refusal(.badRequest, "bad_request", "The query parameter username is required.")
        }
        guard let found else { throw Self.userNotFound }
        return try await describe(found)
    }

    /// `DELETE /api/v1/users/{userId}`: the user's registrations, sessions, devices and the user itself. The user row
    /// goes last, so a delete that fails half-way is completed by repeating it.
    package func delete(userId: String) async throws {
        guard let user = try await stores.authCloudUsers.user(id: userId) else { throw Self.userNotFound }
        let erased = try await UserData.erase(stores.everyUserStore, username: user.username, now: environment.clock())
        try await stores.authCloudUsers.delete(id: userId)
        environment.decide(
            "auth cloud delete user", user.username, 1200,
            "deleted with \(erased.registrations) registration(s); \(erased.dispatchTokens) unredeemed token(s) expired, \(erased.requests) outstanding request(s) removed"
        )
    }

    /// Marks `answer` succeeded and, once its user is known (`username`, the operation's, else the status token's),
    /// names her and adds the result token, whose `aaid` and `keyid` name the key (a passkey: its credential ID).
    func succeed(
        _ answer: inout StatusAnswer, _ claims: StatusClaims, username: String?, aaid: String?, keyID: String?, now: Date
    ) async throws {
        answer.status = "succeeded"
        // Usernameless approvals learn their user here; it is a user of the API from now on.
        guard let username = username ?? claims.username else { return }
        let user = try await stores.authCloudUsers.findOrCreate(username: username, now: now).record
        answer.userId = user.userId
        answer.username = username
        answer.token = try issuer.sign(
            ResultClaims(
                iss: issuer.issuer, aud: ResultClaims.audience, sub: user.userId, username: username, transaction_id: claims.sub, op: claims.op,
                channel: claims.channel, status: "succeeded", aaid: aaid, keyid: keyID, txn_hash: claims.txn_hash,
                iat: Int64(now.timeIntervalSince1970), exp: Int64(now.timeIntervalSince1970 + Self.resultTokenLifetime)))
    }

    // MARK: Helpers

    /// The user an enrollment names by `id`, reachable by `principal`; `named`, when given, must be her username.
    func enrolledUser(id: String, named: String?, principal: Principal) async throws -> AuthCloudUserRecord {
        guard let found = try await stores.authCloudUsers.user(id: id), Self.mayReach(found, principal) else { throw Self.userNotFound }
        if let named, named != found.username {
            throw Refusal(.badRequest, "bad_request", "username and userId name different users.")
        }
        return found
    }

    static let userNotFound = Refusal(.notFound, "user_not_found", "No such user.")

    /// The API's user named `username`: its record; for a user registered in band (without enroll), one created now,
    /// so that it has a userId like any other; nil for a name without either.
    private func apiUser(username: String) async throws -> AuthCloudUserRecord? {
        if let found = try await stores.authCloudUsers.user(username: username) { return found }
        let keys = try await stores.registrations.registrations(username: username)
        if keys.isEmpty {
            guard try await !stores.passkeys.passkeys(username: username).isEmpty else { return nil }
        }
        return try await stores.authCloudUsers.findOrCreate(username: username, now: environment.clock()).record
    }

    /// Whether `principal` may act for `user`: an access key for every user, the web demo for the users it created.
    /// The user the web demo enrols a key or a passkey for: one it created, or a new one it creates now. The demo enrols
    /// new usernames only: anyone who opens it would otherwise add a key to a real user (one with UAF keys or passkeys
    /// and no Auth Cloud user of the demo's).
    package func demoUser(username: String) async throws -> AuthCloudUserRecord {
        try Self.validate(username: username)
        let existing = try await stores.authCloudUsers.user(username: username)
        let keys = try await stores.registrations.registrations(username: username)
        let passkeys = try await stores.passkeys.passkeys(username: username)
        // A sign-up is only for a username nobody holds: anyone can open the page, so a sign-up for a user who has a
        // phone or a passkey would let a stranger add one to her account and sign in as her. Her own new factors
        // are added after she signed in (the demo's step-up).
        guard keys.isEmpty, passkeys.isEmpty, existing.map({ $0.createdBy == AuthCloudUserRecord.demoSite }) ?? true else {
            throw Refusal(.conflict, "username_taken", Self.usernameTaken)
        }
        return try await stores.authCloudUsers.findOrCreate(username: username, now: environment.clock(), createdBy: AuthCloudUserRecord.demoSite)
            .record
    }

    /// What the demo's page after a passkey sign-in says: whether the user holds a phone's key (a payment can then be
    /// confirmed on it) and whether she is new: she holds no phone (a phone's owner signed in with it before) and every
    /// passkey she holds was made in the last `recent` seconds (a sign-up and its first sign-in), so she is welcomed,
    /// not welcomed back.
    package func demoWelcome(username: String, recent: TimeInterval) async throws -> (hasPhone: Bool, isNew: Bool) {
        let keys = try await stores.registrations.registrations(username: username)
        let passkeys = try await stores.passkeys.passkeys(username: username)
        let since = environment.clock().addingTimeInterval(-recent)
        let isNew = keys.isEmpty && passkeys.allSatisfy { $0.createdAt >= since }
        return (!keys.isEmpty, isNew)
    }

    /// What the demo's sign-up says of a username someone holds.
    package static let usernameTaken = "This username is taken. If it is yours, log in first: then you can add a passkey to your account."

    /// A user the demo created, for adding a factor after she signed in: the caller has verified her recent sign-in.
    package func demoUserSignedIn(username: String) async throws -> AuthCloudUserRecord {
        guard let user = try await stores.authCloudUsers.user(username: username), user.createdBy == AuthCloudUserRecord.demoSite else {
            throw Self.userNotFound
        }
        return user
    }

    static func mayReach(_ user: AuthCloudUserRecord, _ principal: Principal) -> Bool {
        principal.source != .demoSite || user.createdBy == AuthCloudUserRecord.demoSite
    }

    static func validate(username: String) throws {
        guard !username.isEmpty, username.utf8.count <= ServiceEnvironment.maximumUsernameBytes,
            username.allSatisfy({ usernameCharacters.contains($0) })
        else {
            throw Refusal(
                .badRequest, "invalid_username",
                "username must be 1...\(ServiceEnvironment.maximumUsernameBytes) of the characters a-z A-Z 0-9 _ - . @")
        }
    }

    /// The path of `appLinkUri` (`<server>/open?dispatchTokenResponse=…`), as in the seed's enroll response.
    package static let appLinkPath = "/open"

    /// Where `appLinkUri` points: `<server>/open`, the page an app link lands on when the app is not installed.
    private var appLinkBase: String { environment.identity.baseURL + Self.appLinkPath }

    func statusToken(
        transactionId: String, user: AuthCloudUserRecord?, op: String, channel: String, transactionHash: String?
    ) async throws -> String {
        let now = environment.clock().timeIntervalSince1970
        // Valid as long as the status record can exist: the token's (or the passkey ceremony's) lifetime plus the
        // status retention.
        let operation = channel == "fido2" ? passkeys?.settings.timeout ?? 0 : TimeInterval(configuration.tokenLifetimeSeconds)
        let lifetime = operation + uaf.statusRetention
        return try issuer.sign(
            StatusClaims(
                iss: issuer.issuer, aud: StatusClaims.audience, sub: transactionId, uid: user?.userId,
                username: user?.username, op: op, channel: channel, txn_hash: transactionHash, iat: Int64(now), exp: Int64(now + lifetime)))
    }

    private func qrCode(_ link: String) async throws -> QRCodeImage {
        let image = try await dispatch.qr.render(link)
        return QRCodeImage(type: "image/png", size: image.side, dataUri: image.dataURI)
    }

    func describe(_ user: AuthCloudUserRecord) async throws -> User {
        let formatter = ISO8601DateFormatter()
        let registrations = try await stores.registrations.registrations(username: user.username)
        let targets = try await stores.dispatchTargets.targets(username: user.username)
        var authenticators: [Authenticator] = targets.map { target in
            let keys = registrations.filter { $0.deviceId != nil && $0.deviceId == target.deviceId }
            return Authenticator(
                authenticatorId: target.id, name: target.name, authenticatorType: "app", state: "active",
                pushEnabled: target.target != nil && target.encryptionKey != nil,
                enrolledAt: formatter.string(from: target.createdAt), updatedAt: formatter.string(from: target.updatedAt),
                uaf: keys.map { .init(aaid: $0.aaid, keyId: $0.keyID, enrolledAt: formatter.string(from: $0.createdAt)) }, fido2: nil)
        }
        // Keys of a device without a dispatch target (registered in band without device information) stand alone.
        let listed = Set(authenticators.flatMap { ($0.uaf ?? []).map(\.keyId) })
        for registration in registrations where !listed.contains(registration.keyID) {
            let created = formatter.string(from: registration.createdAt)
            authenticators.append(
                Authenticator(
                    authenticatorId: "\(registration.aaid):\(registration.keyID)", name: nil, authenticatorType: "app",
                    state: "active", pushEnabled: false, enrolledAt: created, updatedAt: created,
                    uaf: [.init(aaid: registration.aaid, keyId: registration.keyID, enrolledAt: created)], fido2: nil))
        }
        // Her passkeys, each an authenticator of its own: its id is the credential ID, the one an approval names.
        let passkeyRecords = try await stores.passkeys.passkeys(username: user.username)
        for passkey in passkeyRecords {
            let description = PasskeyService.describe(
                passkey, providers: passkeys?.settings.providers ?? .bundled, metadata: passkeys?.metadataSource.store, times: formatter)
            authenticators.append(
                Authenticator(
                    authenticatorId: passkey.credentialID, name: passkey.name ?? description.providerName, authenticatorType: "fido2",
                    type: passkey.backupEligible ? "synced" : "device-bound", state: "active", pushEnabled: false,
                    enrolledAt: description.createdAt, updatedAt: description.lastUsedAt ?? description.createdAt,
                    lastUsedAt: description.lastUsedAt, uaf: nil, fido2: description))
        }
        let lastLogin = try await stores.sessions.lastCreated(username: user.username)
        return User(
            userId: user.userId, username: user.username, status: registrations.isEmpty && passkeyRecords.isEmpty ? "new" : "active",
            createdAt: formatter.string(from: user.createdAt), updatedAt: formatter.string(from: user.updatedAt),
            lastLoginDateSuccess: lastLogin.map(formatter.string(from:)), authenticators: authenticators, enrollment: nil)
    }
}
