import Foundation
import XCTest

@testable import MobileAuthenticationCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The Nevis SDK's conformances (sdk-api.md B.4): `Account` is `Hashable`, `Authenticator` and `UserEnrollment` are
/// `Equatable`, and the authorization and session providers are `Codable`, cookies in our `CodableCookie` form.
final class ModelConformanceTests: XCTestCase {
    private let server = Server(baseUrl: URL(string: "https://fido.example.com")!)

    private func cookie(
        name: String = "SESSION", domain: String = "fido.example.com", expires: Date? = Date(timeIntervalSince1970: 1_900_000_000)
    ) -> HTTPCookie {
        var properties: [HTTPCookiePropertyKey: Any] = [
            .name: name, .value: "s3cr3t", .domain: domain, .path: "/app", .secure: "TRUE",
            HTTPCookiePropertyKey("HttpOnly"): "TRUE",
        ]
        if let expires { properties[.expires] = expires }
        return HTTPCookie(properties: properties)!
    }

    private func roundTrip<T: Codable>(_ value: T) throws -> T { try JSONDecoder().decode(T.self, from: try JSONEncoder().encode(value)) }

    func testAccountsAreHashable() {
        let accounts: Set<AccountRecord> = [
            AccountRecord(username: "alice", server: server), AccountRecord(username: "alice", server: server),
            AccountRecord(username: "bob", server: server),
        ]
        XCTAssertEqual(accounts.count, 2)
        let any: [any Account] = Array(accounts)
        XCTAssertEqual(Set(any.map { AnyHashable($0) }).count, 2, "an app can key a dictionary by `any Account`")
    }

    func testAuthenticatorsAreEqualWhenTheyShowTheSameThing() {
        let alice = AccountRecord(username: "alice", server: server)
        let pin = AuthenticatorValue(
            aaid: "F1D0#1001", registeredAccounts: [alice], enrollment: SdkUserEnrollment(accounts: [alice]), isSupportedByHardware: true)
        XCTAssertEqual(
            pin,
            AuthenticatorValue(
                aaid: "F1D0#1001", registeredAccounts: [alice], enrollment: SdkUserEnrollment(accounts: [alice]),
                isSupportedByHardware: true))
        XCTAssertNotEqual(
            pin,
            AuthenticatorValue(
                aaid: "F1D0#1001", registeredAccounts: [], enrollment: SdkUserEnrollment(accounts: [alice]),
                isSupportedByHardware: true))
        XCTAssertNotEqual(
            pin,
            AuthenticatorValue(
                aaid: "F1D0#1001", registeredAccounts: [alice], enrollment: OsUserEnrollment(enrolled: true),
                isSupportedByHardware: true), "enrollments of different kinds differ")
    }

    func testACookieProviderKeepsEveryCookieFieldThroughCoding() throws {
        let provider = CookieAuthorizationProvider([cookie(), cookie(name: "LB", expires: nil)])
        let decoded = try roundTrip(provider)
        XCTAssertEqual(decoded.cookies.map(CodableCookie.init), provider.cookies.map(CodableCookie.init))
        XCTAssertEqual(decoded.httpHeaders.map(\.1), ["SESSION=s3cr3t; LB=s3cr3t"])
        XCTAssertEqual(decoded.cookies.first?.expiresDate, Date(timeIntervalSince1970: 1_900_000_000))
        XCTAssertNil(decoded.cookies.last?.expiresDate, "a session cookie stays one")
        XCTAssertTrue(decoded.cookies.allSatisfy { $0.isSecure && $0.isHTTPOnly })
    }

    func testTheCookieFormIsOurDocumentedContract() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(CookieSessionProvider([cookie()])), as: UTF8.self)
        XCTAssertEqual(
            text,
            #"{"cookies":[{"domain":"fido.example.com","expires":1900000000,"httpOnly":true,"name":"SESSION","path":"/app","secure":true,"value":"s3cr3t"}]}"#
        )
    }

    /// A valid encoded cookie with one field replaced must not decode.
    private func assertRefused(_ field: String, _ value: String, file: StaticString = #filePath, line: UInt = #line) throws {
        var object: [String: Any] = ["name": "SESSION", "value": "x", "domain": "fido.example.com", "path": "/", "secure": false, "httpOnly": false]
        XCTAssertNoThrow(
            try JSONDecoder().decode(
                CookieAuthorizationProvider.self,
                from: JSONSerialization.data(withJSONObject: ["cookies": [object]])), file: file, line: line)
        object[field] = value
        let json = try JSONSerialization.data(withJSONObject: ["cookies": [object]])
        XCTAssertThrowsError(try JSONDecoder().decode(CookieAuthorizationProvider.self, from: json), file: file, line: line) {
            guard case DecodingError.dataCorrupted = $0 else { return XCTFail("\($0)", file: file, line: line) }
        }
    }

    func testACookieWithoutADomainIsRefused() throws { try assertRefused("domain", "") }
    func testACookieWithAnEmptyNameIsRefused() throws { try assertRefused("name", "") }
    func testACookieNameThatIsNotATokenIsRefused() throws { try assertRefused("name", "SESSION=admin") }
    func testACookieValueThatWouldAddACookieIsRefused() throws { try assertRefused("value", "x; admin=1") }
    func testACookieValueThatWouldAddAHeaderIsRefused() throws { try assertRefused("value", "x\r\nX-Admin: 1") }

    func testTokenProvidersSurviveCoding() throws {
        XCTAssertEqual(try roundTrip(JwtAuthorizationProvider(jwt: "a.b.c")).jwt, "a.b.c")
        XCTAssertEqual(try roundTrip(JwtSessionProvider(jwt: "d.e.f")).jwt, "d.e.f")
        XCTAssertTrue(try roundTrip(JwsAuthorizationProvider()).httpHeaders.isEmpty)
        XCTAssertEqual(try roundTrip(CookieSessionProvider([cookie()])).httpHeaders.map(\.1), ["SESSION=s3cr3t"])
    }
}
