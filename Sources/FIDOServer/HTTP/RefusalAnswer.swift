import FIDOServerCore
import HTTPTypes
import Hummingbird

/// How the HTTP layer answers a service's ``Refusal``: the status its kind stands for, `Retry-After` when the refusal
/// names a wait, and the `{"error", "message"}` body.
extension Refusal {
    var status: HTTPResponse.Status {
        switch kind {
        case .badRequest: return .badRequest
        case .unauthorized: return .unauthorized
        case .notFound: return .notFound
        case .notAcceptable: return .notAcceptable
        case .conflict: return .conflict
        case .contentTooLarge: return .contentTooLarge
        case .unsupportedMediaType: return .unsupportedMediaType
        case .unprocessableContent: return .unprocessableContent
        case .tooManyRequests: return .tooManyRequests
        case .serviceUnavailable: return .serviceUnavailable
        }
    }

    var headers: HTTPFields { retryAfterSeconds.map { [.retryAfter: String($0)] } ?? [:] }

    var response: Response { ErrorBody.response(status, error: error, message: message, headers: headers) }
}
