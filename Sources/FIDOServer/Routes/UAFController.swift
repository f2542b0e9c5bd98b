import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Primitives
import UAF
import WireJSON

/// The nevisFIDO FIDO UAF core paths (server-api §A.1). UAF outcomes, including rejections, are HTTP 200 with
/// the UAF status code in the body (`ReturnUAFRequest.statusCode` / `ServerResponse.statusCode`), so a client
/// always gets a spec-shaped answer; a body that cannot be parsed at all is HTTP 400, an unsupported media type
/// 415. Rejection details go to the log; the client gets the status code and its generic reason phrase.
struct UAFController {
    static let base = "/nevisfido/uaf/1.1"
    static let facetsPath = "\(base)/facets"
    /// The Identity Suite's authentication paths (nevisAuth in front of nevisFIDO, server-api §A.1 6a/6b): the SDK's
    /// `Configuration(idSuiteHostname:)` sends its authentication there. The same handlers answer them.
    static let identitySuiteAuthentication = (request: "/auth/fidouaf", response: "/auth/fidouaf/authenticationresponse")
    let registration: RegistrationService
    let authentication: AuthenticationService
    let deregistration: DeregistrationService
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    /// `open` are the unauthenticated routes; `protected` runs `AuthorizationMiddleware` first; `identified` is open
    /// but establishes the principal of a credential the caller presents. (All are rate limited.)
    func add(open: RouterGroup<ServerRequestContext>, identified: RouterGroup<ServerRequestContext>, protected: RouterGroup<ServerRequestContext>) {
        protected.post("\(Self.base)/request/registration") { request, context in
            try await handleRequest(request, name: "registration request") {
                try await registration.request($0, principal: try context.requirePrincipal())
            }
        }
        protected.post("\(Self.base)/request/deregistration") { request, context in
            try await handleRequest(request, name: "deregistration request") {
                try await deregistration.request($0, principal: try context.requirePrincipal())
            }
        }
        open.post("\(Self.base)/registration") { request, _ in
            try await handleResponse(request, name: "registration") { Wire.json(try await registration.response($0)) }
        }
        for path in ["\(Self.base)/request/authentication", Self.identitySuiteAuthentication.request] {
            identified.post(RouterPath(stringLiteral: path)) { request, context in
                try await handleRequest(request, name: "authentication request") { try await authentication.request($0, caller: context.principal) }
            }
        }
        for path in ["\(Self.base)/authentication", Self.identitySuiteAuthentication.response] {
            open.post(RouterPath(stringLiteral: path)) { request, _ in
                try await handleResponse(request, name: "authentication") { send in
                    let outcome = try await authentication.response(send)
                    var response = Wire.json(outcome.response)
                    if let cookie = outcome.setCookie { response.headers[.setCookie] = cookie }
                    return response
                }
            }
        }
    }

    /// The facets must be unprotected (UAF spec). They are added before the rate limit: clients fetch them on every
    /// operation, and the answer is a small document held in memory. The same ids are listed under every version the
    /// server speaks.
    static func addFacets(to router: Router<ServerRequestContext>, versions: [Version], facets: @escaping @Sendable () -> [String]) {
        router.get(RouterPath(Self.facetsPath)) { _, _ in
            let ids = facets()
            return Wire.json(TrustedFacets(trustedFacets: versions.map { .init(version: $0, ids: ids) }), contentType: Wire.facetsContentType)
        }
    }

    func handleRequest(
        _ request: Request, name: OperationName, _ body: @escaping (GetUAFRequest) async throws -> IssuedRequest
    ) async throws -> Response {
        try await Wire.handle(request, as: GetUAFRequest.self, name: name, onRejection: onRejection) { get in
            try await body(get).response
        } failure: { failure, get in
            Wire.json(ReturnUAFRequest(statusCode: failure.status.rawValue, op: get?.op))
        }
    }

    /// A response endpoint: `body` answers the accepted case; a rejection is a ServerResponse with the status code
    /// and its generic reason phrase.
    func handleResponse(
        _ request: Request, name: OperationName, _ body: @escaping (SendUAFResponse) async throws -> Response
    ) async throws -> Response {
        try await Wire.handle(request, as: SendUAFResponse.self, name: name, onRejection: onRejection, body) { failure, _ in
            Wire.json(ServerResponse(statusCode: failure.status.rawValue, description: failure.status.reasonPhrase))
        }
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
