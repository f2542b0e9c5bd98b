import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NIOConcurrencyHelpers
import Primitives
import SQLKit
import SQLiteNIO
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The one store suite: every test runs its rule on both engines, a fresh SQLite file and a real PostgreSQL server
/// (`MAUTH_TEST_POSTGRES_URL`, provided by `.ci/run`; without it the PostgreSQL half is skipped locally and fails
/// under `CI=true`). A failure names the engine it happened on.
final class StoreContractTests: XCTestCase {
    /// The engine the running check is on, for failure messages.
    private var engine: String?

    /// Runs `check` on a fresh SQLite store, then on the emptied PostgreSQL store.
    func onEveryEngine(_ check: (Stores) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-store-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try await on(
            "SQLite", Stores(database: try await StoreDatabase.open(.sqlite(path: directory.appendingPathComponent("s.sqlite").path))), check)
        guard let url = PostgresStoreTests.postgresURLIfAny() else { return }
        try await on("PostgreSQL", try await PostgresStoreTests.emptiedStores(url: url), check)
    }

    private func on(_ name: String, _ stores: Stores, _ check: (Stores) async throws -> Void) async throws {
        engine = name
        defer { engine = nil }
        do { try await check(stores) } catch {
            try? await stores.database.close()
            throw EngineFailure(engine: name, error: error)
        }
        try await stores.database.close()
    }

    /// A statement's value that ``postgresPurgePlans(cutoff:on:)`` cannot write into `EXECUTE` (it renders integers only).
    struct UnrenderedValue: Error { let value: String }

