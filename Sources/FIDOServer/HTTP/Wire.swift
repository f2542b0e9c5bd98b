import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Primitives
import UAF
import WireJSON

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
        return Response(
            status: status, headers: [.contentType: contentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    enum Decoded<T> { case success(T), failure(Response) }

    /// How an endpoint answers a body it cannot read: a UAF endpoint with a UAF ServerResponse (1400) in its UAF
    /// media type, a JSON endpoint with the ``ErrorBody`` every other JSON error has, so that each endpoint has one
    /// error shape and one media type (the OpenAPI document says which).
    enum BodyErrors { case uaf, json }

    /// Reads and decodes a body, answering 415/413/400 itself when it cannot.
    static func decodeBody<T: Decodable>(
        _ request: Request, as type: T.Type, accepting: [String] = ["application/fido+uaf", "application/json"],
        errors: BodyErrors = .uaf
    ) async -> Decoded<T> {
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
    static func handle<Input: Decodable>(
        _ request: Request, as type: Input.Type, name: OperationName,
        bodyErrors: BodyErrors = .uaf, onRejection: (OperationName, ServiceFailure) -> Void,
        _ body: (Input) async throws -> Response,
        failure: (ServiceFailure, Input?) -> Response
    ) async throws -> Response {
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
