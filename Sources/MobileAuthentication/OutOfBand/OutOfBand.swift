import Foundation
import NevisProtocol
import UAF
import WireJSON

/// What redeems an out-of-band operation.
public struct RedeemData: Codable, Hashable, Sendable {
    public let token: String
    public let redeemUrl: URL
}

/// A decoded (and, when it was encrypted, decrypted) out-of-band payload: from a QR code, a link or a push message.
/// The wire format is `NevisProtocol.DispatchPayload`.
public struct OutOfBandPayload: Codable, Hashable, Sendable {
    /// `application/json` (sent in clear) or `application/jose` (it was encrypted to this device).
    public let contentType: String
    public let version: String
    public let redeemData: RedeemData
    /// The relying party's data for the app, if any.
    public let data: String?
}

/// Decodes an out-of-band payload: its JSON, or base64url of it (what QR codes and links carry; a whole link with
/// `dispatchTokenResponse` is accepted too). An encrypted payload is decrypted with the device's key.
public final class OutOfBandPayloadDecode: Operation {
    struct Fields: Sendable {
        var input: Input?
        var onSuccess: (@Sendable (OutOfBandPayload) -> Void)?
        var onError: (@Sendable (OutOfBandPayloadError) -> Void)?
    }
    enum Input: Sendable { case json(String), base64URL(String) }

    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func json(_ json: String) -> Self {
        state.update { $0.input = .json(json) }
        return self
    }
    @discardableResult public func base64UrlEncoded(_ text: String) -> Self {
        state.update { $0.input = .base64URL(text) }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable (OutOfBandPayload) -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OutOfBandPayloadError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OutOfBandPayloadError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    public func executeAsync() async throws(OutOfBandPayloadError) -> OutOfBandPayload {
        try core.checkIntegrity(
            deviceProtection: { OutOfBandPayloadError.DeviceProtectionError(cause: $0) },
            noDeviceLock: OutOfBandPayloadError.NoDeviceLockError(cause: nil))
        guard let input = state.value.input else { throw .MalformedPayload(cause: SDKMessage("give json(_:) or base64UrlEncoded(_:)")) }
        let envelope: DispatchPayload.Envelope
        do {
            switch input {
            case .json(let json): envelope = try DispatchPayload.parse(json: json)
            case .base64URL(let text): envelope = try DispatchPayload.parse(base64URL: text)
            }
        } catch { throw .MalformedPayload(cause: error) }
        return try await core.open(envelope)
    }
}

extension ClientCore {
    /// The payload an envelope carries, decrypted with the device's key when it was encrypted.
    func open(_ envelope: DispatchPayload.Envelope) async throws(OutOfBandPayloadError) -> OutOfBandPayload {
        do {
            // The key is read only for an encrypted payload; a storage failure is reported as such, not as "not for
            // this device".
            var keys: DeviceKeys?
            if case .encrypted = envelope {
                do { keys = try await deviceKeys() } catch { throw OutOfBandPayloadError.Unknown(cause: error) }
            }
            let content = try envelope.open { try keys?.encryptionKey() }
            guard let url = URL(string: content.redeemURL) else { throw DispatchPayloadError.malformed("redeem_url") }
            return OutOfBandPayload(
                contentType: envelope.contentType, version: envelope.version,
                redeemData: RedeemData(token: content.token, redeemUrl: url), data: content.data)
        } catch let error as OutOfBandPayloadError {
            throw error
        } catch let error as DispatchPayloadError {
            switch error {
            case .malformed: throw .MalformedPayload(cause: error)
            case .noDecryptionKey, .decryption: throw .DecryptionError(cause: error)
            }
        } catch {
            throw .Unknown(cause: error)
        }
    }
}

/// Redeems an out-of-band payload's token and hands over the operation it stands for.
public final class OutOfBandOperation: HttpOperation {
    struct Fields: Sendable {
        var payload: OutOfBandPayload?
        var headers: [String] = []
        var onRegistration: (@Sendable (OutOfBandRegistration) -> Void)?
        var onAuthentication: (@Sendable (OutOfBandAuthentication) -> Void)?
        var onDeregistration: (@Sendable ([Username]) -> Void)?
        var onError: (@Sendable (OutOfBandOperationError) -> Void)?
    }

