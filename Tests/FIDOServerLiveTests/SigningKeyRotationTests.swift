import Crypto
import FIDOServerTesting
import FIDOSimulation
import Foundation
import JOSE
import Primitives
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// A token-signing key rotation on two instances sharing PostgreSQL, as `mauth admin signing-key add` and `activate`
/// make it: during the switch every token either instance signs verifies on the other, new tokens carry the new
/// `kid` on both, the old key's tokens verify until they expire, and the old key then leaves the JWKS.
final class SigningKeyRotationTests: XCTestCase {
    var instances: [LoopbackServer] = []

    override func tearDown() async throws {
        for instance in instances { try? await instance.shutdown() }
    }

    /// The `kid` in a token's header.
    func kid(_ token: String) throws -> String {
        let header = try XCTUnwrap(Base64URL.decode(String(token.split(separator: ".")[0])))
        return try XCTUnwrap(try JSONDecoder().decode([String: String].self, from: header)["kid"])
    }

    func login(_ server: LoopbackServer, _ authenticator: inout SoftwareAuthenticator, username: String) async throws -> String {
        let (_, request) = try await server.authenticationRequest(username: username)
        let answer = try await server.send(
            "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(request), serverAppID: server.appID))
        XCTAssertEqual(answer.statusCode, 1200, answer.description ?? "")
        return try XCTUnwrap(answer.additionalTokens?.first { $0.type == .jwt }?.value)
    }

    /// Whether `server` takes `token` as the user's credential (the user's dispatch targets, listed with it: a read
    /// that leaves nothing behind; the user has none, so an accepted credential reads 404, a refused one 401).
    func accepts(_ server: LoopbackServer, _ token: String, username: String) async -> Bool {
        let answer = try? await server.exchange(
            .GET, "/nevisfido/token/dispatch/targets?username=\(username)", body: nil,
            headers: [("Authorization", "Bearer \(token)"), ("Accept", "application/json")])
        return answer?.status == 404
    }

    func published(_ server: LoopbackServer) async throws -> [String] {
        let answer = try await server.exchange(.GET, "/.well-known/jwks.json", body: nil)
        return try JSONDecoder().decode(JWKSDocument.self, from: answer.body).keys.compactMap(\.kid)
    }

    func testARotationOnTwoInstancesFailsNothingAndTheOldKeyVerifiesUntilItsTokensExpire() async throws {
        let url = try PostgresStoreTests.postgresURL()
        let admin = try await PostgresStoreTests.emptiedStores(url: url)
        defer { Task { try? await admin.database.close() } }
        var configuration = LoopbackServer.configuration(database: .postgres(url: url, poolSize: 4))
        // One appID for both, as behind a balancer.
        configuration.appID = "https://mauth.rotation.example/nevisfido/uaf/1.1/facets"
        instances = [try await LoopbackServer(configuration: configuration), try await LoopbackServer(configuration: configuration)]
        let (a, b) = (instances[0], instances[1])
        let username = "rotation-\(UUID().uuidString.prefix(8))"
        var authenticator = SoftwareAuthenticator()
        let request = try await a.registrationRequest(username: username)
        let registered = try await a.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: a.appID))
        XCTAssertEqual(registered.statusCode, 1200)

        let old = try await login(a, &authenticator, username: username)
        let oldKid = try kid(old)
        XCTAssertEqual(b.server.tokenIssuer.kid, oldKid, "both instances sign with the one active key")
        let acceptedBefore = await accepts(b, old, username: username)
        XCTAssertTrue(acceptedBefore)

        // The rotation, activated at once (the harder case: an instance may meet the new kid before its next refresh).
        let key = P256.Signing.PrivateKey()
        let newKid = JOSE.JWK(publicKey: key.publicKey).thumbprint
        try await admin.signingKeys.add(kid: newKid, pem: key.pemRepresentation, now: Date())
        try await admin.signingKeys.activate(kid: newKid, now: Date())

        // One instance reads the ring first and signs with the new key; the other, before its own next refresh, meets
        // the new kid in a token and reads the ring at once rather than take the token for a relying party's.
        try await a.server.tokenIssuer.refresh(now: a.clock.now)
        let first = try await login(a, &authenticator, username: username)
        XCTAssertEqual(try kid(first), newKid)
        let firstOnB = await accepts(b, first, username: username)
        XCTAssertTrue(firstOnB, "the instance that had not refreshed yet refused the new key's token")

        // Until both instances sign with the new key (at most one refresh, 10 s), every token either signs verifies
        // on the other.
        var signedWith: [String: Set<String>] = ["a": [], "b": []]
        let switched = try await eventually(within: .seconds(3 * TokenIssuer.refreshInterval), every: .milliseconds(250)) {
            for (name, signer, other) in [("a", a, b), ("b", b, a)] {
                let token = try await login(signer, &authenticator, username: username)
                let signingKid = try kid(token)
                signedWith[name, default: []].insert(signingKid)
                let accepted = await accepts(other, token, username: username)
                XCTAssertTrue(accepted, "a token \(name) signed with \(signingKid) was refused by the other instance")
            }
            return a.server.tokenIssuer.kid == newKid && b.server.tokenIssuer.kid == newKid
        }
        XCTAssertTrue(switched, "the instances never both signed with the new key")
        XCTAssertEqual(signedWith.values.reduce(Set<String>()) { $0.union($1) }.subtracting([oldKid, newKid]), [])
        let fresh = try await login(b, &authenticator, username: username)
        XCTAssertEqual(try kid(fresh), newKid)
        // The old key's token still verifies on both, and both publish both keys.
        let oldOnA = await accepts(a, old, username: username)
        let oldOnB = await accepts(b, old, username: username)
        XCTAssertTrue(oldOnA && oldOnB)
        let publishedDuring = try await published(a)
        XCTAssertEqual(Set(publishedDuring), [oldKid, newKid])
        XCTAssertEqual(publishedDuring.first, newKid, "the signing key comes first")

        // Past the old tokens' lifetime (300 s) and the instances' refresh margin, the old key leaves the JWKS.
        for instance in instances { instance.clock.advance(TokenIssuer.keepRetiredFor(lifetime: 300) + 1) }
        for instance in instances { try await instance.server.tokenIssuer.refresh(now: instance.clock.now) }
        let publishedAfter = try await published(b)
        XCTAssertEqual(publishedAfter, [newKid])
        let oldAfter = await accepts(a, old, username: username)
        XCTAssertFalse(oldAfter)
    }
}
