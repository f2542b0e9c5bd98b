import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Credentials the server hands out after a successful authentication, or needed to authorize a call. `Codable`, as
/// in the Nevis SDK, so an app can keep one (in the Keychain) for a later call; cookies encode as
/// ``CodableCookie`` values.
public protocol AuthorizationProvider: Codable, Sendable {
    /// Headers to add to the request this provider authorizes.
    var httpHeaders: [(String, String)] { get }
}

/// Session cookies from a prior login.
public struct CookieAuthorizationProvider: AuthorizationProvider {
    public let cookies: [HTTPCookie]
    public init(_ cookies: [HTTPCookie]) { self.cookies = cookies }
    public var httpHeaders: [(String, String)] { CodableCookie.header(cookies) }

    public init(from decoder: any Decoder) throws { cookies = try CodableCookie.cookies(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try CodableCookie.encode(cookies, to: encoder) }
}

/// A cookie as the providers encode it (our contract, since `HTTPCookie` is not `Codable`): name, value, domain,
/// path, the expiry in seconds since 1970 (absent for a session cookie), and the `Secure` and `HttpOnly` flags.
public struct CodableCookie: Codable, Sendable, Equatable {
    public var name: String
    public var value: String
    public var domain: String
    public var path: String
    public var expires: Double?
    public var secure: Bool
    public var httpOnly: Bool

    public init(_ cookie: HTTPCookie) {
        name = cookie.name
        value = cookie.value
        domain = cookie.domain
        path = cookie.path
        expires = cookie.expiresDate?.timeIntervalSince1970
        secure = cookie.isSecure
        httpOnly = cookie.isHTTPOnly
    }

    /// The `HTTPCookie`, or nil when the fields cannot make one that is safe to send: an empty domain, a name that
    /// is not an RFC 6265 token, or a value outside its cookie-octets (a `;`, a space or a line break would let a
    /// stored provider add cookies or headers to every request it authorizes).
    public var cookie: HTTPCookie? {
        guard !domain.isEmpty, !name.isEmpty, name.unicodeScalars.allSatisfy(Self.isTokenCharacter),
            value.unicodeScalars.allSatisfy(Self.isCookieOctet)
        else { return nil }
        var properties: [HTTPCookiePropertyKey: Any] = [.name: name, .value: value, .domain: domain, .path: path]
        if let expires { properties[.expires] = Date(timeIntervalSince1970: expires) }
        if secure { properties[.secure] = "TRUE" }
        if httpOnly { properties[HTTPCookiePropertyKey("HttpOnly")] = "TRUE" }
        return HTTPCookie(properties: properties)
    }

    /// RFC 6265 §4.1.1 (token, RFC 2616 §2.2): visible ASCII except separators.
    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value > 0x20 && scalar.value < 0x7F && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains(scalar)
    }

    /// RFC 6265 §4.1.1 cookie-octet: visible ASCII except `"`, `,`, `;` and `\`.
    static func isCookieOctet(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value > 0x20 && scalar.value < 0x7F && !"\",;\\".unicodeScalars.contains(scalar)
    }

    /// The `Cookie` header of `cookies`.
    static func header(_ cookies: [HTTPCookie]) -> [(String, String)] {
        cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; "))]
    }

    private enum ProviderKeys: String, CodingKey { case cookies }

    /// A cookie provider's form: `{"cookies": [CodableCookie]}`.
    static func encode(_ cookies: [HTTPCookie], to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: ProviderKeys.self)
        try container.encode(cookies.map(CodableCookie.init), forKey: .cookies)
    }

    /// The cookies of a provider's form; one Foundation refuses is a `DecodingError`, never a cookie dropped in silence.
    static func cookies(from decoder: any Decoder) throws -> [HTTPCookie] {
        let container = try decoder.container(keyedBy: ProviderKeys.self)
        return try container.decode([CodableCookie].self, forKey: .cookies).map { coded in
            guard let cookie = coded.cookie else {
                throw DecodingError.dataCorruptedError(forKey: .cookies, in: container, debugDescription: "the cookie \(coded.name) is not valid")
            }
            return cookie
        }
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
