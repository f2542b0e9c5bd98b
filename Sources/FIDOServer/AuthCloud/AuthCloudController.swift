import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NevisProtocol

/// The Auth Cloud API's paths (server-api §A.7): `/ping`, the access-keyed `/api/v1/…` endpoints, the open status
/// endpoint, and `/open`, where app links land.
struct AuthCloudController {
    static let apiBase = "/api/v1"
    let service: AuthCloudService
    let accessKeys: AccessKeyStore
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    func add(router: Router<ServerRequestContext>, open: RouterGroup<ServerRequestContext>) {
        router.get("/ping") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: "PONG")))
        }
        // Where an app link lands when no app claims it (opened on a laptop, say): a page that says what to do. The
        // payload stays in the link: the page neither reads nor shows it.
        open.get(RouterPath(stringLiteral: AuthCloudService.appLinkPath)) { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(string: Self.landingPage)))
        }
        // The status token is the credential: the relying party's front end polls without an access key (the Auth
        // Cloud documentation's example sends none), so a browser never holds a key.
        open.post("\(Self.apiBase)/status") { request, _ in
            try await DispatchController.jsonEndpoint(
                request, as: AuthCloudService.StatusRequest.self, name: "auth cloud status",
                onRejection: onRejection
            ) { body in
                try await service.status(body)
            }
        }
        let api = router.group().add(middleware: AccessKeyMiddleware(keys: accessKeys, onRejection: onRejection))
        api.post("\(Self.apiBase)/users/enroll") { request, context in
            try await DispatchController.jsonEndpoint(
                request, as: AuthCloudService.EnrollRequest.self, name: "auth cloud enroll",
                onRejection: onRejection
            ) { body in
                try await service.enroll(body, principal: try context.requirePrincipal())
            }
        }
        api.post("\(Self.apiBase)/approval") { request, context in
            try await DispatchController.jsonEndpoint(
                request, as: AuthCloudService.ApprovalRequest.self, name: "auth cloud approval",
                onRejection: onRejection
            ) { body in
                try await service.approval(body, principal: try context.requirePrincipal())
            }
        }
        // Cancelling changes what the relying party's backend started, so it needs the access key, unlike the status.
        api.post("\(Self.apiBase)/status/cancel") { request, _ in
            try await DispatchController.jsonEndpoint(
                request, as: AuthCloudService.StatusRequest.self, name: "auth cloud cancel",
                onRejection: onRejection
            ) { body in
                try await service.cancel(body).answer
            }
        }
        api.get("\(Self.apiBase)/users/:userId") { _, context in
            try await DispatchController.respond(name: "auth cloud user", onRejection: onRejection) {
                Wire.json(try await service.user(id: try context.parameters.require("userId"), username: nil), contentType: Wire.jsonContentType)
            }
        }
        api.get("\(Self.apiBase)/users") { request, _ in
            try await DispatchController.respond(name: "auth cloud user lookup", onRejection: onRejection) {
                Wire.json(
                    try await service.user(id: nil, username: try FormQuery(request.uri.query).get("username")), contentType: Wire.jsonContentType)
            }
        }
        api.delete("\(Self.apiBase)/users/:userId") { _, context in
            try await DispatchController.respond(name: "auth cloud delete user", onRejection: onRejection) {
                try await service.delete(userId: try context.parameters.require("userId"))
                return Response(status: .noContent, headers: [.cacheControl: "no-store"])
            }
        }
    }

    static let landingPage = """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Open in the app</title>
        <style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1d2433}</style>
        </head><body><h1>Open this in the authenticator app</h1>
        <p>This link continues a sign-in or an enrollment in the authenticator app, which opens such links by itself
        where it is installed.</p>
        <p><strong>On a phone:</strong> the app is not installed here, or not set up for this link. Install it, then open
        the link again, or scan the QR code shown next to the link with the app.</p>
        <p><strong>On a computer:</strong> scan the QR code shown next to the link with the app on your phone.</p>
        </body></html>
        """
}

/// The Auth Cloud API's server-to-server credential: `Authorization: Bearer <access key>`, a key made with
/// `mauth admin access-key create`. Development mode does not relax it: these endpoints act for every user.
struct AccessKeyMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let keys: AccessKeyStore
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let presented = request.headers[.authorization].flatMap(Authorizer.bearerToken)
        guard let presented, let key = try await keys.validate(presented) else {
            onRejection("auth cloud access key", ServiceFailure(.unauthorized, presented == nil ? "no access key" : "unknown or revoked access key"))
            return ErrorBody.response(
                .unauthorized, error: "unauthorized", message: "A valid access key is required: Authorization: Bearer <key>.",
                headers: [.wwwAuthenticate: "Bearer"])
        }
        var context = context
        context.principal = Principal(source: .accessKey(id: key.id), subject: nil, isAdmin: true)
        RequestCaller.current?.principal = context.principal
        return try await next(request, context)
    }
}

/// The mobile-facing paths of the SDK's Auth Cloud preset (`Configuration.authCloudBuilder`): base
/// `https://<host>/_app`, then `/uaf/1.1/…`, `/token/…`, `/devices/…`. Each `/_app/<rest>` is answered as
/// `/nevisfido/<rest>`, by the same handlers, so one server serves both presets.
public struct AppPathResponder<Base: HTTPResponder>: HTTPResponder where Base.Context == ServerRequestContext {
    public typealias Context = ServerRequestContext
    static var prefix: String { "/_app/" }
    let base: Base

    public func respond(to request: Request, context: Context) async throws -> Response {
        guard let path = request.head.path, path.hasPrefix(Self.prefix) else { return try await base.respond(to: request, context: context) }
        var head = request.head
        head.path = "/nevisfido/" + path.dropFirst(Self.prefix.count)
        var context = context
        context.receivedPath = request.uri.path
        return try await base.respond(to: Request(head: head, body: request.body), context: context)
    }
}
