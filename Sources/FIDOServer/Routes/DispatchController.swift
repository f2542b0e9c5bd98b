import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NevisProtocol
import UAF

/// The out-of-band paths (server-api §A.3–§A.5): dispatch tokens, redeem, dispatch targets, the Device Service.
struct DispatchController {
    static let tokenBase = "/nevisfido/token"
    let dispatch: DispatchService
    let targets: DispatchTargetService
    let devices: DeviceService
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    func add(open: RouterGroup<ServerRequestContext>, identified: RouterGroup<ServerRequestContext>, protected: RouterGroup<ServerRequestContext>) {
        // Registration and deregistration dispatch need an authorized caller; authentication dispatch is open, as in
        // nevisFIDO's defaults (it reveals nothing and the device still has to authenticate).
        protected.post("\(Self.tokenBase)/dispatch/registration") { request, context in
            try await dispatchRoute(request, .registration, principal: try context.requirePrincipal())
        }
        identified.post("\(Self.tokenBase)/dispatch/authentication") { request, context in
            try await dispatchRoute(request, .authentication, principal: context.principal)
        }
        protected.post("\(Self.tokenBase)/dispatch/deregistration") { request, context in
            try await dispatchRoute(request, .deregistration, principal: try context.requirePrincipal())
        }
        for operation in [UAFOperation.registration, .authentication, .deregistration] {
            open.post(RouterPath(stringLiteral: DispatchService.redeemPath(operation))) { request, _ in
                try await Wire.handle(request, as: RedeemBody.self, name: .redeem(operation), onRejection: onRejection) { body in
                    try await dispatch.redeem(token: body.token, operation: operation).response
                } failure: { failure, _ in
                    Wire.json(ReturnUAFRequest(statusCode: failure.status.rawValue, op: operation))
                }
            }
        }

        protected.post("\(Self.tokenBase)/dispatch/targets") { request, context in
            try await Self.jsonEndpoint(
                request, as: DispatchTargetWire.Creation.self, name: "create dispatch target", status: .created,
                onRejection: onRejection
            ) { body in
                try await targets.create(body, principal: try context.requirePrincipal())
            }
        }
        protected.get("\(Self.tokenBase)/dispatch/targets") { request, context in
            try await Self.respond(name: "list dispatch targets", onRejection: onRejection) {
                Wire.json(
                    try await targets.list(username: try FormQuery(request.uri.query).get("username"), principal: try context.requirePrincipal()),
                    contentType: Wire.jsonContentType)
            }
        }
        // Modify is authorized by the body itself: a JWS signed with the target's key.
        open.patch("\(Self.tokenBase)/dispatch/targets/:id") { request, context in
            try await Self.respond(name: "modify dispatch target", onRejection: onRejection) {
                let id = try context.parameters.require("id")
                let jws = try await Self.joseBody(request)
                try await targets.modify(id: id, signed: context.signedRequest(request, signature: jws, body: nil))
                return Response(status: .noContent, headers: [.cacheControl: "no-store"])
            }
        }
        protected.delete("\(Self.tokenBase)/dispatch/targets/:id") { _, context in
            try await Self.respond(name: "delete dispatch target", onRejection: onRejection) {
                try await targets.delete(id: try context.parameters.require("id"), principal: try context.requirePrincipal())
                return Response(status: .noContent, headers: [.cacheControl: "no-store"])
            }
        }
    }

    /// The Device Service (``DeviceServiceWire``): authorized by the `Device-Signature` header alone.
    func addDeviceService(open: RouterGroup<ServerRequestContext>) {
        let credentials = RouterPath(stringLiteral: DeviceServiceWire.basePath + DeviceServiceWire.credentialsComponent + "/:deviceId")
        open.get(credentials) { request, context in
            try await Self.respond(name: "device credentials", onRejection: onRejection) {
                try Self.deviceAnswer(
                    request,
                    try await devices.credentials(
                        deviceId: try context.parameters.require("deviceId"),
                        signed: try await Self.signed(request, context: context)))
            }
        }
        open.patch(credentials) { request, context in
            try await Self.respond(name: "device modify", onRejection: onRejection) {
                try await devices.modify(
                    deviceId: try context.parameters.require("deviceId"), signed: try await Self.signed(request, context: context))
                return Response(status: .noContent, headers: [.cacheControl: "no-store"])
            }
        }
        open.delete(credentials) { request, context in
            try await Self.respond(name: "device delete", onRejection: onRejection) {
                try await devices.delete(
                    deviceId: try context.parameters.require("deviceId"), signed: try await Self.signed(request, context: context))
                return Response(status: .noContent, headers: [.cacheControl: "no-store"])
            }
        }
        open.get(RouterPath(stringLiteral: DeviceServiceWire.basePath + DeviceServiceWire.operationsComponent + "/:deviceId")) { request, context in
            try await Self.respond(name: "device operations", onRejection: onRejection) {
                try Self.deviceAnswer(
                    request,
                    try await devices.pendingOperations(
                        deviceId: try context.parameters.require("deviceId"),
                        signed: try await Self.signed(request, context: context)))
            }
        }
    }

