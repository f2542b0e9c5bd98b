import Foundation
import HummingbirdTesting
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The web demo (`--demo-site`) acts like an access-key holder, but reaches only the users it created: a visitor
/// cannot add a key to, or push approvals to, a user of the same server.
final class HostileClientDemoSiteTests: XCTestCase {
    /// A key for `username` registered in band (not through the demo).
    static func registerInBand(_ username: String, _ stores: Stores) async throws {
        try await stores.registrations.insert([
            RegistrationRecord(
                username: username, aaid: "F1D0#1001", keyID: "key-\(username)", publicKey: [4, 1, 2, 3], publicKeyEncoding: .eccX962DER,
                signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0, registrationCounter: 1, authenticatorVersion: 1,
                attestationType: .basicSurrogate, createdAt: Date())
        ])
    }

    func testTheDemoEnrolsNoKeyForAUserItDidNotCreate() async throws {
        try await DemoSiteTests.withDemo { client, stores in
            try await Self.registerInBand("grace", stores)
            let inBand = try await DemoSiteTests.post(client, "/demo/signup", "username=grace")
            XCTAssertEqual(inBand.status, .conflict)
            XCTAssertTrue(inBand.html.contains("username is taken"), inBand.html)
            _ = try await stores.authCloudUsers.findOrCreate(username: "hal", now: Date())
            let apiUser = try await DemoSiteTests.post(client, "/demo/signup", "username=hal")
            XCTAssertEqual(apiUser.status, .conflict, "a user of the API is not the demo's")
        }
    }

    func testTheDemoSendsNoApprovalToAUserItDidNotCreate() async throws {
        try await DemoSiteTests.withDemo { client, stores in
            try await Self.registerInBand("grace", stores)
            let page = try await DemoSiteTests.post(client, "/demo/login", "username=grace&channel=app&message=Pay")
            XCTAssertEqual(page.status, .notFound)
            XCTAssertTrue(page.html.contains("No such user"), page.html)
        }
    }

    func testTheDemoReachesTheUsersItCreated() async throws {
        try await DemoSiteTests.withDemo { client, stores in
            let first = try await DemoSiteTests.post(client, "/demo/signup", "username=ivy")
            XCTAssertEqual(first.status, .ok)
            let again = try await DemoSiteTests.post(client, "/demo/signup", "username=ivy")
            XCTAssertEqual(again.status, .ok, "the demo may enrol its own user again")
            try await Self.registerInBand("ivy", stores)
            let login = try await DemoSiteTests.post(client, "/demo/login", "username=ivy&channel=app&message=Pay")
            XCTAssertEqual(login.status, .ok, login.html)
        }
    }
}
