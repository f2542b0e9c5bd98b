import Foundation
import Primitives
import HTTPTypes
import Hummingbird
import NIOCore
import UAF
import UAFServerCore
import WireJSON

/// The nevisFIDO FIDO UAF core paths (server-api §A.1). UAF outcomes, including rejections, are HTTP 200 with
/// the UAF status code in the body (`ReturnUAFRequest.statusCode` / `ServerResponse.statusCode`), so a client
/// always gets a spec-shaped answer; a body that cannot be parsed at all is HTTP 400, an unsupported media type
/// 415. Rejection details go to the log; the client gets the status code and its generic reason phrase.
struct UAFController {
    static let base = "/nevisfido/uaf/1.1"
    let registration: RegistrationService
    let authentication: AuthenticationService
    let deregistration: DeregistrationService
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    /// `open` are the unauthenticated routes; `protected` runs `AuthorizationMiddleware` first; `identified` is open
    /// but establishes the principal of a credential the caller presents. (All are rate limited.)
    func add(open: RouterGroup<ServerRequestContext>, identified: RouterGroup<ServerRequestContext>, protected: RouterGroup<ServerRequestContext>) {
        protected.post("\(Self.base)/request/registration") { request, context in
            try await handleRequest(request, name: "registration request") { try await registration.request($0, principal: try context.requirePrincipal()) }
        }
        protected.post("\(Self.base)/request/deregistration") { request, context in
            try await handleRequest(request, name: "deregistration request") { try await deregistration.request($0, principal: try context.requirePrincipal()) }
        }
        open.post("\(Self.base)/registration") { request, _ in
            try await handleResponse(request, name: "registration") { Wire.json(try await registration.response($0)) }
        }
        identified.post("\(Self.base)/request/authentication") { request, context in
            try await handleRequest(request, name: "authentication request") { try await authentication.request($0, caller: context.principal) }
        }
        open.post("\(Self.base)/authentication") { request, _ in
            try await handleResponse(request, name: "authentication") { send in
                let outcome = try await authentication.response(send)
                var response = Wire.json(outcome.response)
                if let cookie = outcome.setCookie { response.headers[.setCookie] = cookie }
                return response
            }
        }
    }

    /// The facets must be unprotected (UAF spec). They are added before the rate limit: clients fetch them on every
    /// operation, and the answer is a small document held in memory.
    static func addFacets(to router: Router<ServerRequestContext>, facets: @escaping @Sendable () -> [String]) {
        router.get("\(Self.base)/facets") { _, _ in
            Wire.json(TrustedFacets(trustedFacets: [.init(version: .uaf11, ids: facets())]), contentType: Wire.facetsContentType)
        }
    }

    func handleRequest(_ request: Request, name: OperationName, _ body: @escaping (GetUAFRequest) async throws -> IssuedRequest) async throws -> Response {
        try await Wire.handle(request, as: GetUAFRequest.self, name: name, onRejection: onRejection) { get in
            try await body(get).response
        } failure: { failure, get in
            Wire.json(ReturnUAFRequest(statusCode: failure.status.rawValue, op: get?.op))
        }
    }

    /// A response endpoint: `body` answers the accepted case; a rejection is a ServerResponse with the status code
    /// and its generic reason phrase.
    func handleResponse(_ request: Request, name: OperationName, _ body: @escaping (SendUAFResponse) async throws -> Response) async throws -> Response {
        try await Wire.handle(request, as: SendUAFResponse.self, name: name, onRejection: onRejection, body) { failure, _ in
            Wire.json(ServerResponse(statusCode: failure.status.rawValue, description: failure.status.reasonPhrase))
        }
    }
}

extension ServerRequestContext {
    func requirePrincipal() throws -> Principal {
        guard let principal else { throw AuthorizationFailure.unauthenticated("no principal on a protected route") }
        return principal
    }
}

