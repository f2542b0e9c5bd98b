import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import Primitives

/// The id that ties one request's log lines together: the caller's `X-Request-Id` when it is a sane token (a
/// balancer's or relying party's correlation id), else a fresh random one. It is echoed in the response and is the
/// `request_id` metadata of every log line written while the request runs, also from services (through
/// ``current``, a task-local value, so no signature has to carry it).
public enum RequestID {
    public static let header = HTTPField.Name("X-Request-Id")!
    @TaskLocal public static var current: String?

    /// The caller's id if it is 1...128 characters of `[A-Za-z0-9._:-]`; anything else is replaced, so a caller
    /// cannot inject log syntax or unbounded text into our logs.
    static func accept(_ value: String?) -> String? {
        guard let value, (1...128).contains(value.utf8.count),
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == 0x2E || byte == 0x5F || byte == 0x3A || byte == 0x2D
            })
        else { return nil }
        return value
    }

    static func generate() -> String { Base64URL.encode(SecureRandom.bytes(12)) }

    /// Metadata for a log line written on behalf of the current request, if any.
    static var metadata: Logger.Metadata? { current.map { ["request_id": .string($0)] } }
}

/// Who the current request's caller is, for the audit trail: the peer and the values of the client-address header
/// (resolved to the client only when a decision is audited), and the principal once authorization established one.
final class RequestCaller: Sendable {
    @TaskLocal static var current: RequestCaller?

    let peer: String?
    let forwarded: [String]
    private let presented = NIOLockedValueBox<Principal?>(nil)

    init(peer: String?, forwarded: [String]) {
        self.peer = peer
        self.forwarded = forwarded
    }

    /// The credential the caller presented and the server accepted, if any.
    var principal: Principal? {
        get { presented.withLockedValue { $0 } }
        set { presented.withLockedValue { $0 = newValue } }
    }
}

/// First in the chain for every request: assigns the request id, counts the request by route and status, times
/// it, and writes one access line at debug level (info would cost a line per request at full load; the decisions
/// that matter are logged at info by the services).
struct RequestObservationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let metrics: ServerMetrics
    let logger: Logger
    /// Names the header whose values ``RequestCaller`` keeps.
    let clients: ClientAddressResolver

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = RequestID.accept(request.headers[RequestID.header]) ?? RequestID.generate()
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        metrics.requestStarted()
        let start = ContinuousClock.now
        var response: Response
        do {
            let caller = RequestCaller(peer: context.peerIP, forwarded: clients.header.map { request.headers[values: $0] } ?? [])
            response = try await RequestID.$current.withValue(id) {
                try await RequestCaller.$current.withValue(caller) { try await next(request, context) }
            }
        } catch let error as any HTTPResponseError {
            // Turn the error into its response here, so it too carries the id and is counted with its status.
            response = try error.response(from: request, context: context)
        } catch {
            metrics.requestFinished(
                method: Self.methodLabel(request.method), route: context.endpointPath ?? "NotFound", status: 500,
                duration: ContinuousClock.now - start)
            logger.error("request failed", metadata: ["request_id": .string(id), "error": .string(String(describing: error))])
            throw error
        }
        response.headers[RequestID.header] = id
        let duration = ContinuousClock.now - start
        let route = context.endpointPath ?? "NotFound"
        metrics.requestFinished(method: Self.methodLabel(request.method), route: route, status: Int(response.status.code), duration: duration)
        logger.debug(
            "request",
            metadata: [
                "request_id": .string(id), "method": .string(request.method.rawValue), "route": .string(route),
                "status": .stringConvertible(response.status.code), "ms": .string(String(format: "%.2f", Double(duration.nanoseconds) / 1e6)),
            ])
        return response
    }

    /// The `method` label: the methods the server routes, or `other`. HTTP lets a client name any token as its
    /// method, and a label must come from a bounded set.
    static func methodLabel(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .patch, .delete, .options: method.rawValue
        default: "other"
        }
    }
}
