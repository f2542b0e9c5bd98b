import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NevisProtocol

/// The JSON body of every non-UAF error answer (401, 403, 404, 429, …): `{"error": …, "message": …}`.
struct ErrorBody: Codable {
    var error: String
    var message: String

    static func response(_ status: HTTPResponse.Status, error: String, message: String, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        let data = (try? JSONEncoder().encode(ErrorBody(error: error, message: message))) ?? Data()
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

extension AuthorizationFailure {
    /// The answer the client gets: the same generic body wherever the refusal was decided (middleware or service).
    var response: Response {
        switch kind {
        case .unauthenticated:
            return ErrorBody.response(
                .unauthorized, error: "unauthorized", message: "Valid credentials are required: a bearer token or a session.",
                headers: [.wwwAuthenticate: "Bearer"])
        case .forbidden:
            return ErrorBody.response(.forbidden, error: "forbidden", message: "These credentials may not act for this user.")
        }
    }
}
