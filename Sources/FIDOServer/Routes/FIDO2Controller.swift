import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NevisProtocol
import WireJSON

/// nevisFIDO's FIDO2 API (passkeys): the four ceremony endpoints, the status service and the related-origins document. Every answer is
/// `application/json` with `status` and `errorMessage`: 200 `ok`, or `failed` with 400 (a body that cannot be read
/// or a ceremony refused), 404 (a caller with credentials for a user who has no passkey), 409 (a user who holds the
/// most passkeys allowed), 415 (`Content-Type` is not `application/json`), 413 or 429 (too many unanswered ceremonies of one user, with `Retry-After`). 401 and 403 have
/// the server's error body, as on every endpoint that takes credentials. 405 and 406 come from the route rules.
struct FIDO2Controller {
    let passkeys: PasskeyService
    let relatedOrigins: [String]
    /// The apps that share the site's passkeys, whose association files this server serves.
    let apps: ServerConfiguration.FIDO2.Apps?
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    /// `/attestation/options` needs the credentials a UAF registration request needs (the relying party's JWT, a
    /// session's JWT or cookie, the trusted proxy's header), whichever ceremony it serves. `/assertion/options` is open
    /// but gives a caller with credentials for the user her credential list. The results are open: a result is bound
    /// to its options by the challenge, which only the options' caller had.
    func add(
        router: Router<ServerRequestContext>, open: RouterGroup<ServerRequestContext>, identified: RouterGroup<ServerRequestContext>,
        protected: RouterGroup<ServerRequestContext>
    ) {
        protected.post(RouterPath(FIDO2API.attestationOptionsPath)) { request, context in
            try await handle(request, as: FIDO2API.OptionsRequest.self, name: "passkey options") { options in
                if options.isRegistration {
                    return Wire.json(
                        try await passkeys.registrationOptions(options, principal: try context.requirePrincipal()), contentType: Wire.jsonContentType)
                }
                return Wire.json(try await passkeys.authenticationOptions(options, caller: context.principal), contentType: Wire.jsonContentType)
            }
        }
        identified.post(RouterPath(FIDO2API.assertionOptionsPath)) { request, context in
            try await handle(request, as: FIDO2API.OptionsRequest.self, name: "passkey authentication options") { options in
                Wire.json(try await passkeys.authenticationOptions(options, caller: context.principal), contentType: Wire.jsonContentType)
            }
        }
        // The user's own passkeys: her session (or a caller who may add credentials for her, naming her).
        protected.get(RouterPath(FIDO2API.passkeysPath)) { request, context in
            try await answering("passkey list") {
                let list = try await passkeys.passkeyList(username: try Self.username(request), principal: try context.requirePrincipal())
                return Self.private(Wire.json(list, contentType: Wire.jsonContentType))
            }
        }
        protected.patch(RouterPath("\(FIDO2API.passkeysPath)/:id")) { request, context in
            try await handle(request, as: FIDO2API.PasskeyRename.self, name: "passkey rename") { rename in
                let list = try await passkeys.renamePasskey(
                    id: try context.parameters.require("id"), name: rename.name, username: try Self.username(request),
                    principal: try context.requirePrincipal())
                return Self.private(Wire.json(list, contentType: Wire.jsonContentType))
            }
        }
        protected.delete(RouterPath("\(FIDO2API.passkeysPath)/:id")) { request, context in
            try await answering("passkey removal") {
                let list = try await passkeys.removePasskey(
                    id: try context.parameters.require("id"), username: try Self.username(request), principal: try context.requirePrincipal())
                return Self.private(Wire.json(list, contentType: Wire.jsonContentType))
            }
        }
        // Open, like UAF's status service: the session id is the capability, and only the options' caller had it.
        open.post(RouterPath(FIDO2API.statusPath)) { request, _ in
            try await handle(request, as: FIDO2API.StatusQuery.self, name: "passkey status") { body in
                var response = Wire.json(try await passkeys.status(body), contentType: Wire.jsonContentType)
                response.headers[.cacheControl] = "no-store"
                return response
            }
        }
        open.post(RouterPath(FIDO2API.attestationResultPath)) { request, _ in
            try await handle(request, as: FIDO2API.Credential.self, name: "passkey registration") { credential in
                Wire.json(try await passkeys.registrationResult(credential), contentType: Wire.jsonContentType)
            }
        }
        open.post(RouterPath(FIDO2API.assertionResultPath)) { request, _ in
            try await handle(request, as: FIDO2API.Credential.self, name: "passkey authentication") { credential in
                let signIn = try await passkeys.authenticationResult(credential)
                var response = Wire.json(signIn.response, contentType: Wire.jsonContentType)
                response.headers[.setCookie] = signIn.setCookie
                return response
            }
        }
        // Apple's and Google's crawlers fetch these from https://<rpId> without credentials; a redirect or another
        // content type makes them ignore the file. They change only with the configuration.
        if let apps, !apps.apple.isEmpty, let document = try? AppAssociation.apple(apps.apple) {
            router.get(RouterPath(AppAssociation.applePath)) { _, _ in Self.document(document, maxAge: 3600) }
        }
        if let apps, !apps.android.isEmpty, let document = try? AppAssociation.android(apps.android) {
            router.get(RouterPath(AppAssociation.androidPath)) { _, _ in Self.document(document, maxAge: 3600) }
        }
        if !relatedOrigins.isEmpty {
            // Browsers fetch it without credentials from https://<rpId>; it changes only with the configuration.
            let document = (try? WireJSONEncoder().encode(FIDO2API.RelatedOrigins(origins: relatedOrigins))) ?? []
            router.get(RouterPath(FIDO2API.relatedOriginsPath)) { _, _ in Self.document(document, maxAge: 300) }
        }
    }

