import Foundation
import UAF

/// A thread-safe copy of the local state for the synchronous ``LocalData`` accessors.
final class StateMirror: @unchecked Sendable {
    private let lock = NSLock()
    private var value: LocalStateData
    init(_ value: LocalStateData) { self.value = value }
    var snapshot: LocalStateData { lock.withLock { value } }
    func publish(_ new: LocalStateData) { lock.withLock { value = new } }
}

/// Everything an operation needs, shared by the client's builders.
final class ClientCore: Sendable {
    let configuration: Configuration
    let platform: any Platform
    let transport: Transport
    let state: LocalState
    let mirror: StateMirror
    let keyStore: any KeyStore
    let pins: PinVerifierStore

    init(configuration: Configuration, platform: any Platform, transport: Transport, state: LocalState, snapshot: LocalStateData) {
        self.configuration = configuration; self.platform = platform; self.transport = transport; self.state = state
        self.mirror = StateMirror(snapshot)
        self.keyStore = SoftwareKeyStore(state: state)
        self.pins = PinVerifierStore(state: state)
    }

    var facetID: String { configuration.facetId ?? platform.applicationFacetId }
    var userInteractionTimeout: TimeInterval { TimeInterval(configuration.userInteractionTimeoutInSeconds) }

    /// The SDK's authenticators on this platform (this slice: the PIN authenticator).
    var descriptors: [AuthenticatorDescriptor] { [.pin] }

    func descriptor(_ aaid: String) -> AuthenticatorDescriptor? {
        descriptors.first { AAID.normalized($0.aaid) == AAID.normalized(aaid) }
    }

    /// Commits a state change and publishes it to the synchronous mirror.
    func updateState<T: Sendable>(_ body: @Sendable (inout LocalStateData) throws -> T) async throws -> T {
        let result = try await state.update(body)
        mirror.publish(await state.snapshot)
        return result
    }

    /// The authenticators as the app sees them.
    func authenticators(in data: LocalStateData) -> [any Authenticator] {
        descriptors.map { descriptor in
            let accounts = data.registrations.filter { AAID.normalized($0.aaid) == AAID.normalized(descriptor.aaid) }
                .map { AccountRecord(username: $0.username, server: $0.server) }
            let unique = accounts.reduce(into: [AccountRecord]()) { if !$0.contains($1) { $0.append($1) } }
            return AuthenticatorValue(aaid: descriptor.aaid, registeredAccounts: unique,
                                      enrollment: SdkUserEnrollment(accounts: unique), isSupportedByHardware: true)
        }
    }

    // MARK: Shared steps

    func checkIntegrity() throws(OperationError) {
        do { try platform.checkIntegrity() } catch {
            switch error {
            case .deviceProtection(let reason): throw OperationError.DeviceProtectionError(cause: SDKMessage(reason))
            case .noDeviceLock: throw OperationError.NoDeviceLockError(cause: nil)
            }
        }
    }

    /// Asks the app through `ask` and waits for its answer, the user-interaction timeout, or `cancel()`.
    func interact<T: Sendable>(_ ask: (InteractionGate<T>) -> Void) async throws(OperationError) -> T {
        let gate = InteractionGate<T>()
        switch await gate.wait(timeout: userInteractionTimeout, ask: { ask(gate) }) {
        case .answered(let value): return value
        case .cancelled: throw OperationError.FidoError(errorCode: .userCanceled, cause: nil)
        case .timedOut: throw OperationError.FidoError(errorCode: .userNotResponsive, cause: nil)
        }
    }

    func map(_ failure: TransportFailure) -> OperationError {
        switch failure {
        case .insecure(let reason): return .FidoError(errorCode: .insecureTransport, cause: SDKMessage(reason))
        case .network(let error): return .NetworkError(cause: error)
        }
    }