    /// What the redeemed token stands for.
    public enum Redeemed: Sendable {
        case registration(OutOfBandRegistration)
        case authentication(OutOfBandAuthentication)
        /// The server removed registrations of this device and the SDK has removed them here too (nothing for the
        /// user to confirm: the relying party already decided): the users whose authenticators went.
        case deregistration(usernames: [Username])
    }

    private let core: ClientCore
    private let state = BuilderState(Fields())
    init(core: ClientCore) { self.core = core }

    @discardableResult public func payload(_ payload: OutOfBandPayload) -> Self {
        state.update { $0.payload = payload }
        return self
    }
    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onRegistration(_ callback: @escaping @Sendable (OutOfBandRegistration) -> Void) -> Self {
        state.update { $0.onRegistration = callback }
        return self
    }
    @discardableResult public func onAuthentication(_ callback: @escaping @Sendable (OutOfBandAuthentication) -> Void) -> Self {
        state.update { $0.onAuthentication = callback }
        return self
    }
    /// Called after an out-of-band deregistration was applied on the device.
    @discardableResult public func onDeregistration(_ callback: @escaping @Sendable ([Username]) -> Void) -> Self {
        state.update { $0.onDeregistration = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OutOfBandOperationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OutOfBandOperationError) in try await self.executeAsync() },
            onSuccess: { redeemed in
                switch redeemed {
                case .registration(let registration): fields.onRegistration?(registration)
                case .authentication(let authentication): fields.onAuthentication?(authentication)
                case .deregistration(let usernames): fields.onDeregistration?(usernames)
                }
            }, onError: fields.onError)
    }

    /// Redeems the token (once: the server refuses a second use) and returns the operation to continue with.
    public func executeAsync() async throws(OutOfBandOperationError) -> Redeemed {
        let fields = state.value
        try core.checkIntegrity(
            deviceProtection: { OutOfBandOperationError.DeviceProtectionError(cause: $0) },
            noDeviceLock: OutOfBandOperationError.NoDeviceLockError(cause: nil))
        guard let payload = fields.payload else { throw .Unknown(cause: SDKMessage("payload(_:) is required")) }
        let url = payload.redeemData.redeemUrl
        // The server is the redeem URL's origin: the UAF exchange that follows goes there.
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { throw .Unknown(cause: SDKMessage("redeem URL")) }
        components.path = ""
        components.query = nil
        components.fragment = nil
        guard let origin = components.url else { throw .Unknown(cause: SDKMessage("redeem URL")) }
        let server = Server(baseUrl: core.configuration.base(forOrigin: origin))
        let runner = OperationRunner(core: core, objects: InteractionObjects(), headers: fields.headers.headerPairs, retryPolicy: .noRetry)
        let body: Data
        do { body = try JSONEncoder().encode(["token": payload.redeemData.token]) } catch { throw .Unknown(cause: error) }
        let exchange: HTTPExchange
        let request = HTTPRequest(method: .POST, url: url, body: body, headers: runner.headers, contentType: "application/json")
        // A redeem is never retried: the token is single-use, and a retry after a lost answer would only be refused.
        do { exchange = try await core.transport.send(request) } catch {
            switch runner.map(error, request: request, server: server) {
            case .NetworkError(let cause): throw .NetworkError(cause: cause)
            case let other: throw .Unknown(cause: other)
            }
        }
        let http = HttpError(request: request, server: server, exchange: exchange, underlying: nil)
        // Too many redeems from this address: the token is still good; say when to try again.
        if exchange.status == 429 { throw .NetworkError(cause: RateLimitError(exchange, now: core.platform.now(), httpError: http)) }
        guard let answer = try? WireJSONDecoder().decode(ReturnUAFRequest.self, from: exchange.body) else {
            throw .NetworkError(
                cause: ServerStatusError(
                    statusCode: 0, httpStatus: exchange.status, message: "the redeem answer is not a ReturnUAFRequest",
                    httpError: http))
        }
        let cause = ServerStatusError(
            statusCode: answer.statusCode, httpStatus: exchange.status, message: UAFStatusCode(rawValue: answer.statusCode)?.reasonPhrase,
            httpError: http)
        switch answer.statusCode {
        case UAFStatusCode.ok.rawValue: break
        // Our server's contract (DispatchService.redeem): 1401 unknown or used, 1408 expired.
        case UAFStatusCode.unauthorized.rawValue: throw .TokenAlreadyRedeemed(cause: cause)
        case UAFStatusCode.requestTimeout.rawValue: throw .TokenExpired(cause: cause)
        default: throw .Unknown(cause: cause)
        }
        guard exchange.status == 200, let message = answer.uafRequest else { throw .Unknown(cause: cause) }
        switch answer.op {
        case .registration?: return .registration(OutOfBandRegistration(core: core, message: message, server: server, headers: fields.headers))
        case .authentication?: return .authentication(OutOfBandAuthentication(core: core, message: message, server: server, headers: fields.headers))
        case .deregistration?:
            do {
                let removed = try await LocalRemoval(core: core).apply(deregistration: message, username: nil, server: server)
                var usernames: [Username] = []
                for registration in removed where !usernames.contains(registration.username) { usernames.append(registration.username) }
                return .deregistration(usernames: usernames)
            } catch { throw .Unknown(cause: error) }
        default:
            throw .Unknown(
                cause: SDKMessage("the token stands for an operation this SDK does not run out of band (\(answer.op?.rawValue ?? "none"))"))
        }
    }
}

