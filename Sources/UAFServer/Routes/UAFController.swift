import Foundation
import Hummingbird
import NIOCore
import UAF

/// The nevisFIDO FIDO UAF core paths (server-api §A.1). UAF outcomes, including rejections, are HTTP 200 with
/// the UAF status code in the body (`ReturnUAFRequest.statusCode` / `ServerResponse.statusCode`), so a client
/// always gets a spec-shaped answer; a body that cannot be parsed at all is HTTP 400, an unsupported media type 415.
struct UAFController {
    static let uafContentType = "application/fido+uaf;charset=UTF-8"
    static let facetsContentType = "application/fido.trusted-apps+json"
    static let maximumBodySize = 256 * 1024
    let service: UAFService

    func add(to router: Router<BasicRequestContext>) {
        let base = "/nevisfido/uaf/1.1"
        router.post("\(base)/request/registration") { request, _ in
            try await handleRequest(request, name: "registration request", service.registrationRequest)
        }
        router.post("\(base)/registration") { request, _ in
            try await handleResponse(request, name: "registration", service.registrationResponse)
        }
        router.post("\(base)/request/authentication") { request, _ in
            try await handleRequest(request, name: "authentication request", service.authenticationRequest)
        }
        router.post("\(base)/authentication") { request, _ in
            try await handleResponse(request, name: "authentication", service.authenticationResponse)
        }
        router.get("\(base)/facets") { _, _ in
            Self.json(service.trustedFacets, contentType: Self.facetsContentType)
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, contentType: String = uafContentType) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{\"statusCode\":1500}".utf8)
        return Response(status: status, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    enum Decoded<T> { case success(T), failure(Response) }

    /// Reads and decodes a body, answering 415/400 itself when it cannot.
    static func decodeBody<T: Decodable>(_ request: Request, as type: T.Type) async throws -> Decoded<T> {
        if let contentType = request.headers[.contentType]?.lowercased(),
           !(contentType.hasPrefix("application/fido+uaf") || contentType.hasPrefix("application/json")) {
            return .failure(json(ServerResponse(statusCode: 1400, description: "Content-Type must be application/fido+uaf"), status: .unsupportedMediaType))
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: maximumBodySize) } catch {
            return .failure(json(ServerResponse(statusCode: 1400, description: "body larger than \(maximumBodySize) bytes"), status: .contentTooLarge))
        }
        do { return .success(try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))) } catch {
            return .failure(json(ServerResponse(statusCode: 1400, description: "body is not a valid \(T.self)"), status: .badRequest))
        }
    }

    /// Decodes the body, runs `body`, and turns a rejection into the endpoint's own answer shape via `failure`
    /// (given the decoded input, or nil for an internal error, whose details are logged but never sent).
    func handle<Input: Decodable, Output: Encodable>(_ request: Request, as type: Input.Type, name: String,
                                                     _ body: (Input) async throws -> Output,
                                                     failure: (ServiceFailure, Input?) -> Output) async throws -> Response {
        switch try await Self.decodeBody(request, as: Input.self) {
        case .failure(let response): return response
        case .success(let input):
            do { return Self.json(try await body(input)) } catch let rejection as ServiceFailure {
                service.reject(name, rejection)
                return Self.json(failure(rejection, input))
            } catch {
                service.reject(name, ServiceFailure(.internalServerError, "\(error)"))
                return Self.json(failure(ServiceFailure(.internalServerError, "internal error"), nil), status: .internalServerError)
            }
        }
    }

    func handleRequest(_ request: Request, name: String, _ body: (GetUAFRequest) async throws -> ReturnUAFRequest) async throws -> Response {
        try await handle(request, as: GetUAFRequest.self, name: name, body) { failure, get in
            ReturnUAFRequest(statusCode: failure.status.rawValue, op: get?.op)
        }
    }

    func handleResponse(_ request: Request, name: String, _ body: (SendUAFResponse) async throws -> ServerResponse) async throws -> Response {
        try await handle(request, as: SendUAFResponse.self, name: name, body) { failure, _ in
            ServerResponse(statusCode: failure.status.rawValue, description: failure.detail)
        }
    }
}