    struct RedeemBody: Decodable { var token: String }

    /// A Device Service answer in the media type the device asks for (our contract; what nevisFIDO answers here is
    /// not published): JSON, unless `Accept` weighs `application/jose` above JSON, as the Nevis SDK's
    /// `Accept: application/jose;charset=UTF-8` does; then the same JSON as a JWE to the signing target's
    /// encryption key (``DeviceService/Answer/encrypted()``), or 406 if that target registered none.
    static func deviceAnswer<Body>(_ request: Request, _ answer: DeviceService.Answer<Body>) throws -> Response {
        guard let accept = request.headers[.accept], MediaType.weight(in: accept, of: .jose) > MediaType.weight(in: accept, of: .json) else {
            return Wire.json(answer.body, contentType: Wire.jsonContentType)
        }
        guard let jwe = try answer.encrypted() else {
            throw Refusal(
                .notAcceptable, "not_acceptable",
                "This dispatch target registered no encryption key to encrypt the answer to: ask for application/json.")
        }
        return Response(
            status: .ok, headers: [.contentType: DeviceService.Answer<Body>.joseContentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: jwe)))
    }

    func dispatchRoute(_ request: Request, _ operation: UAFOperation, principal: Principal?) async throws -> Response {
        try await Self.jsonEndpoint(request, as: DispatchService.TokenRequest.self, name: .dispatch(operation), onRejection: onRejection) { body in
            try await dispatch.dispatch(body, operation: operation, principal: principal)
        }
    }

    /// A JSON endpoint: decodes `Input`, answers `Output` as JSON with `status`, and maps every refusal to its
    /// HTTP answer (see ``respond(name:onRejection:_:)``).
    static func jsonEndpoint<Input: Decodable, Output: Encodable>(
        _ request: Request, as type: Input.Type, name: OperationName, status: HTTPResponse.Status = .ok,
        onRejection: @escaping @Sendable (OperationName, ServiceFailure) -> Void, _ body: @escaping (Input) async throws -> Output
    ) async throws -> Response {
        switch await Wire.decodeBody(request, as: Input.self, accepting: ["application/json"], errors: .json) {
        case .failure(let response): return response
        case .success(let input):
            return try await respond(name: name, onRejection: onRejection) {
                Wire.json(try await body(input), status: status, contentType: Wire.jsonContentType)
            }
        }
    }

    /// Runs a JSON endpoint's body: a refusal is its HTTP status with the `{"error", "message"}` body; a UAF-style
    /// failure (bad input found by a ceremony check) is 400; an internal error 500 without details.
    static func respond(
        name: OperationName, onRejection: @Sendable (OperationName, ServiceFailure) -> Void, _ body: () async throws -> Response
    ) async throws -> Response {
        do { return try await body() } catch let failure as Refusal {
            onRejection(name, ServiceFailure(.badRequest, "\(failure.status.code) \(failure.message)"))
            return failure.response
        } catch let refusal as DeviceSignatureRefusal {
            onRejection(name, ServiceFailure(.unauthorized, refusal.detail))
            return refusal.failure.response
        } catch let refusal as AuthorizationFailure {
            onRejection(name, ServiceFailure(refusal.kind == .forbidden ? .forbidden : .unauthorized, refusal.detail))
            return refusal.response
        } catch let failure as ServiceFailure {
            onRejection(name, failure)
            return ErrorBody.response(
                failure.status == .internalServerError ? .internalServerError : .badRequest,
                error: "bad_request", message: failure.status.reasonPhrase)
        } catch {
            onRejection(name, ServiceFailure(.internalServerError, "\(error)"))
            return ErrorBody.response(.internalServerError, error: "internal_error", message: "The request could not be completed.")
        }
    }

    /// A Device Service request's `Device-Signature` with the request it must name (its body is empty or small).
    static func signed(_ request: Request, context: ServerRequestContext) async throws -> SignedRequest {
        let buffer = try await smallBody(request)
        return context.signedRequest(request, signature: request.headers[Authorizer.deviceSignatureHeader], body: Array(buffer.readableBytesView))
    }

    /// The body of a device-signed request (Device Service, a target's PATCH): at most 16 KiB, else 413.
    private static func smallBody(_ request: Request) async throws -> ByteBuffer {
        guard let buffer = try? await request.body.collect(upTo: 16 * 1024) else {
            throw Refusal(.contentTooLarge, "too_large", "The body is larger than 16 KiB.")
        }
        return buffer
    }

    /// A body that is a compact JWS (`application/jose`).
    static func joseBody(_ request: Request) async throws -> String {
        if let contentType = request.headers[.contentType]?.lowercased(), !contentType.hasPrefix("application/jose") {
            throw Refusal(.unsupportedMediaType, "unsupported_media_type", "Content-Type must be application/jose.")
        }
        let buffer = try await smallBody(request)
        return String(decoding: buffer.readableBytesView, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