    /// `response`, never cached: a user's own data.
    static func `private`(_ response: Response) -> Response {
        var response = response
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The `username` query parameter, when given (read as a form: `+` is a space).
    static func username(_ request: Request) throws -> String? {
        do { return try FormQuery(request.uri.query).get("username") } catch {
            throw Refusal(.badRequest, "bad_request", "the query is not a form: \(error)")
        }
    }

    /// A public JSON document, cacheable for `maxAge` seconds.
    static func document(_ bytes: [UInt8], maxAge: Int) -> Response {
        Response(
            status: .ok, headers: [.contentType: Wire.jsonContentType, .cacheControl: "public, max-age=\(maxAge)"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A failure in this API's shape.
    static func failed(_ status: HTTPResponse.Status, _ message: String, code: String? = nil, headers: HTTPFields = [:]) -> Response {
        var response = Wire.json(FIDO2API.ServerResponse.failed(message, code: code), status: status, contentType: Wire.jsonContentType)
        for field in headers { response.headers.append(field) }
        return response
    }

    /// Reads the body (415 unless `Content-Type` is `application/json`, with or without parameters; 413 past the
    /// body limit; 400 for a body that is not the expected JSON: a missing member, a wrong type at any level, a
    /// duplicate member), runs `body`, and answers a refusal in this API's shape.
    func handle<Input: Decodable>(
        _ request: Request, as type: Input.Type, name: OperationName,
        _ body: (Input) async throws -> Response
    ) async throws -> Response {
        let mediaType = request.headers[.contentType].flatMap(MediaType.init)
        guard mediaType == MediaType("application/json") else {
            return Self.failed(.unsupportedMediaType, "Content-Type must be application/json")
        }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: Wire.maximumBodySize) } catch {
            return Self.failed(.contentTooLarge, "the body is larger than \(Wire.maximumBodySize) bytes")
        }
        let input: Input
        do { input = try WireJSONDecoder().decode(Input.self, from: buffer.readableBytesView) } catch {
            onRejection(name, ServiceFailure(.badRequest, "body is not a \(Input.self)"))
            return Self.failed(.badRequest, "the body is not a valid \(Self.bodyName(Input.self))")
        }
        return try await answering(name) { try await body(input) }
    }

    /// Runs `body`, answering a refusal in this API's shape.
    func answering(_ name: OperationName, _ body: () async throws -> Response) async throws -> Response {
        do { return try await body() } catch let refusal as Refusal {
            // The service records the refusals of a ceremony, with the user, in the audit trail; a body it could not
            // use is counted here.
            if refusal.error == "bad_request" { onRejection(name, ServiceFailure(.badRequest, refusal.message)) }
            return Self.failed(refusal.status, refusal.message, code: refusal.error, headers: refusal.headers)
        } catch let failure as ServiceFailure {
            // The rules the API shares with UAF (a username's length and characters) say no with a UAF status code.
            onRejection(name, failure)
            return Self.failed(failure.status == .notFound ? .notFound : .badRequest, failure.detail)
        } catch let refusal as AuthorizationFailure {
            onRejection(name, ServiceFailure(refusal.kind == .forbidden ? .forbidden : .unauthorized, refusal.detail))
            return refusal.response
        } catch {
            onRejection(name, ServiceFailure(.internalServerError, "\(error)"))
            return Self.failed(.internalServerError, "internal error")
        }
    }

    /// The conformance API's name for a body type, for the error message.
    static func bodyName<Input>(_ type: Input.Type) -> String {
        switch type {
        case is FIDO2API.Credential.Type: return "ServerPublicKeyCredential"
        case is FIDO2API.StatusQuery.Type: return "status request with one fido2SessionId"
        default: return "ServerPublicKeyCredentialOptionsRequest"
        }
    }
}
