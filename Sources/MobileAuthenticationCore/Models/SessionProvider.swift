import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A session to continue (second factor) or that the server returned. `Codable`, as in the Nevis SDK (cookies as
/// ``CodableCookie`` values).
public protocol SessionProvider: Codable, Sendable {
    var httpHeaders: [(String, String)] { get }
}

public struct CookieSessionProvider: SessionProvider {
    public let cookies: [HTTPCookie]
    public init(_ cookies: [HTTPCookie]) { self.cookies = cookies }
    public var httpHeaders: [(String, String)] { CodableCookie.header(cookies) }

    public init(from decoder: any Decoder) throws { cookies = try CodableCookie.cookies(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try CodableCookie.encode(cookies, to: encoder) }
}

public struct JwtSessionProvider: SessionProvider {
    public let jwt: String
    public init(jwt: String) { self.jwt = jwt }
    public var httpHeaders: [(String, String)] { [("Authorization", "Bearer \(jwt)")] }
}
