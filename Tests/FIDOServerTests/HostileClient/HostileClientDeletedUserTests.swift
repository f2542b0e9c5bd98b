import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Deleting a user (`DELETE /api/v1/users/{id}`) leaves nothing that can still enrol a key for her: her unredeemed
/// enrollment links answer "expired", and a registration request issued before the deletion cannot be answered.
final class HostileClientDeletedUserTests: XCTestCase {
    struct Enrolled: Decodable {
        struct Enrollment: Decodable { var appLinkUri: String }
        var userId: String
        var enrollment: Enrollment
    }

    /// dave, enrolled through the Auth Cloud API: his user id and the enrollment link's token.
    static func enrollDave(_ loopback: InProcessServer, key: String) async throws -> (userId: String, token: String) {
        let answer = try await loopback.exchange(
            .POST, "/api/v1/users/enroll", body: Data(#"{"username":"dave"}"#.utf8),
            contentType: "application/json", headers: [("Authorization", "Bearer \(key)")])
        XCTAssertEqual(answer.status, 200, String(decoding: answer.body, as: UTF8.self))
        let enrolled = try JSONDecoder().decode(Enrolled.self, from: answer.body)
        let parameter = URLComponents(string: enrolled.enrollment.appLinkUri)?.queryItems?.first { $0.name == DispatchPayload.linkParameter }?.value
        // A new user has no device key yet, so the server cannot encrypt the link: anything else is a wrong result.
        guard case .plain(let content, _) = try DispatchPayload.parse(base64URL: try XCTUnwrap(parameter)) else {
            struct EncryptedEnrollmentLink: Error {}
            XCTFail("an enrollment link for a new user came encrypted")
            throw EncryptedEnrollmentLink()
        }
        return (enrolled.userId, content.token)
    }

    static func delete(_ loopback: InProcessServer, userId: String, key: String) async throws {
        let answer = try await loopback.exchange(.DELETE, "/api/v1/users/\(userId)", body: nil, headers: [("Authorization", "Bearer \(key)")])
        XCTAssertTrue((200..<300).contains(answer.status), "\(answer.status)")
    }

    static func redeem(_ loopback: InProcessServer, _ token: String) async throws -> ReturnUAFRequest {
        try await loopback.post("/nevisfido/token/redeem/registration", ["token": token], as: ReturnUAFRequest.self)
    }

    func testAnEnrollmentLinkOfADeletedUserAnswersExpired() async throws {
        try await InProcessServer.with { loopback in
            let key = try await loopback.server.stores.accessKeys.create(name: "backend", now: Date()).key
            let (userId, token) = try await Self.enrollDave(loopback, key: key)
            try await Self.delete(loopback, userId: userId, key: key)
            let redeemed = try await Self.redeem(loopback, token)
            XCTAssertEqual(redeemed.statusCode, 1408)
            XCTAssertNil(redeemed.uafRequest)
        }
    }

    func testARegistrationRequestIssuedBeforeTheDeletionCannotBeAnswered() async throws {
        try await InProcessServer.with { loopback in
            let key = try await loopback.server.stores.accessKeys.create(name: "backend", now: Date()).key
            let (userId, token) = try await Self.enrollDave(loopback, key: key)
            let redeemed = try await Self.redeem(loopback, token)
            XCTAssertEqual(redeemed.statusCode, 1200)
            let request = try UAFMessageCodec.decode(RegistrationRequest.self, from: try XCTUnwrap(redeemed.uafRequest))[0]
            try await Self.delete(loopback, userId: userId, key: key)
            var authenticator = SoftwareAuthenticator()
            let answer = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(answer.statusCode, 1491)
            let keys = try await loopback.server.stores.registrations.registrations(username: "dave")
            XCTAssertTrue(keys.isEmpty, "a key was enrolled for a deleted user")
        }
    }
}
