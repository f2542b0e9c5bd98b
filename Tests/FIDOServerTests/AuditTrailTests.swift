import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The audit trail: every security decision with who, from where and the outcome, in the database (bounded for
/// callers without credentials, purged after its retention) and in the `mauth.audit` log stream; the operator's
/// endpoints that read it and act on one user's data.
final class AuditTrailTests: XCTestCase {
    // MARK: - The writer's rules

    static func trail(_ stores: Stores, budget: Int = 3, clock: TestClock) -> AuditTrail {
        AuditTrail(
            store: stores.audit, retention: 86_400, eventsPerMinute: budget, clock: { clock.now }, metrics: nil,
            logger: Logger(label: "test"))
    }

    static func event(_ clock: TestClock, principal: String? = nil, client: String = "192.0.2.1", username: String? = "alice") -> AuditEvent {
        AuditEvent(
            at: clock.now, requestID: "r", clientAddress: client, principal: principal, operation: "authentication request",
            username: username, statusCode: 1200, detail: "issued")
    }

    func testAnAnonymousCallerPastItsBudgetLeavesOneSummaryRowForTheMinute() async throws {
        let database = try await StoreDatabase.open(.sqliteInMemory)
        let stores = Stores(database: database)
        let clock = TestClock()
        // Start at the beginning of a minute, so the ten events share one.
        clock.advance(60 - clock.now.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) + 1)
        let trail = Self.trail(stores, clock: clock)
        for _ in 0..<10 { trail.record(Self.event(clock), budgetKeys: [.address("192.0.2.1")]) }
        trail.record(Self.event(clock, client: "198.51.100.7"), budgetKeys: [.address("198.51.100.7")])
        for _ in 0..<5 { trail.record(Self.event(clock, principal: "relying-party:alice"), budgetKeys: []) }
        await trail.flush()
        let stored = try await stores.audit.events(limit: 100)
        XCTAssertEqual(stored.filter { $0.clientAddress == "192.0.2.1" && $0.principal == nil }.count, 3, "the budget")
        XCTAssertEqual(stored.filter { $0.clientAddress == "198.51.100.7" }.count, 1, "another address has its own budget")
        XCTAssertEqual(stored.filter { $0.principal != nil }.count, 5, "callers with credentials are always kept")

        clock.advance(60)
        await trail.flush()
        let afterMinute = try await stores.audit.events(limit: 100)
        let summary = try XCTUnwrap(afterMinute.first { $0.operation == "audit budget" })
        XCTAssertEqual(summary.clientAddress, "192.0.2.1")
        XCTAssertEqual(summary.statusCode, 429)
        XCTAssertTrue(summary.detail.hasPrefix("7 further decision(s)"), summary.detail)
        try await database.close()
    }

    /// A verified passkey sign-in or registration is kept whatever the address spent: only a key's holder causes one.
    /// Before, it was budgeted as an anonymous event, so 60 cheap requests from the same address kept it out.
    func testABatchIsSplitIntoFullStatementsThenPowersOfTwo() {
        XCTAssertEqual(AuditStore.chunkSizes(0), [])
        XCTAssertEqual(AuditStore.chunkSizes(1), [1])
        XCTAssertEqual(AuditStore.chunkSizes(255), [128, 64, 32, 16, 8, 4, 2, 1])
        XCTAssertEqual(AuditStore.chunkSizes(256), [256])
        XCTAssertEqual(AuditStore.chunkSizes(300), [256, 32, 8, 4])
        XCTAssertEqual(AuditStore.chunkSizes(1_025), [256, 256, 256, 256, 1])
        for count in 0...2_000 {
            let sizes = AuditStore.chunkSizes(count)
            XCTAssertEqual(sizes.reduce(0, +), count)
            XCTAssertTrue(sizes.allSatisfy { $0 > 0 && $0 <= AuditStore.rowsPerStatement && $0 & ($0 - 1) == 0 }, "\(count): \(sizes)")
        }
    }

    func testAVerifiedPasskeyCeremonyIsNeverBudgetedAsAnonymous() {
        for operation: OperationName in ["passkey authentication", "passkey registration"] {
            let verified = ServerDecision(operation: operation, username: "alice", statusCode: 200, detail: "verified")
            XCTAssertEqual(AuditTrail.budgetKeys(principal: nil, client: "192.0.2.1", decision: verified), [], "\(operation)")
            let refused = ServerDecision(operation: operation, username: "alice", statusCode: 400, detail: "refused")
            XCTAssertEqual(AuditTrail.budgetKeys(principal: nil, client: "192.0.2.1", decision: refused), [.address("192.0.2.1")], "\(operation)")
        }
        let options = ServerDecision(operation: "passkey authentication options", username: "alice", statusCode: 200, detail: "issued")
        XCTAssertEqual(AuditTrail.budgetKeys(principal: nil, client: "192.0.2.1", decision: options), [.address("192.0.2.1")])
    }

    func testTheQueueIsBoundedAndNeverWaitedFor() async throws {
        let database = try await StoreDatabase.open(.sqliteInMemory)
        let stores = Stores(database: database)
        let clock = TestClock()
        let trail = Self.trail(stores, clock: clock)
        for _ in 0..<(AuditTrail.capacity + 5) { trail.record(Self.event(clock, principal: "relying-party:alice"), budgetKeys: []) }
        await trail.flush()
        let stored = try await stores.audit.events(limit: AuditTrail.capacity + 10)
        XCTAssertEqual(stored.count, AuditTrail.capacity)
        try await database.close()
    }

    func testAnEventIsPurgedAfterItsRetention() async throws {
        let database = try await StoreDatabase.open(.sqliteInMemory)
        let stores = Stores(database: database)
        let clock = TestClock()
        try await stores.audit.insert([Self.event(clock, principal: "relying-party:alice")], retention: 86_400)
        let early = try await stores.audit.purge(expiredBefore: clock.now.addingTimeInterval(3600))
        XCTAssertEqual(early, 0)
        let late = try await stores.audit.purge(expiredBefore: clock.now.addingTimeInterval(86_401))
        XCTAssertEqual(late, 1)
        let left = try await stores.audit.events(limit: 10)
        XCTAssertEqual(left.count, 0)
        try await database.close()
    }

    func testEventsAreReadNewestFirstByUserAndSince() async throws {
        let database = try await StoreDatabase.open(.sqliteInMemory)
        let stores = Stores(database: database)
        let clock = TestClock()
        let first = Self.event(clock)
        clock.advance(10)
        let second = Self.event(clock, username: "bob")
        clock.advance(10)
        let third = Self.event(clock)
        try await stores.audit.insert([first, second, third], retention: 86_400)
        let alices = try await stores.audit.events(username: "alice", limit: 10)
        XCTAssertEqual(alices.map(\.at.epochMillis), [third.at.epochMillis, first.at.epochMillis])
        let since = try await stores.audit.events(since: second.at, limit: 10)
        XCTAssertEqual(since.count, 2)
        let newest = try await stores.audit.events(limit: 1)
        XCTAssertEqual(newest.first?.at.epochMillis, third.at.epochMillis)
        try await database.close()
    }

    func testThePrincipalsAuditNameCarriesNoSecret() {
        XCTAssertEqual(Principal(source: .relyingPartyToken, subject: "alice", isAdmin: false).auditName, "relying-party:alice")
        XCTAssertEqual(Principal(source: .relyingPartyToken, subject: "ops", isAdmin: true).auditName, "relying-party:ops+admin")
        XCTAssertEqual(Principal(source: .session(id: "secret-session-id"), subject: "alice", isAdmin: false).auditName, "session:alice")
        XCTAssertEqual(Principal(source: .accessKey(id: "k1"), subject: nil, isAdmin: true).auditName, "access-key:k1+admin")
    }

    // MARK: - The operator's endpoints

    func adminHeaders(_ server: InProcessServer) async throws -> [(String, String)] {
        var claims = server.relyingParty.claims(subject: "ops", now: server.clock.now)
        claims.scope = "mauth:admin"
        return [("Authorization", "Bearer \(try await server.relyingParty.sign(claims))")]
    }

    func register(_ server: InProcessServer, _ username: String, aaid: String = "F1D0#1001") async throws -> SoftwareAuthenticator {
        var authenticator = SoftwareAuthenticator()
        authenticator.aaid = aaid
        let request = try await server.registrationRequest(username: username)
        let answer = try await server.send("/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: server.appID))
        XCTAssertEqual(answer.statusCode, 1200)
        return authenticator
    }

    func testAUsersOwnTokenCannotReachTheAdminEndpoints() async throws {
        try await InProcessServer.with { server in
            _ = try await self.register(server, "alice")
            let shown = try await server.exchange(.GET, "/nevisfido/admin/user?username=alice", body: nil, headers: try await server.bearer("alice"))
            XCTAssertEqual(shown.status, 403)
            let anonymous = try await server.exchange(.GET, "/nevisfido/admin/audit", body: nil)
            XCTAssertEqual(anonymous.status, 401)
        }
    }

    func testAnAdminSeesAndRemovesAUsersKeysAndEveryStepIsAudited() async throws {
        try await InProcessServer.with { server in
            let pin = try await self.register(server, "alice")
            _ = try await self.register(server, "alice", aaid: "F1D0#1002")
            let admin = try await self.adminHeaders(server)
            let shown = try await server.exchange(.GET, "/nevisfido/admin/user?username=alice", body: nil, headers: admin)
            XCTAssertEqual(shown.status, 200)
            let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: shown.body) as? [String: Any])
            XCTAssertEqual((report["keys"] as? [Any])?.count, 2)

            let unselected = try await server.exchange(.DELETE, "/nevisfido/admin/user/keys?username=alice", body: nil, headers: admin)
            XCTAssertEqual(unselected.status, 400, "no selection never means every key")
            let removed = try await server.exchange(.DELETE, "/nevisfido/admin/user/keys?username=alice&aaid=F1D0%231001", body: nil, headers: admin)
            XCTAssertEqual(removed.status, 200, String(decoding: removed.body, as: UTF8.self))
            XCTAssertTrue(String(decoding: removed.body, as: UTF8.self).contains(Base64URL.encode(pin.keyID)))
            let left = try await server.server.stores.registrations.registrations(username: "alice")
            XCTAssertEqual(left.map(\.aaid), ["F1D0#1002"])
            let again = try await server.exchange(.DELETE, "/nevisfido/admin/user/keys?username=alice&aaid=F1D0%231001", body: nil, headers: admin)
            XCTAssertEqual(again.status, 404)
            let missingTarget = try await server.exchange(
                .DELETE, "/nevisfido/admin/user/dispatch-targets/nope?username=alice", body: nil, headers: admin)
            XCTAssertEqual(missingTarget.status, 404)
            let ended = try await server.exchange(.DELETE, "/nevisfido/admin/user/sessions?username=alice", body: nil, headers: admin)
            XCTAssertEqual(ended.status, 200)
            let erased = try await server.exchange(.DELETE, "/nevisfido/admin/user?username=alice", body: nil, headers: admin)
            XCTAssertEqual(erased.status, 200)
            let none = try await server.server.stores.registrations.registrations(username: "alice")
            XCTAssertEqual(none.count, 0)

            await server.server.audit?.flush()
            let audit = try await server.exchange(.GET, "/nevisfido/admin/audit?username=alice&limit=50", body: nil, headers: admin)
            XCTAssertEqual(audit.status, 200)
            let events = try XCTUnwrap((try JSONSerialization.jsonObject(with: audit.body) as? [String: Any])?["events"] as? [[String: Any]])
            let operations = events.compactMap { $0["operation"] as? String }
            for operation in ["admin user show", "admin user remove keys", "admin user end sessions", "admin user erase", "registration"] {
                XCTAssertTrue(operations.contains(operation), "\(operation) in \(operations)")
            }
            let erase = try XCTUnwrap(events.first { $0["operation"] as? String == "admin user erase" })
            XCTAssertEqual(erase["principal"] as? String, "relying-party:ops+admin")
            let badLimit = try await server.exchange(.GET, "/nevisfido/admin/audit?limit=10001", body: nil, headers: admin)
            XCTAssertEqual(badLimit.status, 400)
        }
    }

    /// A refused login names the user the server knows (the step-up request's), so `mauth admin audit --username`
    /// finds it beside her successful ones.
    func testARefusedLoginIsAuditedWithItsUser() async throws {
        try await InProcessServer.with { server in
            var authenticator = try await self.register(server, "alice")
            let (_, request) = try await server.authenticationRequest(username: "alice", headers: try await server.bearer("alice"))
            var response = try authenticator.authenticate(try XCTUnwrap(request), serverAppID: server.appID)
            response.assertions[0].assertion = String(response.assertions[0].assertion.dropLast(8)) + "AAAAAAAA"
            let refused = try await server.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertNotEqual(refused.statusCode, 1200)
            let (_, late) = try await server.authenticationRequest(username: "alice", headers: try await server.bearer("alice"))
            server.clock.advance(301)
            let expired = try await server.send(
                "/nevisfido/uaf/1.1/authentication", try authenticator.authenticate(try XCTUnwrap(late), serverAppID: server.appID))
            XCTAssertEqual(expired.statusCode, 1491)
            await server.server.audit?.flush()
            let audit = try await server.exchange(
                .GET, "/nevisfido/admin/audit?username=alice&limit=50", body: nil, headers: try await self.adminHeaders(server))
            let events = try XCTUnwrap((try JSONSerialization.jsonObject(with: audit.body) as? [String: Any])?["events"] as? [[String: Any]])
            let refusals = events.filter {
                $0["operation"] as? String == "authentication" && ($0["statusCode"] as? Int ?? $0["code"] as? Int) != 1200
            }
            XCTAssertEqual(refusals.count, 2, "\(events)")
        }
    }

    /// With an operator scope of its own, acting for users and the operator's endpoints are two privileges: the
    /// backend's admin token registers for anyone but reads no trail and erases nobody; the operator's token does
    /// those and acts for no user.
    func testAnOperatorScopeSeparatesTheOperatorsEndpointsFromActingForUsers() async throws {
        let relyingParty = LocalRelyingParty()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-operator-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let jwks = directory.appendingPathComponent("jwks.json").path
        try relyingParty.writeJWKS(to: jwks)
        var configuration = InProcessServer.configuration()
        configuration.authorization.jwt = .init(
            jwksPath: jwks, issuer: relyingParty.issuer, audience: relyingParty.audience,
            adminScope: "mauth:admin", operatorScope: "mauth:operator")
        let server = try await InProcessServer(configuration: configuration, relyingParty: relyingParty)
        do {
            func bearer(_ scope: String) async throws -> [(String, String)] {
                var claims = relyingParty.claims(subject: "ops", now: server.clock.now)
                claims.scope = scope
                return [("Authorization", "Bearer \(try await relyingParty.sign(claims))")]
            }
            let backend = try await bearer("mauth:admin")
            let operatorToken = try await bearer("mauth:operator")
            let registered = try await server.registrationRequest(username: "alice", headers: backend)
            XCTAssertFalse(registered.challenge.isEmpty)
            let trailByBackend = try await server.exchange(.GET, "/nevisfido/admin/audit", body: nil, headers: backend)
            XCTAssertEqual(trailByBackend.status, 403)
            let eraseByBackend = try await server.exchange(.DELETE, "/nevisfido/admin/user?username=alice", body: nil, headers: backend)
            XCTAssertEqual(eraseByBackend.status, 403)
            let trailByOperator = try await server.exchange(.GET, "/nevisfido/admin/audit", body: nil, headers: operatorToken)
            XCTAssertEqual(trailByOperator.status, 200)
            let registerByOperator = try await server.exchange(
                .POST, "/nevisfido/uaf/1.1/request/registration",
                body: try InProcessServer.registrationBody("alice"), headers: operatorToken)
            XCTAssertEqual(registerByOperator.status, 403)
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    func testAnOperatorScopeThatIsTheAdminScopeIsRefused() throws {
        var configuration = InProcessServer.configuration()
        configuration.authorization.jwt = .init(jwksPath: "/dev/null", issuer: "i", audience: "a", adminScope: "s", operatorScope: "s")
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertTrue("\(error)".contains("authorization.jwt.operatorScope must be a scope of its own"), "\(error)")
        }
    }

    // MARK: - Configuration

    func testAuditSettingsOutsideTheirRangesAreRefused() {
        for json in [
            #"{"observability": {"auditRetentionDays": 4000}}"#, #"{"observability": {"auditAnonymousEventsPerMinute": -1}}"#,
            #"{"observability": {"logFormat": "xml"}}"#,
        ] {
            XCTAssertThrowsError(try JSONDecoder().decode(ServerConfiguration.self, from: Data(json.utf8)).validate(), json)
        }
        XCTAssertThrowsError(try ServerConfiguration.load(path: nil, environment: ["MAUTH_LOG_FORMAT": "xml"]))
        XCTAssertEqual(try ServerConfiguration.load(path: nil, environment: ["MAUTH_LOG_FORMAT": "json"]).observability.logFormat, .json)
    }
}
