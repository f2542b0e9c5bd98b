import FIDOServerCore
import Foundation
import Hummingbird

/// The operator's HTTP endpoints (``AdminService``, which `mauth admin` calls too), for a relying-party token with the
/// operator scope. The user is named by the `username` query parameter (a username may hold any character, a path
/// segment may not), read as a form (``FormQuery``: `+` is a space), as the dispatch target listing does. Our contract
/// (nevisFIDO documents none): JSON answers, `ErrorBody` errors, 404 when the user has nothing that matches, with the
/// service's words, which `mauth admin` prints for the same request.
struct AdminController {
    let admin: AdminService
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    static let base = "/nevisfido/admin"

    struct Events: Encodable { var events: [AuditEvent] }
    struct Rename: Decodable { var name: String }

    func add(protected: RouterGroup<ServerRequestContext>) {
        protected.get("\(Self.base)/user") { request, context in
            try await respond("admin user show") {
                let report = try await admin.user(try Self.username(request), principal: try context.requirePrincipal())
                return Response(
                    status: .ok, headers: [.contentType: Wire.jsonContentType, .cacheControl: "no-store"],
                    body: .init(byteBuffer: .init(bytes: try report.json())))
            }
        }
        protected.delete("\(Self.base)/user") { request, context in
            try await respond("admin user erase") {
                Wire.json(
                    try await admin.erase(try Self.username(request), principal: try context.requirePrincipal()), contentType: Wire.jsonContentType)
            }
        }
        protected.delete("\(Self.base)/user/keys") { request, context in
            try await respond("admin user remove keys") {
                let query = try FormQuery(request.uri.query)
                let removed = try await admin.removeKeys(
                    try Self.username(query), aaids: query.getAll("aaid"),
                    keyIDs: query.getAll("keyID"), all: query.get("all") == "true",
                    principal: try context.requirePrincipal())
                return Wire.json(removed, contentType: Wire.jsonContentType)
            }
        }
        protected.delete("\(Self.base)/user/passkeys") { request, context in
            try await respond("admin user remove passkeys") {
                let query = try FormQuery(request.uri.query)
                let removed = try await admin.removePasskeys(
                    try Self.username(query), ids: query.getAll("id"), all: query.get("all") == "true",
                    principal: try context.requirePrincipal())
                return Wire.json(removed, contentType: Wire.jsonContentType)
            }
        }
        protected.patch("\(Self.base)/user/passkeys/:id") { request, context in
            try await respond("admin user rename passkey") {
                // A name is at most 256 bytes: a body of more than 4 KiB is not a rename.
                guard let body = try? await request.body.collect(upTo: 4096), let rename = try? JSONDecoder().decode(Rename.self, from: body) else {
                    throw ServiceFailure(.badRequest, "the body must be {\"name\": \"…\"}")
                }
                let renamed = try await admin.renamePasskey(
                    try Self.username(request), id: try context.parameters.require("id"), name: rename.name,
                    principal: try context.requirePrincipal())
                return Wire.json(renamed, contentType: Wire.jsonContentType)
            }
        }
        protected.delete("\(Self.base)/user/sessions") { request, context in
            try await respond("admin user end sessions") {
                let query = try FormQuery(request.uri.query)
                return Wire.json(
                    try await admin.endSessions(
                        try Self.username(query), session: query.get("session"),
                        principal: try context.requirePrincipal()),
                    contentType: Wire.jsonContentType)
            }
        }
        protected.delete("\(Self.base)/user/dispatch-targets/:id") { request, context in
            try await respond("admin user remove target") {
                try await admin.removeTarget(
                    try Self.username(request), id: try context.parameters.require("id"), principal: try context.requirePrincipal())
                return Response(status: .noContent, headers: [.cacheControl: "no-store"])
            }
        }
        protected.get("\(Self.base)/audit") { request, context in
            try await respond("admin audit") {
                let query = try FormQuery(request.uri.query)
                var since: Date?
                if let text = query.get("since") {
                    guard let date = ISO8601DateFormatter().date(from: text) else {
                        throw ServiceFailure(.badRequest, "since must be an RFC 3339 time such as 2026-11-26T10:00:00Z")
                    }
                    since = date
                }
                guard let limit = Int(query.get("limit") ?? "100") else { throw ServiceFailure(.badRequest, "limit must be a number") }
                let events = try await admin.audit(
                    username: query.get("username"), since: since, limit: limit, principal: try context.requirePrincipal())
                return Wire.json(Events(events: events), contentType: Wire.jsonContentType)
            }
        }
    }

    static func username(_ request: Request) throws -> String { try username(try FormQuery(request.uri.query)) }

    static func username(_ query: FormQuery) throws -> String {
        guard let username = query.get("username") else { throw ServiceFailure(.badRequest, "the username query parameter is required") }
        return username
    }

    /// Runs `body`, answering a refusal with the JSON error body: 404 for nothing that matches, 400 for a bad
    /// parameter, 401/403 from authorization.
    private func respond(_ name: OperationName, _ body: () async throws -> Response) async throws -> Response {
        do { return try await body() } catch let failure as ServiceFailure where failure.status == .notFound {
            onRejection(name, failure)
            return ErrorBody.response(.notFound, error: "not_found", message: failure.detail)
        } catch {
            return try await DispatchController.respond(name: name, onRejection: onRejection) { throw error }
        }
    }
}
