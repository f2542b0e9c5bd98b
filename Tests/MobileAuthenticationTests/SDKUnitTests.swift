import Foundation
import UAF
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

final class SDKUnitTests: XCTestCase {
    func testPinPolicyDefaultsToSixDigitsAndReportsViolations() {
        let policy = PinPolicy()
        XCTAssertEqual(policy.minLength, 6)
        XCTAssertEqual(policy.maxLength, 6)
        XCTAssertNil(policy.violation("123456"))
        XCTAssertEqual(policy.violation("12345"), "The PIN must have exactly 6 digits.")
        XCTAssertEqual(policy.violation("12a456"), "The PIN must contain digits only.")
        XCTAssertEqual(policy.violation("١٢٣٤٥٦"), "The PIN must contain digits only.", "non-ASCII digits are refused")
        XCTAssertNil(PinPolicy(minLength: 0, maxLength: 4))
        XCTAssertNil(PinPolicy(minLength: 8, maxLength: 4))
        XCTAssertEqual(PinPolicy(minLength: 4, maxLength: 8)?.violation("123"), "The PIN must have 4 to 8 digits.")
    }

    func testADecodedPinPolicyWithMinimumAboveMaximumIsATypedError() {
        // Decoded as is, it crashed at the first PIN checked (a range from 8 to 4).
        XCTAssertThrowsError(try JSONDecoder().decode(PinPolicy.self, from: Data(#"{"minLength": 8, "maxLength": 4}"#.utf8))) { error in
            XCTAssertTrue(error is DecodingError, "\(error)")
        }
        XCTAssertThrowsError(try JSONDecoder().decode(PinPolicy.self, from: Data(#"{"minLength": 0, "maxLength": 4}"#.utf8)))
        XCTAssertEqual(
            try JSONDecoder().decode(PinPolicy.self, from: Data(#"{"minLength": 4, "maxLength": 8}"#.utf8)), PinPolicy(minLength: 4, maxLength: 8))
    }

    func testCoolDownTableAndLockout() {
        let now = Date()
        XCTAssertEqual(PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 0, lastFailure: nil, now: now)), .Unlocked)
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 1, lastFailure: now, now: now)),
            .LastAttemptFailed(remainingTries: 4, coolDownTimeInSeconds: 0))
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 2, lastFailure: now, now: now)),
            .LastAttemptFailed(remainingTries: 3, coolDownTimeInSeconds: 0))
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 3, lastFailure: now, now: now)),
            .LastAttemptFailed(remainingTries: 2, coolDownTimeInSeconds: 60))
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 3, lastFailure: now, now: now.addingTimeInterval(45))),
            .LastAttemptFailed(remainingTries: 2, coolDownTimeInSeconds: 15))
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 4, lastFailure: now, now: now)),
            .LastAttemptFailed(remainingTries: 1, coolDownTimeInSeconds: 180))
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 4, lastFailure: now, now: now.addingTimeInterval(200))),
            .LastAttemptFailed(remainingTries: 1, coolDownTimeInSeconds: 0))
        XCTAssertEqual(
            PinAuthenticatorProtectionStatus(CoolDownPolicy.state(failures: 5, lastFailure: now, now: now.addingTimeInterval(1e9))), .LockedOut)
    }

    func testConfigurationDecodesTheNevisKeysIncludingFoundationsURLForm() throws {
        let json = #"""
            {"baseUrl": {"relative": "https://example.com"}, "registrationRequestPath": "/nevisfido/uaf/1.1/request/registration/",
             "authenticationRequestPath": "/auth/fidouaf", "networkTimeoutInSeconds": 30, "userInteractionTimeoutInSeconds": 120,
             "authenticationMaxRetries": 3, "authenticationRetryIntervalInSeconds": 1}
            """#
        let configuration = try JSONDecoder().decode(Configuration.self, from: Data(json.utf8))
        XCTAssertEqual(configuration.baseUrl, URL(string: "https://example.com"))
        XCTAssertEqual(configuration.authenticationRequestPath, "/auth/fidouaf")
        XCTAssertEqual(configuration.authenticationResponsePath, "/nevisfido/uaf/1.1/authentication/")
        XCTAssertEqual(configuration.networkTimeoutInSeconds, 30)
        XCTAssertEqual(configuration.userInteractionTimeoutInSeconds, 120)
        XCTAssertEqual(configuration.transportSecurity, .release)
        XCTAssertEqual(configuration.url("/a/b").absoluteString, "https://example.com/a/b")
        let plain = try JSONDecoder().decode(Configuration.self, from: Data(#"{"baseUrl": "https://h.example"}"#.utf8))
        XCTAssertEqual(plain.userInteractionTimeoutInSeconds, 240)
        XCTAssertEqual(Configuration(idSuiteHostname: "id.example").authenticationResponsePath, "/auth/fidouaf/authenticationresponse/")
        XCTAssertEqual(Configuration(authCloudHostname: "x.mauth.nevis.cloud").baseUrl.absoluteString, "https://x.mauth.nevis.cloud/_app")
    }

    func testInteractionGateResolvesOnceAndTimesOut() async {
        let gate = InteractionGate<String>()
        let outcome = await gate.wait(timeout: 5) {
            gate.resolve(.answered("first"))
            gate.resolve(.answered("second"))
            gate.resolve(.cancelled)
        }
        guard case .answered("first") = outcome else { return XCTFail("\(outcome)") }
        let silent = InteractionGate<String>()
        let timedOut = await silent.wait(timeout: 0.05) {}
        guard case .timedOut = timedOut else { return XCTFail("\(timedOut)") }
    }

    func testHeaderPairsAndAuthorizationHeaders() {
        XCTAssertEqual(["X-A", "1", "X-B", "2", "dangling"].headerPairs.map { "\($0.0)=\($0.1)" }, ["X-A=1", "X-B=2"])
        XCTAssertEqual(JwtAuthorizationProvider(jwt: "abc").httpHeaders.map(\.1), ["Bearer abc"])
    }

    func testFidoErrorCodesHaveTheUAFValues() {
        XCTAssertEqual(FidoErrorCode.insecureTransport.rawValue, 0x02)
        XCTAssertEqual(FidoErrorCode.keyDisappearedPermanently.rawValue, 0x09)
        XCTAssertEqual(FidoErrorCode.userLockout.rawValue, 0x10)
        XCTAssertFalse(FidoErrorCode.userNotResponsive.errorDescription.isEmpty)
        for code in FidoErrorCode.allCases {
            XCTAssertEqual(Int(code.uafErrorCode.rawValue), code.rawValue, "\(code) must have the UAF number")
        }
    }
}

final class AuthorizationProviderTests: XCTestCase {
    let server = URL(string: "https://fido.example.com")!

    func testTheServersJWTBecomesAJwtAuthorizationProvider() throws {
        let provider = OperationRunner.authorizationProvider(
            from: [Token(type: .httpCookie, value: "mauth_session=abc; HttpOnly; Secure"), Token(type: .jwt, value: "eyJ.a.b")], server: server)
        let jwt = try XCTUnwrap(provider as? JwtAuthorizationProvider)
        XCTAssertEqual(jwt.jwt, "eyJ.a.b")
        XCTAssertEqual(jwt.httpHeaders.map { "\($0.0): \($0.1)" }, ["Authorization: Bearer eyJ.a.b"])
    }

    func testASessionCookieAloneBecomesACookieAuthorizationProvider() throws {
        let provider = OperationRunner.authorizationProvider(
            from: [Token(type: .httpCookie, value: "mauth_session=abc123; Path=/; Max-Age=3600; HttpOnly; Secure; SameSite=Strict")], server: server)
        let cookies = try XCTUnwrap(provider as? CookieAuthorizationProvider)
        XCTAssertEqual(cookies.cookies.map(\.name), ["mauth_session"])
        XCTAssertEqual(cookies.cookies.first?.value, "abc123")
        XCTAssertEqual(cookies.httpHeaders.map { "\($0.0): \($0.1)" }, ["Cookie: mauth_session=abc123"])
    }

    func testNoTokensGiveNoProvider() {
        XCTAssertNil(OperationRunner.authorizationProvider(from: [], server: server))
    }
}

/// `AuthCloudApiRegistration`'s input rule (exactly one of enroll response and app link, neither empty) and the
/// Auth Cloud configuration preset.
final class AuthCloudApiRegistrationInputTests: XCTestCase {
    let link = "https://x.mauth.nevis.cloud/open?dispatchTokenResponse=eyJ9"

    func testTheAppLinkIsTakenFromTheEnrollResponse() throws {
        let json =
            #"{"userId":"u","username":"n","status":"new","authenticators":[],"enrollment":{"transactionId":"t","statusToken":"s","appLinkUri":"\#(link)"}}"#
        XCTAssertEqual(try AuthCloudApiRegistration.appLink(enrollResponse: json, appLinkUri: nil), link)
    }

    func testTheAppLinkIsTakenAsGiven() throws {
        XCTAssertEqual(try AuthCloudApiRegistration.appLink(enrollResponse: nil, appLinkUri: link), link)
    }

    func testBothInputsTogetherAreRefused() {
        XCTAssertThrowsError(try AuthCloudApiRegistration.appLink(enrollResponse: "{}", appLinkUri: link)) { error in
            guard case AuthCloudApiError.Unknown = error else { return XCTFail("\(error)") }
        }
    }

    func testNeitherInputIsRefused() {
        XCTAssertThrowsError(try AuthCloudApiRegistration.appLink(enrollResponse: nil, appLinkUri: nil)) { error in
            guard case AuthCloudApiError.Unknown = error else { return XCTFail("\(error)") }
        }
    }

    func testAnEmptyAppLinkIsRefused() {
        XCTAssertThrowsError(try AuthCloudApiRegistration.appLink(enrollResponse: nil, appLinkUri: "")) { error in
            guard case AuthCloudApiError.MalformedPayload = error else { return XCTFail("\(error)") }
        }
    }

    func testAnEmptyEnrollResponseIsRefused() {
        XCTAssertThrowsError(try AuthCloudApiRegistration.appLink(enrollResponse: "", appLinkUri: nil)) { error in
            guard case AuthCloudApiError.MalformedPayload = error else { return XCTFail("\(error)") }
        }
    }

    func testAnEnrollResponseWithoutAnEnrollmentIsRefused() {
        XCTAssertThrowsError(try AuthCloudApiRegistration.appLink(enrollResponse: #"{"userId":"u","username":"n"}"#, appLinkUri: nil)) { error in
            guard case AuthCloudApiError.MalformedPayload = error else { return XCTFail("\(error)") }
        }
    }

    func testTheAuthCloudBuilderUsesTheAppBaseAndItsPaths() throws {
        let configuration = try XCTUnwrap(Configuration.authCloudBuilder(hostname: "x.mauth.nevis.cloud").networkTimeoutInSeconds(10).build())
        XCTAssertEqual(configuration.baseUrl.absoluteString, "https://x.mauth.nevis.cloud/_app")
        XCTAssertEqual(configuration.registrationRequestPath, "/uaf/1.1/request/registration/")
        XCTAssertEqual(configuration.deviceResourcePath, "/devices/")
        XCTAssertEqual(configuration.networkTimeoutInSeconds, 10)
        XCTAssertNil(Configuration.authCloudBuilder(hostname: "").build())
        XCTAssertNil(Configuration.authCloudBuilder(hostname: "host/path").build())
    }

    func testARedeemURLOnTheConfiguredOriginKeepsTheConfiguredBase() throws {
        let configuration = try XCTUnwrap(Configuration.authCloudBuilder(hostname: "x.mauth.nevis.cloud").build())
        XCTAssertEqual(configuration.base(forOrigin: URL(string: "https://x.mauth.nevis.cloud")!).absoluteString, "https://x.mauth.nevis.cloud/_app")
        XCTAssertEqual(configuration.base(forOrigin: URL(string: "https://other.example")!).absoluteString, "https://other.example")
    }
}

/// The reading of a refusal: the server's `Date` against the device clock, and a missing endpoint.
final class ServerAnswerReadingTests: XCTestCase {
    private let serverTime = Date(timeIntervalSince1970: 1_780_000_000)
    private func answer(_ status: Int, date: String?) -> HTTPExchange {
        HTTPExchange(status: status, body: Data(), headers: date.map { [("Date", $0)] } ?? [])
    }
    private var serverDate: String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: serverTime)
    }

    func testADeviceClockAnHourAheadIsAnExcessOffsetOfAnHour() {
        XCTAssertEqual(ServerClock.excessOffset(of: answer(401, date: serverDate), now: serverTime.addingTimeInterval(3600)), 3600)
    }

    func testADeviceClockAnHourBehindIsANegativeOffset() {
        XCTAssertEqual(ServerClock.excessOffset(of: answer(401, date: serverDate), now: serverTime.addingTimeInterval(-3600)), -3600)
    }

    func testClocksWithinTheSkewAreNoClockProblem() {
        XCTAssertNil(ServerClock.excessOffset(of: answer(401, date: serverDate), now: serverTime.addingTimeInterval(299)))
    }

    func testAnAnswerWithoutADateIsNoClockProblem() {
        XCTAssertNil(ServerClock.excessOffset(of: answer(401, date: nil), now: serverTime.addingTimeInterval(3600)))
    }

    func testAnUnreadableDateIsNoClockProblem() {
        XCTAssertNil(ServerClock.excessOffset(of: answer(401, date: "yesterday"), now: serverTime.addingTimeInterval(3600)))
    }

    func testA404WithoutAUAFAnswerIsOperationNotSupportedByBackend() {
        guard case .OperationNotSupportedByBackend = OperationRunner.serverFailure(answer(404, date: nil), statusCode: 0) else { return XCTFail() }
        guard case .OperationNotSupportedByBackend = OperationRunner.serverFailure(answer(405, date: nil), statusCode: 0) else { return XCTFail() }
    }

    func testA404CarryingAUAFStatusStaysAFidoError() {
        guard case .FidoError(.protocolError, let cause) = OperationRunner.serverFailure(answer(404, date: nil), statusCode: 1498) else {
            return XCTFail()
        }
        XCTAssertEqual((cause as? ServerStatusError)?.statusCode, 1498)
    }
}

/// Which transport errors are TLS failures, and what each means to a user: one classification.
final class TLSFailureTests: XCTestCase {
    private struct Described: Error, CustomStringConvertible { let description: String }

    func testAnUnverifiedCertificateIsNotTrusted() {
        XCTAssertEqual(
            HTTPTransport.tlsFailure(
                Described(description: "sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED])")),
            "the server's certificate is not trusted")
    }

    func testAnotherHandshakeFailureIsNotAcceptable() {
        XCTAssertEqual(HTTPTransport.tlsFailure(Described(description: "handshakeFailed(sslError([]))")), "the server's TLS is not acceptable")
    }

    func testAConnectionFailureIsNoTLSFailure() {
        XCTAssertNil(HTTPTransport.tlsFailure(Described(description: "connectTimeout")))
    }

    func testADebugRootThatIsNoCertificateIsATypedRefusal() {
        XCTAssertThrowsError(
            try TransportSecurity.debug(trustedCertificatesPEM: ["-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----"])
                .configuredAnchors()
        ) {
            guard case .insecure(let reason) = $0 as? TransportFailure else { return XCTFail("\($0)") }
            XCTAssertEqual(reason, "certificate 1 of TransportSecurity.debug is not a PEM certificate")
        }
    }

    /// A self-signed root (openssl, P-256), only ever read.
    static let anyCertificatePEM = """
        -----BEGIN CERTIFICATE-----
        MIIBfDCCASOgAwIBAgIUBmXhkU6z1/vIqTRDJ4UIQUib0rUwCgYIKoZIzj0EAwIw
        FDESMBAGA1UEAwwJdGVzdCByb290MB4XDTI2MTEyODA4MjU1NloXDTM2MTEyNTA4
        MjU1NlowFDESMBAGA1UEAwwJdGVzdCByb290MFkwEwYHKoZIzj0CAQYIKoZIzj0D
        AQcDQgAE3CxxMh5DleeXPoe0FeiU1J9VyhZRKDIdzh1cPEHXTXIJ7Wnyyn9Urgm/
        LGY7oy1fKMA9Km+JbTBgOFK/ZLVQBKNTMFEwHQYDVR0OBBYEFKhXu2n7Y/21Ywcu
        Ci0O/N9I/G3wMB8GA1UdIwQYMBaAFKhXu2n7Y/21YwcuCi0O/N9I/G3wMA8GA1Ud
        EwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgO3/xv7etTTALSptD3mZu4ilw
        k2Pm7mZ0t6OBl6LmTWoCIASAgj7iu9m9ZD3E6jC5XwXAoibaP89990Gzk9J0Y+r1
        -----END CERTIFICATE-----
        """

    #if canImport(FoundationNetworking)
    /// libcurl's URLSession cannot add roots: a configuration that names some is refused, not quietly narrowed.
    func testURLSessionOnLinuxRefusesRootsItCannotAdd() {
        let configuration = Configuration(baseUrl: URL(string: "https://127.0.0.1:8443")!)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [Self.anyCertificatePEM]))
        XCTAssertThrowsError(try URLSessionTransport(configuration: configuration, flavor: .debug)) {
            guard case .insecure(let reason) = $0 as? TransportFailure else { return XCTFail("\($0)") }
            XCTAssertTrue(reason.hasPrefix("URLSession on this platform trusts only the system's roots"), reason)
        }
    }
    #endif
}

/// What a failed request's diagnostics keep, and what they never keep.
final class HttpErrorTests: XCTestCase {
    private let request = HTTPRequest(
        method: .POST, url: URL(string: "https://rp.example/nevisfido/uaf/1.1/request/registration/")!,
        body: Data("{}".utf8), headers: [("Authorization", "Bearer secret.jwt.value")])

    private func capture(_ body: String, headers: [(String, String)] = []) -> HttpError {
        HttpError(
            request: request, server: Server(baseUrl: URL(string: "https://rp.example")!),
            exchange: HTTPExchange(status: 401, body: Data(body.utf8), headers: headers), underlying: nil)
    }

    func testTheAnswersHeadersAreKeptByLowerCasedName() {
        let http = capture("{}", headers: [("Content-Type", "application/json"), ("X-Trace", "a"), ("x-trace", "b")])
        XCTAssertEqual(http.headers.values["content-type"], ["application/json"])
        XCTAssertEqual(http.headers.values["x-trace"], ["a", "b"])
    }

    func testASessionCookieInTheAnswerIsRedacted() {
        let http = capture("{}", headers: [("Set-Cookie", "session=abc123; Secure")])
        XCTAssertEqual(http.headers.values["set-cookie"], ["[redacted]"])
    }

    func testATokenInTheAnswersBodyIsRedacted() {
        let http = capture(#"{"statusCode":1401,"token":"abc123"}"#)
        XCTAssertFalse(http.body?.contains("abc123") ?? true, http.body ?? "")
        XCTAssertTrue(http.body?.contains("1401") ?? false, http.body ?? "")
    }

    func testTheRequestsAuthorizationIsNotKept() {
        let http = capture("{}")
        XCTAssertFalse("\(http) \(http.headers.values) \(http.body ?? "")".contains("secret.jwt.value"))
    }

    func testALongBodyIsCut() {
        let http = capture(#"{"message":""# + String(repeating: "x", count: 10_000) + #""}"#)
        XCTAssertEqual(http.body?.count, HttpError.maximumBodyLength)
    }

    func testTheDescriptionNamesTheRequestAndItsOutcome() {
        XCTAssertEqual("\(capture("{}"))", "POST https://rp.example/nevisfido/uaf/1.1/request/registration/: HTTP 401")
        let unreachable = HttpError(request: request, server: nil, exchange: nil, underlying: SDKMessage("connection refused"))
        XCTAssertEqual("\(unreachable)", "POST https://rp.example/nevisfido/uaf/1.1/request/registration/: connection refused")
    }
}
