import FIDOServerCore
import Foundation
import Hummingbird
import NIOCore
import UAF

/// The server's own resources besides the UAF ceremonies: the Status Service (server-api §B.5), the token
/// verification keys, and the session (sign-out).
struct ServerController {
    let status: StatusService
    let issuer: TokenIssuer
    let sessions: SessionStore
    let clock: @Sendable () -> Date
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    func add(open: RouterGroup<ServerRequestContext>, protected: RouterGroup<ServerRequestContext>, router: Router<ServerRequestContext>) {
        sessionEndpoint(open, "/nevisfido/status", name: "status") { try await status.status($0) }
        // Cancel, like the status, is for whoever holds the session id: the relying party that started the operation.
        sessionEndpoint(open, "/nevisfido/status/cancel", name: "cancel") { try await status.cancel($0) }
        // The API's OpenAPI 3.1 description (Sources/FIDOServer/OpenAPI/openapi.json, compiled in), public like the
        // facets: it says nothing a client could not learn by calling the endpoints.
        router.get("/openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json)))
        }
        router.get("/.well-known/jwks.json") { _, _ in
            // Public keys only; caching them briefly is fine for relying parties, but keep one rule for every answer.
            Wire.json(issuer.jwks, contentType: "application/jwk-set+json")
        }
        // Sign-out: revokes the calling session (cookie or this server's JWT); its JWTs stop working at once here,
        // and a relying party that checks the status of `sid` sees it too.
        protected.delete("/nevisfido/session") { _, context in
            guard case .session(let id) = try context.requirePrincipal().source else {
                return ErrorBody.response(.badRequest, error: "not_a_session", message: "Only a session can sign itself out.")
            }
            _ = try await sessions.revoke(id: id, now: clock())
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
    }

    /// A JSON endpoint whose body is `{"sessionId": …}` and whose answer is the operation's status.
    private func sessionEndpoint(
        _ group: RouterGroup<ServerRequestContext>, _ path: RouterPath, name: OperationName,
        _ body: @escaping @Sendable (StatusService.Query) async throws -> StatusService.Answer
    ) {
        group.post(path) { request, _ in
            try await Wire.handle(request, as: StatusService.Query.self, name: name, bodyErrors: .json, onRejection: onRejection) { query in
                Wire.json(try await body(query), contentType: Wire.jsonContentType)
            } failure: { failure, _ in
                ErrorBody.response(
                    failure.status == .internalServerError ? .internalServerError : .badRequest,
                    error: "bad_request", message: "The body must be {\"sessionId\": \"…\"}.")
            }
        }
    }
}