    /// POSTs a GetUAFRequest and returns the UAF message string of a 1200 answer.
    func fetchUAFRequest(path: String, op: UAFOperation, context: String, headers: [(String, String)]) async throws(OperationError) -> String {
        let body: Data
        do { body = try JSONEncoder().encode(GetUAFRequest(op: op, context: context)) } catch { throw .Unknown(cause: error) }
        let exchange: HTTPExchange
        do { exchange = try await transport.send(.POST, configuration.url(path), body: body, headers: headers) } catch { throw map(error) }
        guard let answer = try? JSONDecoder().decode(ReturnUAFRequest.self, from: exchange.body) else {
            throw Self.serverFailure(exchange, statusCode: 0)
        }
        guard exchange.status == 200, answer.statusCode == UAFStatusCode.ok.rawValue, let request = answer.uafRequest else {
            throw Self.serverFailure(exchange, statusCode: answer.statusCode)
        }
        return request
    }

    /// POSTs a SendUAFResponse and returns the 1200 ServerResponse.
    func sendUAFResponse<T: Encodable>(path: String, response: T, headers: [(String, String)]) async throws(OperationError) -> ServerResponse {
        let body: Data
        do { body = try JSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]))) } catch { throw .Unknown(cause: error) }
        let exchange: HTTPExchange
        do { exchange = try await transport.send(.POST, configuration.url(path), body: body, headers: headers) } catch { throw map(error) }
        guard let answer = try? JSONDecoder().decode(ServerResponse.self, from: exchange.body) else {
            throw Self.serverFailure(exchange, statusCode: 0)
        }
        guard exchange.status == 200, answer.statusCode == UAFStatusCode.ok.rawValue else {
            throw Self.serverFailure(exchange, statusCode: answer.statusCode, message: answer.description)
        }
        return answer
    }

    static func serverFailure(_ exchange: HTTPExchange, statusCode: Int, message: String? = nil) -> OperationError {
        if exchange.status == 401 || exchange.status == 403 {
            // The server refused the credentials (or their absence): say so, whatever the body holds.
            let reason = exchange.status == 401
                ? "the server requires valid authorization: pass an authorizationProvider (a JWT or the session of a prior authentication)"
                : "the authorization given may not act for this user"
            return .NetworkError(cause: ServerStatusError(statusCode: statusCode, httpStatus: exchange.status, message: reason))
        }
        let cause = ServerStatusError(statusCode: statusCode, httpStatus: exchange.status,
                                      message: message ?? UAFStatusCode(rawValue: statusCode)?.reasonPhrase)
        return .FidoError(errorCode: .protocolError, cause: cause)
    }

    /// FacetID / AppID check (uaf-spec §4, client algorithm): an empty appID becomes our FacetID; an https appID
    /// is fetched as a TrustedFacets list and our FacetID must be listed for UAF 1.1.
    func checkAppID(_ appID: String?) async throws(OperationError) -> String {
        guard let appID, !appID.isEmpty else { return facetID }
        guard appID == facetID || appID.lowercased().hasPrefix("https://"), let url = URL(string: appID) else {
            throw .FidoError(errorCode: .untrustedFacetID, cause: SDKMessage("appID \(appID) is not an https URL"))
        }
        if appID == facetID { return appID }
        let exchange: HTTPExchange
        do { exchange = try await transport.send(.GET, url, body: nil, headers: [], accept: "application/fido.trusted-apps+json") } catch { throw map(error) }
        guard exchange.status == 200, let list = try? JSONDecoder().decode(TrustedFacets.self, from: exchange.body) else {
            throw .FidoError(errorCode: .untrustedFacetID, cause: SDKMessage("the trusted facet list at \(appID) cannot be read"))
        }
        let ids = list.trustedFacets.filter { $0.version == .uaf11 }.flatMap(\.ids)
        guard ids.contains(facetID) else {
            throw .FidoError(errorCode: .untrustedFacetID, cause: SDKMessage("\(facetID) is not a trusted facet of \(appID)"))
        }
        return appID
    }

    func finalChallenge(appID: String, challenge: String) throws(OperationError) -> String {
        do { return try FinalChallengeParams(appID: appID, challenge: challenge, facetID: facetID).encodedFCParams() } catch {
            throw .Unknown(cause: error)
        }
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}

/// A plain message used as an error cause.
public struct SDKMessage: Error, Sendable, CustomStringConvertible, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
