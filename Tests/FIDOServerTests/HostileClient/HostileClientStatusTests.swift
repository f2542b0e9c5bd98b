import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The open status service (`POST /nevisfido/status`, reached by anyone with a session id or an Auth Cloud status
/// token) never hands out what redeems the operation.
final class HostileClientStatusTests: XCTestCase {
    let relyingParty = LocalRelyingParty()

    func testTheStatusOfADispatchedLinkNamesTheDispatcherButNotTheLink() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, _ in
            for dispatcher in ["link", "png-qr-code", "link-png-qr-code"] {
                struct Body: Encodable {
                    var dispatcher: String
                    var getUafRequest = GetUAFRequest(op: .authentication, context: nil)
                }
                struct Answer: Decodable {
                    var token: String
                    var sessionId: String
                }
                let answer = try await client.execute(
                    uri: "/nevisfido/token/dispatch/authentication", method: .post,
                    headers: [.contentType: "application/json"],
                    body: ByteBuffer(bytes: try JSONEncoder().encode(Body(dispatcher: dispatcher)))
                ) { response in
                    try JSONDecoder().decode(Answer.self, from: Data(buffer: response.body))
                }
                let status = try await client.execute(
                    uri: "/nevisfido/status", method: .post, headers: [.contentType: "application/json"],
                    body: ByteBuffer(string: #"{"sessionId":"\#(answer.sessionId)"}"#)
                ) { response in
                    String(buffer: response.body)
                }
                struct Status: Decodable {
                    struct Token: Decodable {
                        struct Information: Decodable {
                            var name: String
                            var response: String?
                        }
                        var dispatcherInformation: Information?
                    }
                    var status: String
                    var tokenInformation: Token?
                }
                let decoded = try JSONDecoder().decode(Status.self, from: Data(status.utf8))
                XCTAssertEqual(decoded.status, "tokenCreated")
                XCTAssertEqual(decoded.tokenInformation?.dispatcherInformation?.name, dispatcher)
                XCTAssertNil(decoded.tokenInformation?.dispatcherInformation?.response, dispatcher)
                XCTAssertFalse(status.contains(answer.token), "the status of a \(dispatcher) dispatch carries its token")
            }
        }
    }
}
