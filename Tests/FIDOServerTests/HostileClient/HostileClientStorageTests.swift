import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// What a caller without credentials can make the server store through the open endpoints
/// (`request/authentication`, `dispatch/authentication`): a context of at most `limits.anonymousContextBytes`
/// and no image transactions. A caller who presents a credential for the user keeps the full limits; one who
/// presents an invalid credential is refused, never treated as anonymous.
final class HostileClientStorageTests: XCTestCase {
    let relyingParty = LocalRelyingParty()
    static let inBand = "/nevisfido/uaf/1.1/request/authentication"
    static let dispatch = "/nevisfido/token/dispatch/authentication"

    /// A usernameless context padded with a member the server does not read, `bytes` long in all.
    static func paddedContext(bytes: Int) -> String {
        let shell = #"{"junk":""}"#
        return #"{"junk":""# + String(repeating: "x", count: bytes - shell.utf8.count) + #""}"#
    }

    /// A usernameless context with one small image/png transaction: a real 1 × 1 PNG (1-bit greyscale) and its
    /// characteristics.
    static let imageContext: String = {
        let png = try! PNGImage.encode(width: 1, height: 1) { _, _ in false }
        return #"{"transaction":[{"contentType":"image/png","content":""# + Base64URL.encode(png) + #"","tcDisplayPNGCharacteristics":"#
            + #"{"width":1,"height":1,"bitDepth":1,"colorType":0,"compression":0,"filter":0,"interlace":0}}]}"#
    }()

    static func inBandBody(_ context: String) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONEncoder().encode(GetUAFRequest(op: .authentication, context: context)))
    }

    static func dispatchBody(_ context: String) throws -> ByteBuffer {
        struct Body: Encodable {
            var dispatcher = "link"
            var getUafRequest: GetUAFRequest
        }
        return ByteBuffer(bytes: try JSONEncoder().encode(Body(getUafRequest: GetUAFRequest(op: .authentication, context: context))))
    }

    /// The UAF status code of an in-band request's answer.
    static func inBandStatus(
        _ client: any TestClientProtocol, _ context: String, headers: HTTPFields = [:]
    ) async throws -> (HTTPResponse.Status, Int?) {
        try await client.execute(uri: inBand, method: .post, headers: headers, body: try inBandBody(context)) { response in
            (response.status, try? JSONDecoder().decode(ReturnUAFRequest.self, from: Data(buffer: response.body)).statusCode)
        }
    }

    static func dispatchStatus(_ client: any TestClientProtocol, _ context: String, headers: HTTPFields = [:]) async throws -> HTTPResponse.Status {
        var headers = headers
        headers[.contentType] = "application/json"
        return try await client.execute(uri: dispatch, method: .post, headers: headers, body: try dispatchBody(context)) { $0.status }
    }

    /// A relying-party token for alice.
    func aliceBearer() async throws -> HTTPFields {
        [.authorization: "Bearer \(try await relyingParty.token(for: "alice"))"]
    }

    func testAnAnonymousInBandContextAtTheLimitIsIssued() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (status, code) = try await Self.inBandStatus(client, Self.paddedContext(bytes: 4096))
            XCTAssertEqual(status, .ok)
            XCTAssertEqual(code, 1200)
        }
    }

    func testAnAnonymousInBandContextOverTheLimitIsRefused() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (_, code) = try await Self.inBandStatus(client, Self.paddedContext(bytes: 4097))
            XCTAssertEqual(code, 1400)
        }
    }

    func testAnInBandContextOverTheAnonymousLimitIsIssuedToACallerWithCredentials() async throws {
        let bearer = try await aliceBearer()
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (_, code) = try await Self.inBandStatus(client, Self.paddedContext(bytes: 60_000), headers: bearer)
            XCTAssertEqual(code, 1200)
        }
    }

    func testAnAnonymousInBandImageTransactionIsRefused() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (_, code) = try await Self.inBandStatus(client, Self.imageContext)
            XCTAssertEqual(code, 1401)
        }
    }

    func testAnInBandImageTransactionIsIssuedToACallerWithCredentials() async throws {
        let bearer = try await aliceBearer()
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (_, code) = try await Self.inBandStatus(client, Self.imageContext, headers: bearer)
            XCTAssertEqual(code, 1200)
        }
    }

    func testAnInvalidCredentialOnAnOpenEndpointIsRefusedNotTreatedAsAnonymous() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (status, _) = try await Self.inBandStatus(client, "{}", headers: [.authorization: "Bearer forged.token.value"])
            XCTAssertEqual(status, .unauthorized)
        }
    }

    func testAStaleSessionCookieDoesNotStopAnAnonymousLogin() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (status, code) = try await Self.inBandStatus(client, "{}", headers: [.cookie: "mauth_session=expired-or-unknown"])
            XCTAssertEqual(status, .ok)
            XCTAssertEqual(code, 1200)
        }
    }

    func testAnAnonymousDispatchContextOverTheLimitIsRefused() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let status = try await Self.dispatchStatus(client, Self.paddedContext(bytes: 4097))
            XCTAssertEqual(status, .badRequest)
        }
    }

    func testAnAnonymousDispatchImageTransactionIsRefused() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let status = try await Self.dispatchStatus(client, Self.imageContext)
            XCTAssertEqual(status, .badRequest)
        }
    }

    func testADispatchContextOverTheAnonymousLimitIsAcceptedFromACallerWithCredentials() async throws {
        let bearer = try await aliceBearer()
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let status = try await Self.dispatchStatus(client, Self.paddedContext(bytes: 8000), headers: bearer)
            XCTAssertEqual(status, .ok)
        }
    }

    /// A credential for another user does not lift the limits for a request that names a user.
    func testACredentialForAnotherUserKeepsTheAnonymousLimits() async throws {
        let bearer = try await aliceBearer()
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let context = #"{"username":"bob","junk":""# + String(repeating: "x", count: 5000) + #""}"#
            let (_, code) = try await Self.inBandStatus(client, context, headers: bearer)
            XCTAssertEqual(code, 1400)
        }
    }

    // MARK: What an image/png transaction must be

    func testAnImageTransactionThatIsNotAPNGIsRefused() async throws {
        let bearer = try await aliceBearer()
        let context = Self.imageContext.replacingOccurrences(of: #""content":""#, with: #""content":"R0lGODlh"#)  // a GIF's start
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (status, code) = try await Self.inBandStatus(client, context, headers: bearer)
            XCTAssertEqual(status, .ok, "a UAF refusal, in the body")
            XCTAssertEqual(code, 1400)
        }
    }

    func testAnImageTransactionOfAnotherSizeThanDeclaredIsRefused() async throws {
        let bearer = try await aliceBearer()
        let context = Self.imageContext.replacingOccurrences(of: #""width":1"#, with: #""width":2"#)
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            let (status, code) = try await Self.inBandStatus(client, context, headers: bearer)
            XCTAssertEqual(status, .ok, "a UAF refusal, in the body")
            XCTAssertEqual(code, 1400)
        }
    }

}
