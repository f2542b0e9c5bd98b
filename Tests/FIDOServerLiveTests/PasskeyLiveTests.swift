import FIDOServerTesting
import FIDOSimulation
import Foundation
import NIOHTTP1
import NevisProtocol
import Primitives
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// Passkeys over real TLS on loopback: the whole ceremony on SQLite and PostgreSQL, two instances sharing one
/// database (a challenge is answered once, on whichever instance), and the refusals and authorization rules a
/// browser and an attacker meet.
final class PasskeyLiveTests: XCTestCase {
    static let origin = "https://bank.example"
    let suffix = String(UUID().uuidString.prefix(8))

    static func configuration(
        _ database: ServerConfiguration.Database = .sqliteInMemory,
        _ change: (inout ServerConfiguration.FIDO2) -> Void = { _ in }
    ) -> ServerConfiguration {
        var configuration = LoopbackServer.configuration(database: database)
        var fido2 = ServerConfiguration.FIDO2(rpId: "bank.example", origins: [origin])
        change(&fido2)
        configuration.fido2 = fido2
        return configuration
    }

    func text(_ answer: TestAnswer) -> String { String(decoding: answer.body, as: UTF8.self) }

    /// Registration, a sign-in by username, one without, and a replay, on `server`.
    func wholeCeremony(on server: LoopbackServer, username: String) async throws {
        var phone = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false, counts: true)
        let registered = try await server.registerPasskey(&phone, username: username)
        XCTAssertEqual(registered.status, 200, text(registered))
        let byName = try await server.signInWithPasskey(&phone, username: username)
        XCTAssertEqual(byName.status, 200, text(byName))
        XCTAssertNotNil(byName.headers.first(name: "Set-Cookie"))
        let options = try await server.passkeyRequestOptions(username: "")
        let credential = try LoopbackServer.assertion(&phone, for: options)
        let withoutName = try await server.fido2(FIDO2API.assertionResultPath, credential)
        XCTAssertEqual(withoutName.status, 200, text(withoutName))
        let claims = try await server.server.tokenIssuer.verify(try XCTUnwrap(try fido2Response(withoutName).token), now: server.clock.now)
        XCTAssertEqual(claims.sub, username)
        XCTAssertEqual(claims.method, "passkey")
        let replay = try await server.fido2(FIDO2API.assertionResultPath, credential)
        XCTAssertEqual(replay.status, 400)
        let stored = try await server.server.stores.passkeys.passkeys(username: username)
        XCTAssertEqual(stored.map(\.signCount), [3])
    }

    func testTheWholeCeremonyOverTLSOnSQLite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-passkeys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await LoopbackServer.with(Self.configuration(.sqlite(path: directory.appendingPathComponent("p.sqlite").path))) { server in
            try await wholeCeremony(on: server, username: "ann-\(suffix)")
        }
    }

    func testTheWholeCeremonyOverTLSOnPostgreSQL() async throws {
        let url = try PostgresStoreTests.postgresURL()
        try await LoopbackServer.with(Self.configuration(.postgres(url: url, poolSize: 4))) { server in
            try await wholeCeremony(on: server, username: "ann-\(suffix)")
        }
    }

    /// Her passkeys managed over TLS: the status of a ceremony read on the other instance, the list, a rename and a
    /// removal with her session, the last one kept.
    func managedPasskeys(first: LoopbackServer, second: LoopbackServer, username: String) async throws {
        var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
        var laptop = SoftwarePasskeyAuthenticator(origin: Self.origin)
        try await first.registerPasskey(&phone, username: username)
        try await first.registerPasskey(&laptop, username: username)
        let options = try await first.passkeyRequestOptions(username: username)
        let waiting = try await second.passkeyStatus(options.fido2SessionId)
        XCTAssertEqual(waiting.status, .initialized)
        let signedIn = try await second.fido2(FIDO2API.assertionResultPath, try LoopbackServer.assertion(&laptop, for: options))
        XCTAssertEqual(signedIn.status, 200, text(signedIn))
        let succeeded = try await first.passkeyStatus(options.fido2SessionId)
        XCTAssertEqual(succeeded.status, .succeeded)
        let cookie = cookieHeader(try XCTUnwrap(signedIn.headers.first(name: "Set-Cookie")))
        let path = FIDO2API.passkeysPath
        let phoneID = Base64URL.encode(phone.credentials[0].id)
        let laptopID = Base64URL.encode(laptop.credentials[0].id)
        let renamed = try await second.exchange(
            .PATCH, "\(path)/\(phoneID)", body: Data(#"{"name":"Phone"}"#.utf8), contentType: "application/json", headers: [cookie])
        XCTAssertEqual(renamed.status, 200, text(renamed))
        // The laptop's own session removes the laptop's passkey, and ends with it.
        let removal = try await first.exchange(.DELETE, "\(path)/\(laptopID)", body: nil, contentType: "application/json", headers: [cookie])
        XCTAssertEqual(removal.status, 200, text(removal))
        let ended = try await second.exchange(.GET, path, body: nil, contentType: "application/json", headers: [cookie])
        XCTAssertEqual(ended.status, 401, "the laptop's session ended with the laptop's passkey")
        let (phoneSession, _) = try await signIn(first, &phone, username)
        let listed = try JSONDecoder().decode(
            FIDO2API.PasskeyList.self,
            from: try await second.exchange(.GET, path, body: nil, contentType: "application/json", headers: [phoneSession]).body)
        XCTAssertEqual(listed.allAcceptedCredentialIds, [phoneID])
        XCTAssertEqual(listed.passkeys.first?.name, "Phone")
        let last = try await second.exchange(.DELETE, "\(path)/\(phoneID)", body: nil, contentType: "application/json", headers: [phoneSession])
        XCTAssertEqual(last.status, 409, text(last))
    }

    func signIn(
        _ server: LoopbackServer, _ authenticator: inout SoftwarePasskeyAuthenticator, _ username: String
    ) async throws -> (
        (String, String), String
    ) {
        let answer = try await server.signInWithPasskey(&authenticator, username: username)
        XCTAssertEqual(answer.status, 200, text(answer))
        return (cookieHeader(try XCTUnwrap(answer.headers.first(name: "Set-Cookie"))), try XCTUnwrap(try fido2Response(answer).token))
    }

    func testHerPasskeysAreManagedOverTLSOnSQLite() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-passkeys-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await LoopbackServer.with(Self.configuration(.sqlite(path: directory.appendingPathComponent("p.sqlite").path))) { server in
            try await managedPasskeys(first: server, second: server, username: "meg-\(suffix)")
        }
    }

    func testHerPasskeysAreManagedAcrossTwoInstancesOnPostgreSQL() async throws {
        try await withTwoInstances { first, second in
            try await managedPasskeys(first: first, second: second, username: "meg-\(suffix)")
        }
    }

    /// The Auth Cloud API's `fido2` channel: the backend enrolls and asks for approvals on `first` with its access key,
    /// the page's answers reach `second` (a balancer's choice), and the status token is read where it was issued.
    func authCloudPasskeys(first: LoopbackServer, second: LoopbackServer, username: String) async throws {
        let key = try await first.server.stores.accessKeys.create(name: "backend", now: Date()).key
        func call(_ path: String, _ body: [String: Any], key: String?) async throws -> [String: Any] {
            var headers = [("Accept", "application/json")]
            if let key { headers.append(("Authorization", "Bearer \(key)")) }
            let answer = try await first.exchange(
                .POST, path, body: try JSONSerialization.data(withJSONObject: body), contentType: "application/json", headers: headers)
            XCTAssertEqual(answer.status, 200, "\(path): \(text(answer))")
            return try XCTUnwrap(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
        }
        func options<T: Decodable>(_ object: Any?, as type: T.Type) throws -> T {
            try JSONDecoder().decode(T.self, from: try JSONSerialization.data(withJSONObject: try XCTUnwrap(object)))
        }
        var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
        let enrolled = try await call("/api/v1/users/enroll", ["username": username, "channel": "fido2"], key: key)
        let enrollment = try XCTUnwrap(enrolled["enrollment"] as? [String: Any])
        let creation = try options(enrollment["fido2Options"], as: FIDO2API.CreationOptions.self)
        let registered = try await second.fido2(FIDO2API.attestationResultPath, try LoopbackServer.attestation(&phone, for: creation))
        XCTAssertEqual(registered.status, 200, text(registered))
        let enrollStatus = try await call("/api/v1/status", ["statusToken": try XCTUnwrap(enrollment["statusToken"])], key: nil)
        XCTAssertEqual(enrollStatus["status"] as? String, "succeeded")

        // Without a username (autofill): the status learns who signed in.
        let approval = try await call("/api/v1/approval", ["channel": "fido2"], key: key)
        let request = try options(approval["fido2Options"], as: FIDO2API.RequestOptions.self)
        let signedIn = try await second.fido2(FIDO2API.assertionResultPath, try LoopbackServer.assertion(&phone, for: request))
        XCTAssertEqual(signedIn.status, 200, text(signedIn))
        let approved = try await call("/api/v1/status", ["statusToken": try XCTUnwrap(approval["statusToken"])], key: nil)
        XCTAssertEqual(approved["status"] as? String, "succeeded")
        XCTAssertEqual(approved["username"] as? String, username)
        XCTAssertEqual(approved["userId"] as? String, enrolled["userId"] as? String)
        XCTAssertNotNil(approved["token"])

        // Cancelled on the first instance, its answer is refused on the second.
        let cancelledApproval = try await call("/api/v1/approval", ["username": username, "channel": "fido2"], key: key)
        let cancelled = try await call("/api/v1/status/cancel", ["statusToken": try XCTUnwrap(cancelledApproval["statusToken"])], key: key)
        XCTAssertEqual(cancelled["status"] as? String, "cancelled")
        let late = try options(cancelledApproval["fido2Options"], as: FIDO2API.RequestOptions.self)
        let refused = try await second.fido2(FIDO2API.assertionResultPath, try LoopbackServer.assertion(&phone, for: late))
        XCTAssertEqual(refused.status, 400, text(refused))
    }

    func testTheAuthCloudPasskeyChannelOverTLSOnSQLite() async throws {
        try await LoopbackServer.with(Self.configuration()) { server in
            try await authCloudPasskeys(first: server, second: server, username: "nia-\(suffix)")
        }
    }

    func testTheAuthCloudPasskeyChannelAcrossTwoInstancesOnPostgreSQL() async throws {
        try await withTwoInstances { first, second in
            try await authCloudPasskeys(first: first, second: second, username: "oda-\(suffix)")
        }
    }

    /// Two instances on one PostgreSQL database, as behind a balancer.
    func withTwoInstances(
        _ change: (inout ServerConfiguration.FIDO2) -> Void = { _ in }, _ body: (LoopbackServer, LoopbackServer) async throws -> Void
    ) async throws {
        let url = try PostgresStoreTests.postgresURL()
        let relyingParty = LocalRelyingParty()
        let first = try await LoopbackServer(configuration: Self.configuration(.postgres(url: url, poolSize: 4), change), relyingParty: relyingParty)
        let second: LoopbackServer
        do {
            second = try await LoopbackServer(configuration: Self.configuration(.postgres(url: url, poolSize: 4), change), relyingParty: relyingParty)
        } catch {
            try? await first.shutdown()
            throw error
        }
        do { try await body(first, second) } catch {
            try? await first.shutdown()
            try? await second.shutdown()
            throw error
        }
        try await first.shutdown()
        try await second.shutdown()
    }

    /// The decoys' key is the database's: every instance gives an unknown username the same decoys, so asking
    /// twice behind a balancer does not tell a decoy from a real list by its change.
    func testEveryInstanceGivesAnUnknownUsernameTheSameDecoys() async throws {
        try await withTwoInstances({ $0.allowCredentials = "listWithDecoys" }) { first, second in
            let name = "nobody-\(suffix)"
            let one = try await first.passkeyRequestOptions(username: name).allowCredentials
            let other = try await second.passkeyRequestOptions(username: name).allowCredentials
            XCTAssertFalse(one.isEmpty)
            XCTAssertEqual(one, other)
        }
    }

    func testAChallengeAnsweredOnOneInstanceIsRefusedOnTheOther() async throws {
        try await withTwoInstances { first, second in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            // Options from one instance, the answer to the other: they share the passkeys and the ceremonies.
            let creation = try await first.passkeyCreationOptions(username: "bo-\(suffix)")
            let registered = try await second.fido2(FIDO2API.attestationResultPath, try LoopbackServer.attestation(&phone, for: creation))
            XCTAssertEqual(registered.status, 200, text(registered))
            let options = try await second.passkeyRequestOptions(username: "bo-\(suffix)")
            let credential = try LoopbackServer.assertion(&phone, for: options)
            let signedIn = try await first.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(signedIn.status, 200, text(signedIn))
            for server in [first, second] {
                let replay = try await server.fido2(FIDO2API.assertionResultPath, credential)
                XCTAssertEqual(replay.status, 400)
                XCTAssertEqual(try fido2Response(replay).errorMessage, "the challenge is unknown, expired or already answered")
            }
        }
    }

    func testAnExpiredChallengeIsRefusedOnEveryInstance() async throws {
        try await withTwoInstances { first, second in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await first.registerPasskey(&phone, username: "cy-\(suffix)")
            let late = try LoopbackServer.assertion(&phone, for: try await first.passkeyRequestOptions(username: "cy-\(suffix)"))
            let later = try LoopbackServer.assertion(&phone, for: try await first.passkeyRequestOptions(username: "cy-\(suffix)"))
            first.clock.advance(301)
            second.clock.advance(301)
            for (server, credential) in [(second, late), (first, later)] {
                let answer = try await server.fido2(FIDO2API.assertionResultPath, credential)
                XCTAssertEqual(answer.status, 400)
                XCTAssertEqual(try fido2Response(answer).errorMessage, "the challenge is unknown, expired or already answered")
            }
        }
    }

    func testWhatABrowserAndAnAttackerAreRefusedOverTLS() async throws {
        try await LoopbackServer.with(Self.configuration()) { server in
            // A credential the admin removed.
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "dee")
            _ = try await UserData.removePasskeys(
                from: server.server.stores.passkeys, endingSessionsIn: server.server.stores.sessions, username: "dee", now: server.clock.now)
            let removed = try await server.signInWithPasskey(&phone, username: "dee")
            XCTAssertEqual(removed.status, 400)
            // An origin not configured.
            var phishing = SoftwarePasskeyAuthenticator(origin: "https://bank.example.evil")
            let foreign = try await server.registerPasskey(&phishing, username: "dee")
            XCTAssertEqual(foreign.status, 400)
            XCTAssertTrue(try fido2Response(foreign).errorMessage.contains("is not allowed"), text(foreign))
            // A counter that went back.
            var key = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false, counts: true)
            try await server.registerPasskey(&key, username: "eve")
            let earlier = try LoopbackServer.assertion(&key, for: try await server.passkeyRequestOptions(username: "eve"))
            let later = try LoopbackServer.assertion(&key, for: try await server.passkeyRequestOptions(username: "eve"))
            let laterAnswer = try await server.fido2(FIDO2API.assertionResultPath, later)
            XCTAssertEqual(laterAnswer.status, 200)
            let regression = try await server.fido2(FIDO2API.assertionResultPath, earlier)
            XCTAssertEqual(regression.status, 400)
            XCTAssertTrue(try fido2Response(regression).errorMessage.contains("counter"), text(regression))
        }
    }

    func testADisallowedAttestationIsRefusedOverTLS() async throws {
        let allowed = "cb69481e-8ff7-4039-93ec-0a2729a154a8"
        try await LoopbackServer.with(
            Self.configuration {
                $0.attestationPolicy = "enterprise"
                $0.allowedAAGUIDs = [allowed]
            }
        ) { server in
            var selfAttested = SoftwarePasskeyAuthenticator(origin: Self.origin, aaguid: [UInt8](repeating: 9, count: 16))
            let answer = try await server.registerPasskey(&selfAttested, username: "fay", attestation: .packedSelf)
            XCTAssertEqual(answer.status, 400)
            XCTAssertEqual(try fido2Response(answer).status, "failed")
            let stored = try await server.server.stores.passkeys.passkeys(username: "fay")
            XCTAssertEqual(stored, [])
        }
    }

    func testTheAuthorizationOfEveryEndpointOverTLS() async throws {
        try await LoopbackServer.with(Self.configuration()) { server in
            let registration = FIDO2API.OptionsRequest(username: "gil", displayName: "Gil")
            let signIn = FIDO2API.OptionsRequest(username: "gil")
            let garbage = [("Authorization", "Bearer garbage")]
            // Registration options: a credential for this user, nothing else.
            var status = try await server.fido2(FIDO2API.attestationOptionsPath, registration).status
            XCTAssertEqual(status, 401)
            status = try await server.fido2(FIDO2API.attestationOptionsPath, registration, headers: garbage).status
            XCTAssertEqual(status, 401)
            status = try await server.fido2(FIDO2API.attestationOptionsPath, registration, headers: try await server.bearer("hal")).status
            XCTAssertEqual(status, 403)
            status = try await server.fido2(FIDO2API.attestationOptionsPath, registration, headers: try await server.bearer("gil")).status
            XCTAssertEqual(status, 200)
            // Sign-in options: open, but a credential presented must be valid.
            status = try await server.fido2(FIDO2API.assertionOptionsPath, signIn).status
            XCTAssertEqual(status, 200)
            status = try await server.fido2(FIDO2API.assertionOptionsPath, signIn, headers: garbage).status
            XCTAssertEqual(status, 401)
            // The results are open and bound to their options by the challenge: without one they are refused as such.
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let made = try phone.create(rpID: "bank.example", challenge: [UInt8](repeating: 1, count: 32), userHandle: [1])
            let unissued = FIDO2API.Credential(
                id: Base64URL.encode(made.credentialID),
                response: .init(
                    clientDataJSON: Base64URL.encode(made.clientDataJSON), attestationObject: Base64URL.encode(made.attestationObject)))
            let answer = try await server.fido2(FIDO2API.attestationResultPath, unissued)
            XCTAssertEqual(answer.status, 400)
            XCTAssertEqual(try fido2Response(answer).errorMessage, "the challenge is unknown, expired or already answered")
            let stored = try await server.server.stores.passkeys.passkeys(username: "gil")
            XCTAssertEqual(stored, [])
        }
    }
}