extension IssuedRequest {
    /// The HTTP answer. The status session id of the operation (its serverData, the request id) also goes in a
    /// header: a relying party behind a proxy reads it there, the app reads it from the request, and both poll
    /// /nevisfido/status.
    var response: Response {
        var response = Wire.json(answer)
        if let sessionID { response.headers[Wire.sessionIDHeader] = sessionID }
        return response
    }
}

/// The wire rules every controller shares: media types, body limits, JSON encoding and error answers.
enum Wire {
    static let uafContentType = "application/fido+uaf;charset=UTF-8"
    static let facetsContentType = "application/fido.trusted-apps+json"
    static let jsonContentType = "application/json"
    static let maximumBodySize = 256 * 1024
    static let sessionIDHeader = HTTPField.Name("Mauth-Session-Id")!

    /// Every answer is `Cache-Control: no-store`: challenges, tokens and outcomes must never be cached.
    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, contentType: String = uafContentType) -> Response {
        let bytes = (try? WireJSONEncoder().encode(value)) ?? Array("{\"statusCode\":1500}".utf8)
        return Response(status: status, headers: [.contentType: contentType, .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    enum Decoded<T> { case success(T), failure(Response) }

    /// How an endpoint answers a body it cannot read: a UAF endpoint with a UAF ServerResponse (1400) in its UAF
    /// media type, a JSON endpoint with the ``ErrorBody`` every other JSON error has, so that each endpoint has one
    /// error shape and one media type (the OpenAPI document says which).
    enum BodyErrors { case uaf, json }

    /// Reads and decodes a body, answering 415/413/400 itself when it cannot.
    static func decodeBody<T: Decodable>(_ request: Request, as type: T.Type, accepting: [String] = ["application/fido+uaf", "application/json"],
                                         errors: BodyErrors = .uaf) async -> Decoded<T> {
        func refuse(_ status: HTTPResponse.Status, _ error: String, _ message: String) -> Decoded<T> {
            switch errors {
            case .uaf: return .failure(json(ServerResponse(statusCode: 1400, description: message), status: status))
            case .json: return .failure(ErrorBody.response(status, error: error, message: message))
            }
        }
        if let contentType = request.headers[.contentType]?.lowercased(), !accepting.contains(where: contentType.hasPrefix) {
            return refuse(.unsupportedMediaType, "unsupported_media_type", "Content-Type must be \(accepting[0])")
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: maximumBodySize) } catch {
            return refuse(.contentTooLarge, "too_large", "body larger than \(maximumBodySize) bytes")
        }
        do { return .success(try WireJSONDecoder().decode(T.self, from: buffer.readableBytesView)) } catch {
            return refuse(.badRequest, "bad_request", "body is not a valid \(T.self)")
        }
    }

    /// Decodes the body, runs `body`, and turns a rejection into the endpoint's own answer shape via `failure`
    /// (given the decoded input, or nil for an internal error, whose details are logged but never sent). An
    /// authorization failure raised inside the service is 401/403 with the JSON error body.
    static func handle<Input: Decodable>(_ request: Request, as type: Input.Type, name: OperationName,
                                         bodyErrors: BodyErrors = .uaf, onRejection: (OperationName, ServiceFailure) -> Void,
                                         _ body: (Input) async throws -> Response,
                                         failure: (ServiceFailure, Input?) -> Response) async throws -> Response {
        switch await decodeBody(request, as: Input.self, errors: bodyErrors) {
        case .failure(let response): return response
        case .success(let input):
            do { return try await body(input) } catch let rejection as ServiceFailure {
                onRejection(name, rejection)
                return failure(rejection, input)
            } catch let refusal as AuthorizationFailure {
                onRejection(name, ServiceFailure(refusal.kind == .forbidden ? .forbidden : .unauthorized, refusal.detail))
                return refusal.response
            } catch let refusal as OutstandingRequestsRefusal {
                onRejection(name, ServiceFailure(.forbidden, refusal.detail))
                return refusal.refusal.response
            } catch {
                onRejection(name, ServiceFailure(.internalServerError, "\(error)"))
                var response = failure(ServiceFailure(.internalServerError, "internal error"), nil)
                response.status = .internalServerError
                return response
            }
        }
    }
}
