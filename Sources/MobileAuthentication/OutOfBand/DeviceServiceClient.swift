import Crypto
import Foundation
import JOSE
import NevisProtocol
import UAF
import WireJSON

/// Why a Device Service exchange with one server failed (the cause inside each device operation's error).
public struct DeviceServiceFailure: Error, Sendable, CustomStringConvertible, FidoCodedCause, HttpErrorCarrying {
    public enum Kind: Sendable, Equatable {
        /// The server could not be reached.
        case network
        /// The server's TLS is not trusted (or not acceptable): the device refused to talk to it.
        case insecure
        /// The server refused the device signature (401), and its clock is within the skew: the device's dispatch
        /// targets are unknown there, or the signature is wrong.
        case refused
        /// The server refused the signature and its `Date` differs from the device clock by more than the skew.
        case clockSkew
        /// 404 or 405 on the Device Service path: the server has no Device Service.
        case notSupported
        /// 422: a name another dispatch target of the user has.
        case nameTaken
        /// 429: too many requests; send again after the error's `retryAfterSeconds`.
        case rateLimited(RateLimitError)
        /// The device has no dispatch target on that server to sign with.
        case noDispatchTarget
        /// Anything else: an unexpected answer or a local failure.
        case other
    }
    public let kind: Kind
    public let server: Server
    public let httpStatus: Int
    public let message: String
    /// The request and its answer, when one was sent.
    public let httpError: HttpError?
    package var carriedHttpError: HttpError? { httpError }
    public var description: String { "\(server.baseUrl.absoluteString): \(message)\(httpStatus == 0 ? "" : " (HTTP \(httpStatus))")" }
    /// `insecureTransport` for an untrusted server, as the UAF operations report it.
    public var fidoErrorCode: FidoErrorCode? { kind == .insecure ? .insecureTransport : nil }
}

/// The device's side of the Device Service and device-signed dispatch-target calls (``DeviceServiceWire``,
/// ``DeviceSignature``): every request is signed with the device's signing key, naming one of its dispatch targets
/// on that server. Idempotent reads are retried with the operation's policy; a signed request is never resent as is
/// (its request id is single-use), a retry signs anew.
struct DeviceServiceClient: Sendable {
    let core: ClientCore
    let headers: [(String, String)]
    let retryPolicy: RetryPolicy

    /// The servers the device has dispatch targets on, each with its targets, in a stable order.
    func servers(in data: LocalStateData) -> [(server: Server, targets: [LocalDispatchTarget])] {
        var order: [Server] = []
        for target in data.dispatchTargets where !order.contains(target.server) { order.append(target.server) }
        return order.map { server in (server, data.dispatchTargets.filter { $0.server == server }) }
    }