    struct EngineFailure: Error, CustomStringConvertible {
        let engine: String
        let error: any Error
        var description: String { "on \(engine): \(error)" }
    }

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        super.recordFailure(
            withDescription: engine.map { "on \($0): " + description } ?? description, inFile: filePath,
            atLine: lineNumber, expected: expected)
    }
    func testARequestIsConsumedExactlyOnceUnderConcurrency() async throws {
        try await onEveryEngine { stores in
            try await stores.uafCeremonies.insert(record("once"))
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { try await stores.uafCeremonies.consume(id: "once") != nil } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            XCTAssertEqual(wins, 1)
        }
    }

    func testARequestRoundTripsEveryField() async throws {
        try await onEveryEngine { stores in
            var original = record("fields", expiresAt: Date(epochMillis: 1_900_000_000_123))
            original.policyName = "strong"
            try await stores.uafCeremonies.insert(original)
            let back = try await stores.uafCeremonies.consume(id: "fields")
            XCTAssertEqual(back, original)
        }
    }

    func testPurgeRemovesOnlyExpiredRequests() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await stores.uafCeremonies.insert(record("old", expiresAt: now.addingTimeInterval(-1)))
            try await stores.uafCeremonies.insert(record("live", expiresAt: now.addingTimeInterval(60)))
            let purged = try await stores.uafCeremonies.purge(expiredBefore: now)
            XCTAssertEqual(purged, 1)
            let live = try await stores.uafCeremonies.consume(id: "live")
            XCTAssertNotNil(live)
        }
    }

    func testOutstandingRequestsAreCountedPerUsername() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            for (id, username, expiresAt) in [
                ("a1", "ann", now.addingTimeInterval(300)), ("a2", "ann", now.addingTimeInterval(300)),
                ("a3", "ann", now.addingTimeInterval(-5)), ("b1", "ben", now.addingTimeInterval(300)),
            ] {
                let inserted = try await stores.uafCeremonies.insert(
                    record(id, expiresAt: expiresAt, username: username), username: username, cap: 100, now: now)
                XCTAssertTrue(inserted)
            }
            // Inserted without a cap (an anonymous step-up request): it names ann but counts against nobody.
            try await stores.uafCeremonies.insert(record("anonymous", username: "ann"))
            let count = try await stores.uafCeremonies.outstanding(username: "ann", now: now)
            XCTAssertEqual(count, 2)
        }
    }

    func testACappedInsertStopsAtTheCapCountingOnlyThatUsersUnexpiredRequests() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await stores.uafCeremonies.insert(record("expired", expiresAt: now.addingTimeInterval(-5), username: "ann"))
            try await stores.uafCeremonies.insert(record("other", username: "ben"))
            let a2 = record("a2", expiresAt: Date(epochMillis: now.addingTimeInterval(300).epochMillis), username: "ann")
            let first = try await stores.uafCeremonies.insert(record("a1", username: "ann"), username: "ann", cap: 2, now: now)
            let second = try await stores.uafCeremonies.insert(a2, username: "ann", cap: 2, now: now)
            let third = try await stores.uafCeremonies.insert(record("a3", username: "ann"), username: "ann", cap: 2, now: now)
            XCTAssertEqual([first, second, third], [true, true, false])
            let refused = try await stores.uafCeremonies.consume(id: "a3")
            XCTAssertNil(refused, "a request refused by the cap was stored")
            let stored = try await stores.uafCeremonies.consume(id: "a2")
            XCTAssertEqual(stored, a2)
        }
    }

    func testADuplicateKeyStoresNoneOfTheBatch() async throws {
        try await onEveryEngine { stores in
            try await stores.registrations.insert([registration("carol", keyID: "k1")])
            do {
                try await stores.registrations.insert([registration("carol", aaid: "F1D0#1005", keyID: "k2"), registration("mallory", keyID: "k1")])
                XCTFail("a duplicate (AAID, KeyID) was accepted")
            } catch let error as StoreError {
                XCTAssertEqual(error, .duplicateRegistration)
            }
            let carol = try await stores.registrations.registrations(username: "carol")
            XCTAssertEqual(carol.map(\.keyID), ["k1"])
            let mallory = try await stores.registrations.registrations(username: "mallory")
            XCTAssertEqual(mallory, [])
        }
    }

    func testARegistrationRoundTripsEveryField() async throws {
        try await onEveryEngine { stores in
            let original = registration("dora", keyID: "kd", counter: 7)
            try await stores.registrations.insert([original])
            let back = try await stores.registrations.registration(aaid: "f1d0#1001", keyID: "kd")
            XCTAssertEqual(back, original)
        }
    }

    func testTheCounterAdvancesOnlyFromTheComparedValue() async throws {
        try await onEveryEngine { stores in
            try await stores.registrations.insert([registration("erin", keyID: "ke")])
            let first = try await stores.registrations.updateSignCounter(aaid: "F1D0#1001", keyID: "ke", from: 0, to: 1)
            let stale = try await stores.registrations.updateSignCounter(aaid: "F1D0#1001", keyID: "ke", from: 0, to: 2)
            XCTAssertTrue(first)
            XCTAssertFalse(stale)
        }
    }

    func testDeletionSelectsByUsernameAAIDOrKeyID() async throws {
        try await onEveryEngine { stores in
            try await stores.registrations.insert([
                registration("fay", keyID: "f1"), registration("fay", aaid: "F1D0#1005", keyID: "f2"),
                registration("fay", aaid: "F1D0#1003", keyID: "f3"), registration("gus", keyID: "g1"),
            ])
            let byKey = try await stores.registrations.delete(username: "fay", keyIDs: ["f3", "g1"])
            XCTAssertEqual(byKey.map(\.keyID), ["f3"])
            let byAAID = try await stores.registrations.delete(username: "fay", aaids: ["f1d0#1005"])
            XCTAssertEqual(byAAID.map(\.keyID), ["f2"])
            let empty = try await stores.registrations.delete(username: "fay", aaids: [])
            XCTAssertEqual(empty, [])
            let rest = try await stores.registrations.delete(username: "fay")
            XCTAssertEqual(rest.map(\.keyID), ["f1"])
            let gus = try await stores.registrations.registrations(username: "gus")
            XCTAssertEqual(gus.map(\.keyID), ["g1"])
        }
    }

    func testAnOpenedRequestHasItsStatusRecord() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let (request, status) = opening("o1", now: now)
            let opened = try await stores.ceremonies.open(request, status: status, retention: 600, cap: nil)
            XCTAssertTrue(opened)
            let record = try await stores.status.record(sessionId: "o1", now: now)
            XCTAssertEqual(
                record,
                StatusRecord(
                    sessionId: "o1", status: .clientAuthenticating, operation: "Auth", username: nil,
                    updatedAt: Date(epochMillis: now.epochMillis)))
            let back = try await stores.uafCeremonies.consume(id: "o1")
            XCTAssertEqual(back, request)
        }
    }

    func testAnOpenRefusedByTheCapStoresNeitherRequestNorStatus() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            var results: [Bool] = []
            for id in ["c1", "c2", "c3"] {
                let (request, status) = opening(id, username: "cap", now: now)
                results.append(
                    try await stores.ceremonies.open(
                        request, status: status, retention: 600, cap: CeremonyCap(username: "cap", limit: 2, now: now)))
            }
            XCTAssertEqual(results, [true, true, false])
            let refusedStatus = try await stores.status.record(sessionId: "c3", now: now)
            XCTAssertNil(refusedStatus, "a request refused by the cap opened a status record")
            let refusedRequest = try await stores.uafCeremonies.consume(id: "c3")
            XCTAssertNil(refusedRequest, "a request refused by the cap was stored")
            let kept = try await stores.status.record(sessionId: "c2", now: now)
            XCTAssertEqual(kept?.username, "cap")
        }
    }

    func testAStepUpRequestAcceptsExactlyTheUsersKeysAndStoresThatPolicy() async throws {
        try await onEveryEngine { stores in
            try await stepUpKeys(stores)
            let now = Date()
            guard case .issued(let request) = try await stepUp(stores, "s1", username: "kim", now: now) else { return XCTFail("not issued") }
            XCTAssertEqual(
                request.policy,
                Policy(accepted: [
                    [MatchCriteria(aaid: ["ABCD#0001"], keyIDs: ["k3"])], [MatchCriteria(aaid: ["F1D0#1001"], keyIDs: ["k1", "k2", "q\"/\\é"])],
                ]))
            // The column holds exactly the text the server writes for that policy (on PostgreSQL, written by SQL).
            let stored = try await stores.database.run { sql in
                try await sql.raw("SELECT policy FROM uaf_requests WHERE id = \(bind: "s1")").first()?.decode(column: "policy", as: String.self)
            }
            XCTAssertEqual(stored, try JSONCoding.string(request.policy))
            let status = try await stores.status.record(sessionId: "s1", now: now)
            XCTAssertEqual(status?.status, .clientAuthenticating)
            let consumed = try await stores.uafCeremonies.consume(id: "s1")
            XCTAssertEqual(consumed, request)
        }
    }

    func testAStepUpRequestForAUserWithoutKeysStoresNothing() async throws {
        try await onEveryEngine { stores in
            try await stepUpKeys(stores)
            let now = Date()
            guard case .noKeys = try await stepUp(stores, "s2", username: "nobody", now: now) else {
                return XCTFail("issued for a user without keys")
            }
            let status = try await stores.status.record(sessionId: "s2", now: now)
            XCTAssertNil(status)
            let request = try await stores.uafCeremonies.consume(id: "s2")
            XCTAssertNil(request)
        }
    }

    func testAStepUpRequestOverTheCapStoresNeitherRequestNorStatus() async throws {
        try await onEveryEngine { stores in
            try await stepUpKeys(stores)
            let now = Date()
            var outcomes: [String] = []
            for id in ["s3", "s4", "s5"] {
                switch try await stepUp(stores, id, username: "kim", limit: 2, now: now) {
                case .issued: outcomes.append("issued")
                case .capReached: outcomes.append("cap")
                case .noKeys: outcomes.append("no keys")
                }
            }
            XCTAssertEqual(outcomes, ["issued", "issued", "cap"])
            let status = try await stores.status.record(sessionId: "s5", now: now)
            XCTAssertNil(status, "a request refused by the cap opened a status record")
            let request = try await stores.uafCeremonies.consume(id: "s5")
            XCTAssertNil(request, "a request refused by the cap was stored")
        }
    }

    func testAnUncountedStepUpRequestIsIssuedPastTheCapAndCountsAgainstNobody() async throws {
        try await onEveryEngine { stores in
            try await stepUpKeys(stores)
            let now = Date()
            var outcomes: [String] = []
            for (id, limit) in [("c1", 1), ("u1", nil), ("u2", nil), ("c2", 1)] as [(String, Int?)] {
                switch try await stepUp(stores, id, username: "kim", limit: limit, now: now) {
                case .issued: outcomes.append("issued")
                case .capReached: outcomes.append("cap")
                case .noKeys: outcomes.append("no keys")
                }
            }
            XCTAssertEqual(outcomes, ["issued", "issued", "issued", "cap"], "the uncounted ones pass the full cap; the counted one is refused")
            let counted = try await stores.uafCeremonies.outstanding(username: "kim", now: now)
            XCTAssertEqual(counted, 1)
            let uncounted = try await stores.uafCeremonies.consume(id: "u2")
            XCTAssertEqual(uncounted?.username, "kim", "an uncounted request still names its user")
            let countedRequest = try await stores.uafCeremonies.consume(id: "c1")
            XCTAssertEqual(uncounted?.policy, countedRequest?.policy, "and accepts exactly kim's keys, as a counted one does")
            XCTAssertFalse(uncounted?.policy.accepted.isEmpty ?? true)
        }
    }

    func testACompletedAuthenticationAdvancesTheCounterOpensTheSessionAndFinishesTheStatus() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await awaitingLogin(stores, "a1", keyID: "kk", counter: 4, now: now)
            let login = completion("a1", keyID: "kk", from: 4, to: 5, now: now)
            let completed = try await stores.ceremonies.completeAuthentication(login)
            XCTAssertEqual(completed, .completed)
            let request = try await stores.ceremonies.pending(id: "a1")
            XCTAssertNil(request, "the completion removes the request")
            let counter = try await stores.registrations.registration(aaid: "F1D0#1001", keyID: "kk")?.signCounter
            XCTAssertEqual(counter, 5)
            let session = try await stores.sessions.session(token: login.sessionToken, now: now)
            XCTAssertEqual(
                session,
                SessionRecord(
                    id: login.session.id, username: "kim", credential: .uafKey(aaid: "F1D0#1001", keyID: "kk"),
                    createdAt: Date(epochMillis: now.epochMillis), expiresAt: Date(epochMillis: now.addingTimeInterval(60).epochMillis)))
            let record = try await stores.status.record(sessionId: "a1", now: now)
            XCTAssertEqual(record?.status, .succeeded)
            XCTAssertEqual(record?.username, "kim")
            XCTAssertEqual(record?.uafStatusCode, 1200)
            XCTAssertEqual(record?.authenticators, [.init(aaid: "F1D0#1001", keyId: "kk")])
        }
    }

    func testACompletionFromAStaleCounterOnlyRemovesTheRequest() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await awaitingLogin(stores, "r1", keyID: "ks", counter: 7, now: now)
            let replay = completion("r1", keyID: "ks", from: 6, to: 8, now: now)
            let completed = try await stores.ceremonies.completeAuthentication(replay)
            XCTAssertEqual(completed, .counterMoved)
            let request = try await stores.ceremonies.pending(id: "r1")
            XCTAssertNil(request, "a replayed answer still spends the request")
            let counter = try await stores.registrations.registration(aaid: "F1D0#1001", keyID: "ks")?.signCounter
            XCTAssertEqual(counter, 7)
            let session = try await stores.sessions.session(token: replay.sessionToken, now: now)
            XCTAssertNil(session, "a replayed login opened a session")
            let record = try await stores.status.record(sessionId: "r1", now: now)
            XCTAssertEqual(record?.status, .clientAuthenticating, "a replayed login finished the status record")
        }
    }

    func testACompletionOfARequestAlreadyGoneWritesNothing() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await awaitingLogin(stores, "g1", keyID: "kg", counter: 4, now: now)
            let first = try await stores.ceremonies.completeAuthentication(completion("g1", keyID: "kg", from: 4, to: 5, now: now))
            XCTAssertEqual(first, .completed)
            // The same request answered again, with a counter that would advance: the request decides, not the counter.
            let again = completion("g1", keyID: "kg", from: 5, to: 6, now: now)
            let second = try await stores.ceremonies.completeAuthentication(again)
            XCTAssertEqual(second, .requestGone)
            let counter = try await stores.registrations.registration(aaid: "F1D0#1001", keyID: "kg")?.signCounter
            XCTAssertEqual(counter, 5, "the second answer moved the counter")
            let session = try await stores.sessions.session(token: again.sessionToken, now: now)
            XCTAssertNil(session, "the second answer opened a session")
        }
    }

    /// Twenty answers read the same request and each completes with a key of its own (so no counter stands between
    /// them): the request's removal alone lets exactly one through.
    func testOnlyOneOfConcurrentCompletionsOfOneRequestWritesAnything() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let keys = (0..<20).map { "kc\($0)" }
            try await stores.registrations.insert(keys.map { registration("kim", keyID: $0, counter: 0) })
            let (request, status) = opening("race", now: now)
            let opened = try await stores.ceremonies.open(request, status: status, retention: 600, cap: nil)
            XCTAssertTrue(opened)
            let outcomes = try await withThrowingTaskGroup(of: CeremonyStore.Completion.self) { group in
                for key in keys {
                    group.addTask {
                        // Each reads the request first, as a login's answer does; some read it after another removed it.
                        _ = try await stores.ceremonies.pending(id: "race")
                        return try await stores.ceremonies.completeAuthentication(completion("race", keyID: key, from: 0, to: 1, now: now))
                    }
                }
                return try await group.reduce(into: [CeremonyStore.Completion]()) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 == .completed }.count, 1)
            XCTAssertEqual(outcomes.filter { $0 == .requestGone }.count, 19)
            var advanced = 0
            for key in keys where try await stores.registrations.registration(aaid: "F1D0#1001", keyID: key)?.signCounter == 1 { advanced += 1 }
            XCTAssertEqual(advanced, 1, "only the completing answer's counter moved")
            let sessions = try await stores.sessions.live(username: "kim", now: now)
            XCTAssertEqual(sessions.count, 1)
        }
    }

    func testAnAbandonedRequestIsRemovedAndItsStatusFails() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await awaitingLogin(stores, "x1", keyID: "kx", counter: 2, now: now)
            try await stores.ceremonies.abandon(
                .init(
                    sessionId: "x1", status: .failed, username: nil, uafStatusCode: 1498, asmStatusCode: nil, clientErrorCode: 3,
                    authenticators: [], now: now, retention: 600))
            let request = try await stores.ceremonies.pending(id: "x1")
            XCTAssertNil(request, "an abandoned request can be answered again")
            let record = try await stores.status.record(sessionId: "x1", now: now)
            XCTAssertEqual(record?.status, .failed)
            XCTAssertEqual(record?.uafStatusCode, 1498)
            XCTAssertEqual(record?.clientErrorCode, 3)
            let late = try await stores.ceremonies.completeAuthentication(completion("x1", keyID: "kx", from: 2, to: 3, now: now))
            XCTAssertEqual(late, .requestGone)
            let final = try await stores.status.record(sessionId: "x1", now: now)
            XCTAssertEqual(final?.status, .failed, "a late answer rewrote a finished status record")
        }
    }

    /// Reading a login's request brings the registrations of the request's user along, in one statement on both
    /// engines. The request comes back whole, and stays.
    func testAPendingReadBringsTheRegistrationsOfTheRequestsUser() async throws {
        try await onEveryEngine { stores in
            try await stores.registrations.insert([
                registration("joe", keyID: "j1"), registration("joe", aaid: "ABCD#0001", keyID: "j2"),
                registration("kat", keyID: "k1"),
            ])
            // Whole milliseconds: the store keeps times in epoch milliseconds.
            let original = record("with-keys", expiresAt: Date(epochMillis: 1_900_000_000_123), username: "joe")
            try await stores.uafCeremonies.insert(original)
            let pending = try await stores.ceremonies.pending(id: "with-keys")
            XCTAssertEqual(pending?.request, original)
            XCTAssertEqual(Set(pending?.registrations.map(\.keyID) ?? []), ["j1", "j2"], "exactly the user's own registrations")
            let j2 = try await stores.registrations.registration(aaid: "ABCD#0001", keyID: "j2")
            XCTAssertEqual(pending?.registration(aaid: "abcd#0001", keyID: "j2"), j2, "found as stored, whatever the AAID's case")
            XCTAssertNil(pending?.registration(aaid: "F1D0#1001", keyID: "k1"), "another user's key is not among them")
            let again = try await stores.ceremonies.pending(id: "with-keys")
            XCTAssertEqual(again?.request, original, "reading removed the request")
        }
    }

    func testAPendingRequestWithoutAUserOrWithoutRegistrationsComesBackAlone() async throws {
        try await onEveryEngine { stores in
            try await stores.registrations.insert([registration("joe", keyID: "j1")])
            let expiresAt = Date(epochMillis: 1_900_000_000_123)
            let anonymous = record("nobody", expiresAt: expiresAt, username: nil)
            let unregistered = record("new-user", expiresAt: expiresAt, username: "liv")
            try await stores.uafCeremonies.insert(anonymous)
            try await stores.uafCeremonies.insert(unregistered)
            for original in [anonymous, unregistered] {
                let pending = try await stores.ceremonies.pending(id: original.id)
                XCTAssertEqual(pending?.request, original)
                XCTAssertEqual(pending?.registrations.count, 0)
            }
            let missing = try await stores.ceremonies.pending(id: "never-issued")
            XCTAssertNil(missing)
        }
    }

    func testARegistrationsConsumeIsOnceOnlyUnderConcurrency() async throws {
        try await onEveryEngine { stores in
            try await stores.uafCeremonies.insert(record("race", username: "joe"))
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { try await stores.ceremonies.consume(id: "race") != nil } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            XCTAssertEqual(wins, 1)
        }
    }

    func testTheSessionsOfRemovedKeysAreRevokedAndNoOthers() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let (_, k1) = try await stores.sessions.create(username: "kim", credential: .uaf(aaid: "F1D0#1001", keyID: "k1"), now: now, lifetime: 60)
            let (_, k1Again) = try await stores.sessions.create(
                username: "kim", credential: .uaf(aaid: "F1D0#1001", keyID: "k1"), now: now, lifetime: 60)
            let (_, k2) = try await stores.sessions.create(username: "kim", credential: .uaf(aaid: "F1D0#1005", keyID: "k2"), now: now, lifetime: 60)
            let (_, k3) = try await stores.sessions.create(username: "kim", credential: .uaf(aaid: "F1D0#1005", keyID: "k3"), now: now, lifetime: 60)
            let (_, other) = try await stores.sessions.create(
                username: "ann", credential: .uaf(aaid: "F1D0#1001", keyID: "k1"), now: now, lifetime: 60)
            let revoked = try await stores.sessions.revoke(username: "kim", .uaf, ids: ["k1", "k3"], now: now)
            XCTAssertEqual(revoked, 3)
            var live: [String] = []
            for session in [k1, k1Again, k2, k3, other] where try await stores.sessions.session(id: session.id, now: now) != nil {
                live.append(session.credential.id)
            }
            XCTAssertEqual(live, ["k2", "k1"], "kim's k2 session and ann's session stay")
            let none = try await stores.sessions.revoke(username: "kim", .uaf, ids: [], now: now)
            XCTAssertEqual(none, 0)
        }
    }

    func testASessionIsLiveUntilRevokedOrExpired() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let (token, session) = try await stores.sessions.create(
                username: "hal", credential: .uaf(aaid: "F1D0#1001", keyID: "kh"), now: now, lifetime: 60)
            let byToken = try await stores.sessions.session(token: token, now: now)
            XCTAssertEqual(byToken?.id, session.id)
            let wrong = try await stores.sessions.session(token: token + "x", now: now)
            XCTAssertNil(wrong)
            let expired = try await stores.sessions.session(token: token, now: now.addingTimeInterval(61))
            XCTAssertNil(expired)
            let revoked = try await stores.sessions.revoke(id: session.id, now: now)
            XCTAssertTrue(revoked)
            let afterRevoke = try await stores.sessions.session(id: session.id, now: now)
            XCTAssertNil(afterRevoke)
        }
    }

    func testASessionTokenIsStoredOnlyAsItsHash() async throws {
        try await onEveryEngine { stores in
            let (token, _) = try await stores.sessions.create(
                username: "ivy", credential: .uaf(aaid: "F1D0#1001", keyID: "ki"), now: Date(), lifetime: 60)
            let rows = try await stores.database.run { sql in try await sql.raw("SELECT token_hash FROM sessions").all() }
            let hashes = try rows.map { try $0.decode(column: "token_hash", as: String.self) }
            XCTAssertFalse(hashes.contains(token))
            XCTAssertEqual(hashes, [String(token.prefix(OrderedToken.prefixLength)) + SecretHash.of(token)])
        }
    }

    func testASessionTokenIssuedWithoutATimePartStillOpensItsSession() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let legacy = RandomToken.make(32)
            try await stores.database.run { sql in
                try await sql.raw(
                    """
                    INSERT INTO sessions (token_hash, id, username, credential_kind, aaid, credential_id, created_at, expires_at)
                    VALUES (\(bind: SecretHash.of(legacy)), 'legacy-id', 'lee', 'uaf', 'F1D0#1001', 'kl', \(bind: now.epochMillis), \(bind: now.epochMillis + 60_000))
                    """
                ).run()
            }
            let session = try await stores.sessions.session(token: legacy, now: now)
            XCTAssertEqual(session?.id, "legacy-id")
        }
    }

    func testAPurgeDeletesEveryExpiredRowInBatchesAndKeepsTheLiveOnes() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            for (index, offset) in [-50, -40, -30, -20, -10, 60].enumerated() {
                _ = try await stores.sessions.create(
                    username: "u\(index)", credential: .uaf(aaid: "F1D0#1001", keyID: "k\(index)"), now: now.addingTimeInterval(Double(offset) - 60),
                    lifetime: 60)
                try await stores.status.create(
                    StatusRecord(
                        sessionId: "s\(index)", status: .succeeded, operation: "Auth", username: nil,
                        updatedAt: now.addingTimeInterval(Double(offset) - 60)), retention: 60)
                _ = try await stores.deviceRequests.remember(
                    dispatchTargetId: "t", requestId: "r\(index)", until: now.addingTimeInterval(Double(offset)))
            }
            // Two rows per statement: five expired rows take three statements, the last one short.
            let sessions = try await stores.sessions.purge(expiredBefore: now, batch: 2)
            let statuses = try await stores.status.purge(expiredBefore: now, batch: 2)
            let requestIDs = try await stores.deviceRequests.purge(expiredBefore: now, batch: 2)
            XCTAssertEqual([sessions, statuses, requestIDs], [5, 5, 5])
            let left = try await stores.database.run { sql in
                try await sql.raw(
                    """
                    SELECT (SELECT COUNT(*) FROM sessions) AS sessions, (SELECT COUNT(*) FROM status_records) AS statuses,
                    (SELECT COUNT(*) FROM device_requests) AS request_ids
                    """
                ).first()
            }
            XCTAssertEqual(try ["sessions", "statuses", "request_ids"].map { try left?.decode(column: $0, as: Int.self) }, [1, 1, 1])
            let live = try await stores.status.record(sessionId: "s5", now: now)
            XCTAssertNotNil(live, "the live status record was purged")
        }
    }

    func testAPurgeReadsOnlyTheRowsItDeletes() async throws {
        try await onEveryEngine { stores in
            // The purge statement's plan: the expired rows picked through the expires_at index and deleted by row id,
            // never a scan of the whole table (the earlier `key IN (SELECT key … LIMIT n)` joined against a sequential
            // scan of every status record).
            let database = stores.database
            let cutoff = Date().epochMillis
            let statement = StoreDatabase.purgeStatement(
                engine: database.engine, table: "status_records", before: cutoff,
                batch: StoreDatabase.purgeBatch)
            switch database.engine {
            case .sqlite:
                let plan = try await database.run { sql in
                    let text = sql.serialize(statement).sql
                    return try await sql.raw("EXPLAIN QUERY PLAN \(unsafeRaw: text)").all().map { try $0.decode(column: "detail", as: String.self) }
                }
                let joined = plan.joined(separator: "\n")
                XCTAssertTrue(joined.contains("status_records_by_expiry"), "the expired rows are not picked through the index:\n\(joined)")
                XCTAssertFalse(plan.contains { $0.hasPrefix("SCAN status_records") }, "the purge scans the table:\n\(joined)")
                XCTAssertTrue(joined.contains("USING INTEGER PRIMARY KEY (rowid=?)"), "the rows are not deleted by rowid:\n\(joined)")
            case .postgres:
                for (state, joined) in try await Self.postgresPurgePlans(cutoff: cutoff, on: database) {
                    XCTAssertTrue(joined.contains("Index Scan"), "\(state): the expired rows are not picked through the index:\n\(joined)")
                    XCTAssertFalse(joined.contains("Seq Scan"), "\(state): the purge scans the table:\n\(joined)")
                    XCTAssertTrue(joined.contains("Tid Scan"), "\(state): the rows are not deleted by ctid:\n\(joined)")
                }
            }
        }
    }

    /// The plans of a purge as a server's connection runs it (one connection of the instance's set, with its session
    /// setting, each statement committed on its own) on a table like the status records, 20,001 rows whose expiries
    /// are in no order (status records move when they are updated), half of them expired:
    /// - never analyzed (a new database, until autovacuum first analyzes the table: a minute at the soonest, never
    ///   within a benchmark's run), where PostgreSQL guesses a third of the rows for `expires_at < x`;
    /// - planned on the empty table: the statement first run while the table was empty and analyzed as such (a
    ///   server's first purge, a second after it starts), the rows added since. A statement with values is prepared
    ///   and, under the connections' `plan_cache_mode = force_generic_plan`, keeps the plan it got then until the
    ///   table is analyzed again;
    /// - analyzed.
    static func postgresPurgePlans(cutoff: Int64, on database: StoreDatabase) async throws -> [(String, String)] {
        try await database.run { sql in
            let table = "purge_probe_\(UInt32.random(in: 0 ... .max))"
            try await sql.raw("CREATE TABLE \(unsafeRaw: table) (LIKE status_records INCLUDING ALL)").run()
            do {
                let plans = try await purgePlans(of: table, cutoff: cutoff, on: sql)
                try await sql.raw("DROP TABLE \(unsafeRaw: table)").run()
                return plans
            } catch {
                // The table goes whatever failed (the prepared statement goes with the connection).
                try? await sql.raw("DROP TABLE \(unsafeRaw: table)").run()
                throw error
            }
        }
    }

    /// ``postgresPurgePlans(cutoff:on:)`` on its probe `table`, on one connection.
    private static func purgePlans(of table: String, cutoff: Int64, on sql: any SQLDatabase) async throws -> [(String, String)] {
        let statement = StoreDatabase.purgeStatement(engine: .postgres, table: table, before: cutoff, batch: StoreDatabase.purgeBatch)
        let (text, binds) = sql.serialize(statement)
        var run = SQLQueryString(text)
        if !binds.isEmpty {
            try await sql.raw("PREPARE planned AS \(unsafeRaw: text)").run()
            let values = try binds.map { bind in
                guard let value = bind as? Int64 else { throw UnrenderedValue(value: String(describing: bind)) }
                return String(value)
            }
            run = "EXECUTE planned(\(unsafeRaw: values.joined(separator: ", ")))"
        }
        let fill: SQLQueryString = """
            INSERT INTO \(unsafeRaw: table) (session_id, status, operation, authenticators, updated_at, expires_at)
            SELECT 'plan-' || i, 'succeeded', 'Auth', '[]', \(unsafeRaw: String(cutoff)), \(unsafeRaw: String(cutoff)) - 10000 + (i * 7919) % 20001
            FROM generate_series(0, 20000) AS i
            """
        let plan = { () async throws -> String in
            try await sql.raw("EXPLAIN \(run)").all().map { try $0.decode(column: "QUERY PLAN", as: String.self) }.joined(separator: "\n")
        }
        var plans: [(String, String)] = []
        try await sql.raw(fill).run()
        plans.append(("never analyzed", try await plan()))
        try await sql.raw("TRUNCATE \(unsafeRaw: table)").run()
        try await sql.raw("ANALYZE \(unsafeRaw: table)").run()
        try await sql.raw(run).run()
        try await sql.raw(fill).run()
        plans.append(("planned on the empty table", try await plan()))
        try await sql.raw("ANALYZE \(unsafeRaw: table)").run()
        plans.append(("analyzed", try await plan()))
        if !binds.isEmpty { try await sql.raw("DEALLOCATE planned").run() }
        return plans
    }

    func testAFinishedStatusRecordIsFinal() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await stores.status.create(
                StatusRecord(
                    sessionId: "s1", status: .clientAuthenticating, operation: "Auth", username: nil,
                    uafStatusCode: nil, asmStatusCode: nil, clientErrorCode: nil, authenticators: [], updatedAt: now), retention: 600)
            let first = try await stores.status.finish(
                sessionId: "s1", status: .succeeded, username: "jo", uafStatusCode: 1200, asmStatusCode: 0,
                authenticators: [.init(aaid: "F1D0#1001", keyId: "kj")], now: now, retention: 600)
            let second = try await stores.status.finish(
                sessionId: "s1", status: .failed, username: nil, uafStatusCode: 1498, asmStatusCode: nil,
                authenticators: [], now: now, retention: 600)
            XCTAssertTrue(first)
            XCTAssertFalse(second)
            let record = try await stores.status.record(sessionId: "s1", now: now)
            XCTAssertEqual(record?.status, .succeeded)
            XCTAssertEqual(record?.username, "jo")
            XCTAssertEqual(record?.uafStatusCode, 1200)
            XCTAssertEqual(record?.asmStatusCode, 0)
            XCTAssertEqual(record?.authenticators, [.init(aaid: "F1D0#1001", keyId: "kj")])
            let gone = try await stores.status.record(sessionId: "s1", now: now.addingTimeInterval(601))
            XCTAssertNil(gone)
        }
    }

    func testEveryInstanceGetsTheSameSigningKey() async throws {
        try await onEveryEngine { stores in
            try await stores.signingKeys.bootstrap(candidate: ("kid-a", "pem-a"), now: Date())
            try await stores.signingKeys.bootstrap(candidate: ("kid-b", "pem-b"), now: Date())
            let usable = try await stores.signingKeys.usable(now: Date(), keepRetiredFor: 600)
            XCTAssertEqual(usable.map(\.kid), ["kid-a"])
            XCTAssertEqual(usable.first?.state, .active)
        }
    }

    func testActivatingAPendingKeyRetiresTheActiveOneAndItLeavesAfterItsTokens() async throws {
        try await onEveryEngine { stores in
            let start = Date()
            try await stores.signingKeys.bootstrap(candidate: ("kid-a", "pem-a"), now: start)
            try await stores.signingKeys.add(kid: "kid-b", pem: "pem-b", now: start.addingTimeInterval(1))
            let pending = try await stores.signingKeys.usable(now: start.addingTimeInterval(2), keepRetiredFor: 600)
            XCTAssertEqual(pending.map { "\($0.kid) \($0.state)" }, ["kid-a active", "kid-b pending"])
            try await stores.signingKeys.activate(kid: "kid-b", now: start.addingTimeInterval(3))
            let rotated = try await stores.signingKeys.usable(now: start.addingTimeInterval(4), keepRetiredFor: 600)
            XCTAssertEqual(rotated.map { "\($0.kid) \($0.state)" }, ["kid-b active", "kid-a retired"])
            let later = try await stores.signingKeys.usable(now: start.addingTimeInterval(604), keepRetiredFor: 600)
            XCTAssertEqual(later.map(\.kid), ["kid-b"])
        }
    }

    func testOnlyAPendingKeyCanBeActivatedAndTheActiveOneCannotBeRetired() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await stores.signingKeys.bootstrap(candidate: ("kid-a", "pem-a"), now: now)
            try await stores.signingKeys.add(kid: "kid-b", pem: "pem-b", now: now)
            func refusal(_ change: () async throws -> Void) async -> SigningKeyStore.ChangeRefusal? {
                do {
                    try await change()
                    return nil
                } catch { return error as? SigningKeyStore.ChangeRefusal }
            }
            let activeAgain = await refusal { try await stores.signingKeys.activate(kid: "kid-a", now: now) }
            let unknown = await refusal { try await stores.signingKeys.activate(kid: "kid-x", now: now) }
            let active = await refusal { try await stores.signingKeys.retire(kid: "kid-a", now: now) }
            XCTAssertEqual(activeAgain, .notPending("kid-a", .active))
            XCTAssertEqual(unknown, .unknown("kid-x"))
            XCTAssertEqual(active, .active("kid-a"))
            try await stores.signingKeys.retire(kid: "kid-b", now: now)
            let twice = await refusal { try await stores.signingKeys.retire(kid: "kid-b", now: now) }
            let retired = await refusal { try await stores.signingKeys.activate(kid: "kid-b", now: now) }
            XCTAssertEqual(twice, .alreadyRetired("kid-b"))
            XCTAssertEqual(retired, .notPending("kid-b", .retired))
            let usable = try await stores.signingKeys.usable(now: now.addingTimeInterval(1), keepRetiredFor: 0)
            XCTAssertEqual(usable.map(\.kid), ["kid-a"])
        }
    }

    func testADispatchTargetNameIsUniquePerUser() async throws {
        try await onEveryEngine { stores in
            let insertedFirst = try await stores.dispatchTargets.insert(target("t1", name: "phone"))
            let insertedTwice = try await stores.dispatchTargets.insert(target("t2", name: "phone"))
            let otherUser = try await stores.dispatchTargets.insert(target("t3", username: "v", name: "phone"))
            let second = try await stores.dispatchTargets.insert(target("t4", name: "tablet"))
            XCTAssertEqual([insertedFirst, insertedTwice, otherUser, second], [true, false, true, true])
            let taken = try await stores.dispatchTargets.update(id: "t4", name: "phone", target: nil, now: Date())
            let renamed = try await stores.dispatchTargets.update(id: "t4", name: "tablet 2", target: nil, now: Date())
            let missing = try await stores.dispatchTargets.update(id: "none", name: "x", target: nil, now: Date())
            XCTAssertEqual([taken, renamed, missing], [.nameTaken, .updated, .notFound])
            let stored = try await stores.dispatchTargets.target(id: "t4")
            XCTAssertEqual(stored?.name, "tablet 2")
            XCTAssertNil(stored?.target)
            let names = try await stores.dispatchTargets.targets(username: "u").map(\.name)
            XCTAssertEqual(names, ["phone", "tablet 2"])
            let deleted = try await stores.dispatchTargets.delete(id: "t1")
            let again = try await stores.dispatchTargets.delete(id: "t1")
            XCTAssertEqual([deleted, again], [true, false])
        }
    }

    func testADispatchTokenIsRedeemedExactlyOnceUnderConcurrency() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await stores.dispatchTokens.insert(token("h1", expiresAt: now.addingTimeInterval(300)), retention: 600)
            try await stores.dispatchTokens.insert(token("h2", expiresAt: now.addingTimeInterval(-1)), retention: 600)
            try await stores.dispatchTokens.insert(token("h3", expiresAt: now.addingTimeInterval(300)), retention: 600)
            let pending = try await stores.dispatchTokens.pending(dispatchTargetId: "t1", now: now).map(\.tokenHash)
            XCTAssertEqual(pending, ["h1", "h3"], "neither redeemed nor expired")
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        if case .redeemed = try await stores.dispatchTokens.redeem(tokenHash: "h1", operation: "Auth", now: now) { return true }
                        return false
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            XCTAssertEqual(wins, 1)
            let wrongOperation = try await stores.dispatchTokens.redeem(tokenHash: "h3", operation: "Reg", now: now)
            XCTAssertEqual(wrongOperation, .refused)
            guard case .expired(let expired) = try await stores.dispatchTokens.redeem(tokenHash: "h2", operation: "Auth", now: now) else {
                return XCTFail("an expired token is reported as expired")
            }
            XCTAssertEqual(expired.sessionId, "s-h2")
            let left = try await stores.dispatchTokens.pending(dispatchTargetId: "t1", now: now).map(\.tokenHash)
            XCTAssertEqual(left, ["h3"])
            let purged = try await stores.dispatchTokens.purge(expiredBefore: now.addingTimeInterval(600), retention: 600)
            XCTAssertEqual(purged, 1, "only h2 is past its expiry plus retention")
        }
    }

    func testACancelledOperationIsFinalAndItsTokenAnswersExpired() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            try await stores.dispatchTokens.insert(token("c1", expiresAt: now.addingTimeInterval(300)), retention: 600)
            try await stores.status.create(
                StatusRecord(sessionId: "s-c1", status: .tokenCreated, operation: "Auth", username: "u", updatedAt: now),
                retention: 600)
            let withdrawn = try await stores.dispatchTokens.cancel(sessionId: "s-c1", now: now)
            XCTAssertTrue(withdrawn)
            let again = try await stores.dispatchTokens.cancel(sessionId: "s-c1", now: now)
            XCTAssertFalse(again, "an ended token is not withdrawn twice")
            let cancelled = try await stores.status.cancel(sessionId: "s-c1", now: now, retention: 600)
            XCTAssertTrue(cancelled)
            guard case .expired = try await stores.dispatchTokens.redeem(tokenHash: "c1", operation: "Auth", now: now) else {
                return XCTFail("a cancelled token answers expired, even within the same millisecond")
            }
            let redeemed = try await stores.status.tokenRedeemed(sessionId: "s-c1", status: .failed, result: .tokenTimedOut, now: now, retention: 600)
            let finished = try await stores.status.finish(
                sessionId: "s-c1", status: .succeeded, username: nil, uafStatusCode: 1200, asmStatusCode: nil,
                authenticators: [], now: now, retention: 600)
            XCTAssertFalse(redeemed || finished, "cancelled is final")
            let record = try await stores.status.record(sessionId: "s-c1", now: now)
            XCTAssertEqual(record?.status, .cancelled)
            let recancelled = try await stores.status.cancel(sessionId: "s-c1", now: now, retention: 600)
            XCTAssertFalse(recancelled)
        }
    }

    func testTheDispatchesToATargetAreCountedSinceATime() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            for (hash, target, created) in [("n1", "t9", -30.0), ("n2", "t9", -59.0), ("n3", "t9", -61.0), ("n4", "t8", -1.0)] {
                var record = token(hash, target: target, expiresAt: now.addingTimeInterval(300))
                record.createdAt = now.addingTimeInterval(created)
                try await stores.dispatchTokens.insert(record, retention: 600)
            }
            let recent = try await stores.dispatchTokens.count(dispatchTargetId: "t9", since: now.addingTimeInterval(-60))
            XCTAssertEqual(recent, 2)
        }
    }

    func testAnExpiredTokenLosesItsPayloadAndStillAnswersExpired() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            func carrying(_ hash: String, expiresAt: Date) -> DispatchTokenRecord {
                var record = token(hash, expiresAt: expiresAt)
                record.getUAFRequest = #"{"context":"\#(String(repeating: "x", count: 4000))"}"#
                record.dispatchInformation = #"{"data":"d"}"#
                return record
            }
            for (hash, offset) in [("e1", -20.0), ("e2", -10.0), ("e3", -5.0), ("live", 300.0), ("before", -100.0)] {
                try await stores.dispatchTokens.insert(carrying(hash, expiresAt: now.addingTimeInterval(offset)), retention: 600)
            }
            // One row per statement: the loop goes on until the range is done.
            let cleared = try await stores.dispatchTokens.clearPayloads(expiredFrom: now.addingTimeInterval(-50), before: now, batch: 1)
            XCTAssertEqual(cleared, 3, "e1, e2 and e3 expired within the range")
            let again = try await stores.dispatchTokens.clearPayloads(expiredFrom: now.addingTimeInterval(-50), before: now, batch: 1)
            XCTAssertEqual(again, 0, "an emptied row is not written again")
            guard case .expired(let emptied) = try await stores.dispatchTokens.redeem(tokenHash: "e2", operation: "Auth", now: now) else {
                return XCTFail("an emptied token still answers expired")
            }
            XCTAssertEqual([emptied.getUAFRequest, emptied.dispatchInformation, emptied.payload], ["", nil, nil])
            XCTAssertEqual(emptied.sessionId, "s-e2", "the status session it names is kept")
            guard case .redeemed(let live) = try await stores.dispatchTokens.redeem(tokenHash: "live", operation: "Auth", now: now) else {
                return XCTFail("an unexpired token keeps what it carries")
            }
            XCTAssertEqual(live.getUAFRequest.utf8.count, 4014)
            XCTAssertEqual(live.payload, "p")
            guard case .expired(let outside) = try await stores.dispatchTokens.redeem(tokenHash: "before", operation: "Auth", now: now) else {
                return XCTFail("expired")
            }
            XCTAssertEqual(outside.payload, "p", "a row outside the range is not read (an earlier purge covered it)")
        }
    }

    func testADeviceRequestIDIsAcceptedOnce() async throws {
        try await onEveryEngine { stores in
            let until = Date().addingTimeInterval(600)
            let first = try await stores.deviceRequests.remember(dispatchTargetId: "t1", requestId: "r1", until: until)
            let replay = try await stores.deviceRequests.remember(dispatchTargetId: "t1", requestId: "r1", until: until)
            let otherTarget = try await stores.deviceRequests.remember(dispatchTargetId: "t2", requestId: "r1", until: until)
            XCTAssertEqual([first, replay, otherTarget], [true, false, true])
        }
    }

    func testAuditEventsAreWrittenInBatchesReadNewestFirstAndPurgedAfterTheirRetention() async throws {
        try await onEveryEngine { stores in
            let start = Date(timeIntervalSince1970: 1_790_000_000)
            // More than one statement's rows, and text JSON and SQL both treat specially.
            let events: [AuditEvent] = (0..<1_200).map { (i: Int) -> AuditEvent in
                let even = i % 2 == 0
                let principal: String? = i % 3 == 0 ? nil : "relying-party:o'neil"
                return AuditEvent(
                    at: start.addingTimeInterval(Double(i)), requestID: "r\(i)", clientAddress: even ? "192.0.2.1" : "2001:db8::1",
                    principal: principal, operation: "authentication", username: even ? "alice" : "bob\"; --",
                    statusCode: 1200, detail: "line\nbreak \u{1F511}")
            }
            try await stores.audit.insert(events, retention: 3600)
            let alices = try await stores.audit.events(username: "alice", limit: 2000)
            XCTAssertEqual(alices.count, 600)
            XCTAssertEqual(alices.first, events[1198])
            let bobs = try await stores.audit.events(username: "bob\"; --", since: start.addingTimeInterval(1_100), limit: 10)
            XCTAssertEqual(bobs.map(\.requestID), (0..<10).map { "r\(1199 - 2 * $0)" })
            XCTAssertEqual(bobs.first?.principal, "relying-party:o'neil")
            let purged = try await stores.audit.purge(expiredBefore: start.addingTimeInterval(3600 + 600), batch: 250)
            XCTAssertEqual(purged, 600)
            let left = try await stores.audit.events(limit: 2000)
            XCTAssertEqual(left.count, 600)
        }
    }

    func testAnAuthCloudUserIsCreatedOnceUnderConcurrency() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let results = try await withThrowingTaskGroup(of: (AuthCloudUserRecord, Bool).self) { group in
                for _ in 0..<8 { group.addTask { try await stores.authCloudUsers.findOrCreate(username: "carol", now: now) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(Set(results.map(\.0.userId)).count, 1, "every caller reads back the one user")
            XCTAssertEqual(results.filter(\.1).count, 1, "exactly one caller created it")
            let user = try XCTUnwrap(results.first?.0)
            let byID = try await stores.authCloudUsers.user(id: user.userId)
            XCTAssertEqual(byID, user)
            let deleted = try await stores.authCloudUsers.delete(id: user.userId)
            XCTAssertTrue(deleted)
            let gone = try await stores.authCloudUsers.user(username: "carol")
            XCTAssertNil(gone)
        }
    }

    func testAnAccessKeyIsStoredOnlyAsItsHashAndStopsWhenRevoked() async throws {
        try await onEveryEngine { stores in
            let (key, record) = try await stores.accessKeys.create(name: "backend", now: Date())
            XCTAssertTrue(key.hasPrefix(AccessKeyStore.prefix))
            let valid = try await stores.accessKeys.validate(key)
            XCTAssertEqual(valid?.id, record.id)
            let stored = try await stores.database.run { sql in try await sql.raw("SELECT key_hash FROM access_keys").all() }
            XCTAssertFalse(try stored.map { try $0.decode(column: "key_hash", as: String.self) }.contains(key), "the key itself is never stored")
            let wrong = try await stores.accessKeys.validate(key + "x")
            XCTAssertNil(wrong)
            let revokedOnce = try await stores.accessKeys.revoke(id: record.id, now: Date())
            XCTAssertTrue(revokedOnce)
            let revoked = try await stores.accessKeys.validate(key)
            XCTAssertNil(revoked)
            let revokedTwice = try await stores.accessKeys.revoke(id: record.id, now: Date())
            XCTAssertFalse(revokedTwice, "a key is revoked once")
            let listed = try await stores.accessKeys.list()
            XCTAssertNotNil(listed.first?.revokedAt)
        }
    }

    func testAStatusRecordLeavesTokenCreatedOnce() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let information = StatusRecord.TokenInformation(
                dispatchTargetExtId: "ext", tokenResult: nil,
                dispatcherInformation: .init(name: "link", response: "mauth://oob?x"), tokenExpiresAt: 42)
            try await stores.status.create(
                StatusRecord(
                    sessionId: "d1", status: .tokenCreated, operation: "Reg", username: "u", updatedAt: now,
                    tokenInformation: information), retention: 600)
            let moved = try await stores.status.tokenRedeemed(
                sessionId: "d1", status: .clientRegistering, result: .tokenRedeemed, now: now, retention: 600)
            let again = try await stores.status.tokenRedeemed(sessionId: "d1", status: .failed, result: .tokenTimedOut, now: now, retention: 600)
            XCTAssertEqual([moved, again], [true, false])
            let record = try await stores.status.record(sessionId: "d1", now: now)
            XCTAssertEqual(record?.status, .clientRegistering)
            XCTAssertEqual(record?.tokenInformation?.tokenResult, .tokenRedeemed)
            XCTAssertEqual(record?.tokenInformation?.dispatcherInformation?.response, "mauth://oob?x")
            XCTAssertEqual(record?.tokenInformation?.tokenExpiresAt, 42)
        }
    }
}
