import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Credentials the server hands out after a successful authentication, or needed to authorize a call.
public protocol AuthorizationProvider: Sendable {
    /// Headers to add to the request this provider authorizes.
    var httpHeaders: [(String, String)] { get }
}

/// Session cookies from a prior login.
public struct CookieAuthorizationProvider: AuthorizationProvider {
    public let cookies: [HTTPCookie]
    public init(_ cookies: [HTTPCookie]) { self.cookies = cookies }
    public var httpHeaders: [(String, String)] {
        cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; "))]
    }
}

/// A JWT sent as `Authorization: Bearer <jwt>`.
public struct JwtAuthorizationProvider: AuthorizationProvider {
    public let jwt: String
    public init(jwt: String) { self.jwt = jwt }
    public var httpHeaders: [(String, String)] { [("Authorization", "Bearer \(jwt)")] }
}

/// Authorization by the device itself: each request carries a fresh `Device-Signature` JWS, signed with the device
/// key of the user's dispatch target on that server (server-api §C.3). It needs no user interaction, so it serves
/// removal only: our server accepts it for deregistration (of this device's credentials) and never for enrolment.
/// The headers are computed per request by the operation, so ``httpHeaders`` is empty.
public struct JwsAuthorizationProvider: AuthorizationProvider {
    public init() {}
    public var httpHeaders: [(String, String)] { [] }
}