    /// One signed request to `server`, signed naming each of `signers` (dispatch target ids) in turn until one is
    /// accepted (a target deleted on the server refuses; another of the device's may still sign). `payload` builds
    /// the signed payload from fresh claims; the JWS goes in the `Device-Signature` header, `body` (JSON) in the body.
    func send(
        _ method: HTTPRequest.Method, _ url: URL, server: Server, signers: [String], body: Data? = nil,
        payload: (DeviceSignature.Claims) -> any Encodable
    ) async -> Result<HTTPExchange, DeviceServiceFailure> {
        guard !signers.isEmpty else { return .failure(failure(.noDispatchTarget, server, 0, "the device has no dispatch target on this server")) }
        let key: P256.Signing.PrivateKey
        do {
            guard let keys = try await core.deviceKeys() else {
                return .failure(failure(.noDispatchTarget, server, 0, "the device has no device keys"))
            }
            key = try keys.signingKey()
        } catch { return .failure(failure(.other, server, 0, "the device keys cannot be read: \(error)")) }
        var last = failure(.noDispatchTarget, server, 0, "no dispatch target was accepted")
        let request = HTTPRequest(method: method, url: url, body: body, headers: headers, accept: "application/json", contentType: "application/json")
        for signer in signers {
            let exchange: HTTPExchange
            do {
                exchange = try await retryPolicy.send(core.transport) {
                    var signed = request
                    let claims = request.deviceSignatureClaims(dispatchTargetId: signer, now: core.platform.now())
                    signed.headers.append((DeviceSignature.headerName, try DeviceSignature.sign(payload(claims), dispatchTargetId: signer, key: key)))
                    return signed
                }
            } catch TransportFailure.insecure(let reason) {
                return .failure(failure(.insecure, server, 0, reason, HttpError(request: request, server: server, exchange: nil, underlying: nil)))
            } catch TransportFailure.network(let error) {
                return .failure(
                    failure(
                        .network, server, 0, "network failure: \(error)",
                        HttpError(request: request, server: server, exchange: nil, underlying: error)))
            } catch {
                return .failure(failure(.other, server, 0, "signing failed or cancelled: \(error)"))
            }
            let http = HttpError(request: request, server: server, exchange: exchange, underlying: nil)
            switch exchange.status {
            case 200..<300: return .success(exchange)
            case 401:
                last =
                    clockFailure(exchange, server: server, http: http)
                    ?? failure(.refused, server, 401, "the server refused the device signature", http)
                if last.kind == .clockSkew { return .failure(last) }
            case 404, 405:
                // The Device Service sits under the server's base path (the Auth Cloud preset's `/_app`), not at the
                // host's root: a 404 there means the server has none.
                let devices = core.configuration.url(core.configuration.deviceResourcePath, base: server.baseUrl).path
                guard url.path.hasPrefix(devices) else {
                    return .failure(failure(.other, server, exchange.status, "not found: \(url.path)", http))
                }
                return .failure(failure(.notSupported, server, exchange.status, "the server has no Device Service at \(url.path)", http))
            case 422: return .failure(failure(.nameTaken, server, 422, "another dispatch target of the user has this name", http))
            case 429:
                let limited = RateLimitError(exchange, now: core.platform.now(), httpError: http)
                return .failure(
                    failure(
                        .rateLimited(limited), server, 429,
                        "too many requests" + (limited.retryAfterSeconds.map { "; try again in \($0) s" } ?? "; try again later"), http))
            default: return .failure(failure(.other, server, exchange.status, http.body.map { String($0.prefix(200)) } ?? "", http))
            }
        }
        return .failure(last)
    }

    /// A clock problem, if the refusal's `Date` header shows the clocks apart by more than the skew.
    func clockFailure(_ exchange: HTTPExchange, server: Server, http: HttpError?) -> DeviceServiceFailure? {
        guard let offset = ServerClock.excessOffset(of: exchange, now: core.platform.now()) else { return nil }
        return failure(.clockSkew, server, 401, "the device clock is \(Int(offset)) s off the server's", http)
    }

    func failure(
        _ kind: DeviceServiceFailure.Kind, _ server: Server, _ status: Int, _ message: String, _ http: HttpError? = nil
    ) -> DeviceServiceFailure {
        DeviceServiceFailure(kind: kind, server: server, httpStatus: status, message: message, httpError: http)
    }

    func url(server: Server, _ component: String, deviceId: String) -> URL {
        core.configuration.url(core.configuration.deviceResourcePath, segments: [component, deviceId], base: server.baseUrl)
    }

    /// A signed GET of the Device Service whose answer is `T`.
    func get<T: Decodable>(
        _ type: T.Type, _ component: String, server: Server, signers: [String], deviceId: String
    ) async -> Result<T, DeviceServiceFailure> {
        switch await send(.GET, url(server: server, component, deviceId: deviceId), server: server, signers: signers, payload: { $0 }) {
        case .failure(let failure): return .failure(failure)
        case .success(let exchange):
            guard let answer = try? WireJSONDecoder().decode(T.self, from: exchange.body) else {
                return .failure(failure(.other, server, exchange.status, "the \(component) answer cannot be read"))
            }
            return .success(answer)
        }
    }

    /// A signed PATCH of the device's name and push token on one server (``DeviceInformationChange`` and
    /// ``DeviceInformationSync``).
    func modify(
        server: Server, signers: [String], deviceId: String, name: String?, fcmRegistrationToken: String?,
        disablePushNotifications: Bool
    ) async -> DeviceServiceFailure? {
        let url = url(server: server, DeviceServiceWire.credentialsComponent, deviceId: deviceId)
        let result = await send(.PATCH, url, server: server, signers: signers) { claims in
            DeviceServiceWire.Modification(
                claims: claims, name: name, fcmRegistrationToken: fcmRegistrationToken,
                disablePushNotifications: disablePushNotifications ? true : nil)
        }
        if case .failure(let failure) = result { return failure }
        return nil
    }
}
