import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session to continue (second factor) or that the server returned.
public protocol SessionProvider: Sendable {
    var httpHeaders: [(String, String)] { get }
}

public struct CookieSessionProvider: SessionProvider {
    public let cookies: [HTTPCookie]
    public init(_ cookies: [HTTPCookie]) { self.cookies = cookies }
    public var httpHeaders: [(String, String)] { CookieAuthorizationProvider(cookies).httpHeaders }
}

public struct JwtSessionProvider: SessionProvider {
    public let jwt: String
    public init(jwt: String) { self.jwt = jwt }
    public var httpHeaders: [(String, String)] { [("Authorization", "Bearer \(jwt)")] }
}