/// The registration an out-of-band token stands for (the server named the user when it dispatched it).
public final class OutOfBandRegistration: RegistrationCeremonyBuilder, HttpOperation, @unchecked Sendable {
    // @unchecked Sendable: restated from the builder base class; every stored property is a `let` of a Sendable type.
    struct Fields: Sendable {
        var headers: [String]
        var onSuccess: (@Sendable () -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    let message: String
    let server: Server
    private let state: BuilderState<Fields>

    init(core: ClientCore, message: String, server: Server, headers: [String]) {
        self.core = core
        self.message = message
        self.server = server
        state = BuilderState(Fields(headers: headers))
        super.init()
    }

    /// The user the server asks to register, as the request names it.
    public var username: Username? { try? UAFMessageCodec.decode(RegistrationRequest.self, from: message).first?.username }

    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable () -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OperationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OperationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    public func executeAsync() async throws(OperationError) {
        let fields = state.value
        try await register(.redeemed(message: message), core: core, headers: fields.headers.headerPairs, server: server)
    }
}

/// The authentication (or transaction confirmation) an out-of-band token stands for.
public final class OutOfBandAuthentication: AuthenticationCeremonyBuilder, HttpOperation, @unchecked Sendable {
    // @unchecked Sendable: restated from the builder base class; every stored property is a `let` of a Sendable type.
    struct Fields: Sendable {
        var headers: [String]
        var onSuccess: (@Sendable ((any AuthorizationProvider)?) -> Void)?
        var onError: (@Sendable (OperationError) -> Void)?
    }

    private let core: ClientCore
    private let message: String
    private let server: Server
    private let state: BuilderState<Fields>

    init(core: ClientCore, message: String, server: Server, headers: [String]) {
        self.core = core
        self.message = message
        self.server = server
        state = BuilderState(Fields(headers: headers))
        super.init()
    }

    @discardableResult public func requestHeaders(_ headers: RequestHeaders) -> Self {
        state.update { $0.headers = headers }
        return self
    }
    @discardableResult public func onSuccess(_ callback: @escaping @Sendable ((any AuthorizationProvider)?) -> Void) -> Self {
        state.update { $0.onSuccess = callback }
        return self
    }
    @discardableResult public func onError(_ callback: @escaping @Sendable (OperationError) -> Void) -> Self {
        state.update { $0.onError = callback }
        return self
    }

    public func execute() {
        let fields = state.value
        deliver(
            on: core.callbacks, { () async throws(OperationError) in try await self.executeAsync() }, onSuccess: fields.onSuccess,
            onError: fields.onError)
    }

    /// Runs the authentication; a transaction in the request is shown through the selectors before it is signed.
    public func executeAsync() async throws(OperationError) -> (any AuthorizationProvider)? {
        let fields = state.value
        return try await OperationRunner(core: core, objects: interaction.value, headers: fields.headers.headerPairs)
            .authenticate(username: nil, redeemed: (message, server))
    }
}
