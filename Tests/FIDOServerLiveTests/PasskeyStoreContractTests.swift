import Foundation
import SQLKit
import XCTest

@testable import FIDOServerCore

/// The passkey stores' contract, held on SQLite and on PostgreSQL (``StoreContractTests/onEveryEngine(_:)``): what
/// lets several instances share passkeys and ceremonies.
extension StoreContractTests {
    func passkey(_ id: String, username: String = "alice", signCount: UInt32 = 0) -> PasskeyRecord {
        PasskeyRecord(
            credentialID: id, username: username, userHandle: "handle-\(username)", publicKey: [0xA5, 1, 2, 3, 0xFF], signCount: signCount,
            userVerifiedAtRegistration: true, backupEligible: true, backupState: false, transports: ["internal", "hybrid"],
            aaguid: "fbfc3007-154e-4ecc-8c0b-6e020557d7bd", attestationFormat: "packed", attestationType: "self", discoverable: true,
            name: "Alice's phone", createdAt: Date(epochMillis: 1_790_000_000_123), lastUsedAt: nil)
    }

    func ceremony(_ challenge: String, username: String? = "alice", expiresAt: Date = Date().addingTimeInterval(300)) -> PasskeyCeremony {
        PasskeyCeremony(
            challenge: challenge, sessionID: "session-\(challenge)", kind: .authentication, username: username, userHandle: nil,
            userVerification: "required", expiresAt: expiresAt)
    }

    func testAPasskeyRoundTripsEveryField() async throws {
        try await onEveryEngine { stores in
            var record = passkey("cred-1")
            let outcome22 = try await stores.passkeys.insert(record)
            XCTAssertTrue(outcome22)
            let read = try await stores.passkeys.passkey(id: "cred-1")
            XCTAssertEqual(read, record)
            record.credentialID = "cred-2"
            record.discoverable = nil
            record.name = nil
            record.transports = []
            let outcome26 = try await stores.passkeys.insert(record)
            XCTAssertTrue(outcome26)
            let second = try await stores.passkeys.passkey(id: "cred-2")
            XCTAssertEqual(second, record)
            let handle = try await stores.passkeys.userHandle(username: "alice")
            XCTAssertEqual(handle, "handle-alice")
        }
    }

    func testACredentialIDIsRegisteredOnceUnderConcurrency() async throws {
        try await onEveryEngine { stores in
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    let record = passkey("shared", username: "user-\(index)")
                    group.addTask { try await stores.passkeys.insert(record) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            XCTAssertEqual(wins, 1)
        }
    }

    func testAPasskeyCounterAdvancesOnlyFromTheComparedValue() async throws {
        try await onEveryEngine { stores in
            _ = try await stores.passkeys.insert(passkey("counted", signCount: 5))
            let at = Date(epochMillis: 1_790_000_100_000)
            let advanced = try await stores.passkeys.recordUse(id: "counted", from: 5, to: 6, backupState: true, at: at)
            XCTAssertTrue(advanced)
            let stale = try await stores.passkeys.recordUse(id: "counted", from: 5, to: 7, backupState: false, at: at)
            XCTAssertFalse(stale)
            let read = try await stores.passkeys.passkey(id: "counted")
            XCTAssertEqual(read?.signCount, 6)
            XCTAssertEqual(read?.backupState, true)
            XCTAssertEqual(read?.lastUsedAt, at)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 { group.addTask { try await stores.passkeys.recordUse(id: "counted", from: 6, to: 7, backupState: true, at: at) } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            XCTAssertEqual(wins, 1)
        }
    }

    func testPasskeyDeletionNeverReachesAnotherUsersPasskey() async throws {
        try await onEveryEngine { stores in
            _ = try await stores.passkeys.insert(passkey("a1"))
            _ = try await stores.passkeys.insert(passkey("a2"))
            _ = try await stores.passkeys.insert(passkey("b1", username: "bob"))
            let none = try await stores.passkeys.delete(username: "alice", ids: ["b1"])
            XCTAssertEqual(none, [])
            let one = try await stores.passkeys.delete(username: "alice", ids: ["a1"])
            XCTAssertEqual(one.map(\.credentialID), ["a1"])
            let rest = try await stores.passkeys.delete(username: "alice")
            XCTAssertEqual(rest.map(\.credentialID), ["a2"])
            let bobs = try await stores.passkeys.passkeys(username: "bob")
            XCTAssertEqual(bobs.map(\.credentialID), ["b1"])
        }
    }

    func testACeremonyIsConsumedExactlyOnceUnderConcurrency() async throws {
        try await onEveryEngine { stores in
            let record = ceremony("challenge-once")
            let outcome83 = try await stores.passkeyCeremonies.open(record, cap: nil)
            XCTAssertTrue(outcome83)
            let wins = try await withThrowingTaskGroup(of: PasskeyCeremony?.self) { group in
                for _ in 0..<20 { group.addTask { try await stores.passkeyCeremonies.consume(challenge: "challenge-once") } }
                return try await group.reduce(into: [PasskeyCeremony]()) { if let won = $1 { $0.append(won) } }
            }
            XCTAssertEqual(wins.count, 1)
            XCTAssertEqual(wins.first?.sessionID, "session-challenge-once")
            XCTAssertEqual(wins.first?.expiresAt.epochMillis, record.expiresAt.epochMillis)
        }
    }

    func testACeremonyKeepsItsFirstOutcomeForTheStatusService() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let cap = CeremonyCap(username: "alice", limit: 1, now: now)
            _ = try await stores.passkeyCeremonies.open(ceremony("watched"), cap: cap)
            let issued = try await stores.passkeyCeremonies.status(sessionID: "session-watched")
            XCTAssertEqual(issued?.state, .initialized)
            XCTAssertEqual(issued?.kind, .authentication)
            XCTAssertEqual(issued?.username, "alice")
            let full = try await stores.passkeyCeremonies.open(ceremony("over"), cap: cap)
            XCTAssertFalse(full)
            _ = try await stores.passkeyCeremonies.consume(challenge: "watched")
            let answered = try await stores.passkeyCeremonies.status(sessionID: "session-watched")
            XCTAssertEqual(answered?.state, .answered)
            // An answered ceremony no longer counts against her cap.
            let room = try await stores.passkeyCeremonies.open(ceremony("next"), cap: cap)
            XCTAssertTrue(room)
            try await stores.passkeyCeremonies.finish(challenge: "watched", succeeded: false, outcome: "the signature does not verify")
            try await stores.passkeyCeremonies.finish(challenge: "watched", succeeded: true, outcome: nil, username: "mallory")
            let failed = try await stores.passkeyCeremonies.status(sessionID: "session-watched")
            XCTAssertEqual(failed?.state, .failed, "the first outcome is final")
            XCTAssertEqual(failed?.outcome, "the signature does not verify")
            XCTAssertEqual(failed?.username, "alice")
            let again = try await stores.passkeyCeremonies.consume(challenge: "watched")
            XCTAssertNil(again)
            // Never answered: finishing it changes nothing.
            try await stores.passkeyCeremonies.finish(challenge: "next", succeeded: true, outcome: nil)
            let waiting = try await stores.passkeyCeremonies.status(sessionID: "session-next")
            XCTAssertEqual(waiting?.state, .initialized)
            let unknown = try await stores.passkeyCeremonies.status(sessionID: "session-nothing")
            XCTAssertNil(unknown)
        }
    }

    func testACancelledCeremonyCannotBeAnsweredAndFreesHerCap() async throws {
        try await onEveryEngine { stores in
            let cap = CeremonyCap(username: "alice", limit: 1, now: Date())
            var narrowed = ceremony("cancelled")
            narrowed.credentialID = "only-this-one"
            _ = try await stores.passkeyCeremonies.open(narrowed, cap: cap)
            let cancelled = try await stores.passkeyCeremonies.cancel(sessionID: "session-cancelled")
            XCTAssertTrue(cancelled)
            let twice = try await stores.passkeyCeremonies.cancel(sessionID: "session-cancelled")
            XCTAssertFalse(twice, "only an unanswered ceremony is cancelled")
            let answer = try await stores.passkeyCeremonies.consume(challenge: "cancelled")
            XCTAssertNil(answer, "its challenge can no longer be answered")
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-cancelled")
            XCTAssertEqual(status?.state, .cancelled)
            XCTAssertEqual(status?.outcome, PasskeyCeremonyStore.cancelledOutcome)
            XCTAssertEqual(status?.credentialID, "only-this-one")
            let room = try await stores.passkeyCeremonies.open(ceremony("after"), cap: cap)
            XCTAssertTrue(room, "a cancelled ceremony no longer counts against her cap")
        }
    }

    func testAnAnsweredCeremonyCannotBeCancelledAndNamesItsCredential() async throws {
        try await onEveryEngine { stores in
            var narrowed = ceremony("narrowed")
            narrowed.credentialID = "her-phone"
            _ = try await stores.passkeyCeremonies.open(narrowed, cap: nil)
            let consumed = try await stores.passkeyCeremonies.consume(challenge: "narrowed")
            XCTAssertEqual(consumed?.credentialID, "her-phone", "the answer is held to the one credential")
            let cancelled = try await stores.passkeyCeremonies.cancel(sessionID: "session-narrowed")
            XCTAssertFalse(cancelled)
            _ = try await stores.passkeyCeremonies.open(ceremony("open"), cap: nil)
            _ = try await stores.passkeyCeremonies.consume(challenge: "open")
            try await stores.passkeyCeremonies.finish(challenge: "open", succeeded: true, outcome: nil, credentialID: "answered-with")
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-open")
            XCTAssertEqual(status?.state, .succeeded)
            XCTAssertEqual(status?.credentialID, "answered-with")
        }
    }

    func testACappedCeremonyStopsAtTheCapCountingOnlyUnexpiredOnes() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let cap = CeremonyCap(username: "alice", limit: 2, now: now)
            let outcome98 = try await stores.passkeyCeremonies.open(ceremony("old", expiresAt: now.addingTimeInterval(-1)), cap: cap)
            XCTAssertTrue(outcome98)
            let outcome99 = try await stores.passkeyCeremonies.open(ceremony("c1"), cap: cap)
            XCTAssertTrue(outcome99)
            let outcome100 = try await stores.passkeyCeremonies.open(ceremony("c2"), cap: cap)
            XCTAssertTrue(outcome100)
            let outcome101 = try await stores.passkeyCeremonies.open(ceremony("c3"), cap: cap)
            XCTAssertFalse(outcome101)
            // Uncounted ceremonies naming her do not count.
            let outcome103 = try await stores.passkeyCeremonies.open(ceremony("anonymous"), cap: nil)
            XCTAssertTrue(outcome103)
            let refused = try await stores.passkeyCeremonies.consume(challenge: "c3")
            XCTAssertNil(refused)
            let erased = try await stores.passkeyCeremonies.deleteCounted(username: "alice")
            XCTAssertEqual(erased, 3)
            let purged = try await stores.passkeyCeremonies.purge(expiredBefore: now.addingTimeInterval(3600))
            XCTAssertEqual(purged, 1)
        }
    }

    func testAPasskeyCeremonyIsConsumedOnceWithThePasskeyItsAnswerNames() async throws {
        try await onEveryEngine { stores in
            let record = passkey("cred-read")
            _ = try await stores.passkeys.insert(record)
            _ = try await stores.passkeyCeremonies.open(ceremony("with-passkey"), cap: nil)
            _ = try await stores.passkeyCeremonies.open(ceremony("unknown-credential", username: nil), cap: nil)
            let consumed = try await stores.ceremonies.consumePasskeyCeremony(challenge: "with-passkey", credentialID: "cred-read")
            XCTAssertEqual(consumed?.ceremony.sessionID, "session-with-passkey")
            XCTAssertEqual(consumed?.ceremony.username, "alice")
            XCTAssertEqual(consumed?.passkey, record)
            let again = try await stores.ceremonies.consumePasskeyCeremony(challenge: "with-passkey", credentialID: "cred-read")
            XCTAssertNil(again)
            let unknown = try await stores.ceremonies.consumePasskeyCeremony(challenge: "unknown-credential", credentialID: "nobody's")
            XCTAssertNotNil(unknown?.ceremony)
            XCTAssertNil(unknown?.ceremony.username)
            XCTAssertNil(unknown?.passkey)
        }
    }

    func testAPasskeySignInOpensWithHerPasskeysOldestFirst() async throws {
        try await onEveryEngine { stores in
            var older = passkey("cred-older")
            older.createdAt = Date(epochMillis: 1_790_000_000_000)
            _ = try await stores.passkeys.insert(passkey("cred-newer"))
            _ = try await stores.passkeys.insert(older)
            _ = try await stores.passkeys.insert(passkey("cred-bob", username: "bob"))
            let (passkeys, opened) = try await stores.ceremonies.openPasskeySignIn(
                ceremony("listed"), passkeysOf: "alice", requiringPasskeys: false, credentialID: nil)
            XCTAssertTrue(opened)
            XCTAssertEqual(passkeys, [older, passkey("cred-newer")])
            let stored = try await stores.passkeyCeremonies.consume(challenge: "listed")
            XCTAssertEqual(stored?.sessionID, "session-listed")
        }
    }

    func testAPasskeySignInForAUserWithoutPasskeysOpensOnlyWhereNoneAreRequired() async throws {
        try await onEveryEngine { stores in
            let anyone = try await stores.ceremonies.openPasskeySignIn(
                ceremony("for-anyone", username: "carol"), passkeysOf: "carol", requiringPasskeys: false, credentialID: nil)
            XCTAssertEqual(anyone.passkeys, [])
            XCTAssertTrue(anyone.opened)
            let required = try await stores.ceremonies.openPasskeySignIn(
                ceremony("required", username: "carol"), passkeysOf: "carol", requiringPasskeys: true, credentialID: nil)
            XCTAssertEqual(required.passkeys, [])
            XCTAssertFalse(required.opened)
            let notStored = try await stores.passkeyCeremonies.consume(challenge: "required")
            XCTAssertNil(notStored, "a refused sign-in stores nothing")
            let stored = try await stores.passkeyCeremonies.consume(challenge: "for-anyone")
            XCTAssertNotNil(stored)
        }
    }

    func testAPasskeySignInNarrowedToAnotherUsersPasskeyStoresNothing() async throws {
        try await onEveryEngine { stores in
            _ = try await stores.passkeys.insert(passkey("cred-alice"))
            _ = try await stores.passkeys.insert(passkey("cred-bob", username: "bob"))
            let foreign = try await stores.ceremonies.openPasskeySignIn(
                ceremony("foreign"), passkeysOf: "alice", requiringPasskeys: true, credentialID: "cred-bob")
            XCTAssertFalse(foreign.opened)
            XCTAssertEqual(foreign.passkeys.map(\.credentialID), ["cred-alice"])
            let notStored = try await stores.passkeyCeremonies.consume(challenge: "foreign")
            XCTAssertNil(notStored)
            var narrowed = ceremony("narrowed")
            narrowed.credentialID = "cred-alice"
            let hers = try await stores.ceremonies.openPasskeySignIn(
                narrowed, passkeysOf: "alice", requiringPasskeys: true, credentialID: "cred-alice")
            XCTAssertTrue(hers.opened)
            let stored = try await stores.passkeyCeremonies.consume(challenge: "narrowed")
            XCTAssertEqual(stored?.credentialID, "cred-alice")
        }
    }

    func testAPasskeySignInWithoutAUsernameReadsNoPasskey() async throws {
        try await onEveryEngine { stores in
            _ = try await stores.passkeys.insert(passkey("cred-alice"))
            let (passkeys, opened) = try await stores.ceremonies.openPasskeySignIn(
                ceremony("discoverable", username: nil), passkeysOf: nil, requiringPasskeys: false, credentialID: nil)
            XCTAssertTrue(opened)
            XCTAssertEqual(passkeys, [])
        }
    }

    func testACompletedPasskeySignInOpensItsSessionOnlyIfTheCounterMoved() async throws {
        try await onEveryEngine { stores in
            _ = try await stores.passkeys.insert(passkey("cred-sign", signCount: 4))
            let now = Date(epochMillis: 1_790_000_200_000)
            // Two answers without a username: the first signs in and its ceremony learns who; the second is a replay.
            for challenge in ["signing", "replaying"] {
                _ = try await stores.passkeyCeremonies.open(ceremony(challenge, username: nil), cap: nil)
                _ = try await stores.passkeyCeremonies.consume(challenge: challenge)
            }
            let first = SessionStore.make(username: "alice", credential: .passkey(credentialID: "cred-sign"), now: now, lifetime: 600)
            let completed = try await stores.ceremonies.completePasskeySignIn(
                id: "cred-sign", from: 4, to: 5, backupState: true, at: now,
                sessionToken: first.token, session: first.record, challenge: "signing")
            XCTAssertTrue(completed)
            let stale = SessionStore.make(username: "alice", credential: .passkey(credentialID: "cred-sign"), now: now, lifetime: 600)
            let replayed = try await stores.ceremonies.completePasskeySignIn(
                id: "cred-sign", from: 4, to: 6, backupState: true, at: now,
                sessionToken: stale.token, session: stale.record, challenge: "replaying")
            XCTAssertFalse(replayed)
            let signed = try await stores.passkeyCeremonies.status(sessionID: "session-signing")
            XCTAssertEqual(signed?.state, .succeeded)
            XCTAssertEqual(signed?.username, "alice")
            let notSigned = try await stores.passkeyCeremonies.status(sessionID: "session-replaying")
            XCTAssertEqual(notSigned?.state, .answered, "the replay's outcome is the service's to record")
            XCTAssertNil(notSigned?.username)
            let opened = try await stores.sessions.session(token: first.token, now: now)
            XCTAssertEqual(opened?.credential, .passkey(credentialID: "cred-sign"))
            let notOpened = try await stores.sessions.session(token: stale.token, now: now)
            XCTAssertNil(notOpened)
            let read = try await stores.passkeys.passkey(id: "cred-sign")
            XCTAssertEqual(read?.signCount, 5)
            XCTAssertEqual(read?.lastUsedAt, now)
        }
    }

    func testRemovingAPasskeyEndsItsSessionsAndNoUAFSessionOfTheSameID() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            let (_, passkey) = try await stores.sessions.create(
                username: "kim", credential: .passkey(credentialID: "same-id"), now: now, lifetime: 60)
            let (_, key) = try await stores.sessions.create(
                username: "kim", credential: .uaf(aaid: "F1D0#1001", keyID: "same-id"), now: now, lifetime: 60)
            let revoked = try await stores.sessions.revoke(username: "kim", .passkey, ids: ["same-id"], now: now)
            XCTAssertEqual(revoked, 1)
            let passkeyLive = try await stores.sessions.session(id: passkey.id, now: now)
            let keyLive = try await stores.sessions.session(id: key.id, now: now)
            XCTAssertNil(passkeyLive)
            XCTAssertEqual(keyLive?.credential, .uafKey(aaid: "F1D0#1001", keyID: "same-id"), "a UAF key's session is not a passkey's")
        }
    }

    func testMigration15GivesAPasskeySessionItsKindAndNoAAID() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            // The schema as migration 14 left it, with a UAF session and a passkey session as that version stored them;
            // then migration 15's statements (the start-up runner's transaction is SQLite's grouped commit here).
            let original = try XCTUnwrap(Migrations.all.first { $0.version == 2 }).statements.filter { $0.contains("sessions") }
            let migration = try XCTUnwrap(Migrations.all.first { $0.version == 15 }).statements
            try await stores.database.run { sql in
                try await sql.raw("DROP TABLE sessions").run()
                for statement in original { try await sql.raw(SQLQueryString(statement)).run() }
                try await sql.raw(
                    """
                    INSERT INTO sessions (token_hash, id, username, aaid, key_id, created_at, expires_at) VALUES
                    ('h1', 'uaf-session', 'kim', 'F1D0#1001', 'key-1', \(bind: now.epochMillis), \(bind: now.epochMillis + 60_000)),
                    ('h2', 'passkey-session', 'kim', '', 'cred-1', \(bind: now.epochMillis), \(bind: now.epochMillis + 60_000))
                    """
                ).run()
                for statement in migration { try await sql.raw(SQLQueryString(statement)).run() }
            }
            let uaf = try await stores.sessions.session(id: "uaf-session", now: now)
            let passkey = try await stores.sessions.session(id: "passkey-session", now: now)
            XCTAssertEqual(uaf?.credential, .uafKey(aaid: "F1D0#1001", keyID: "key-1"))
            XCTAssertEqual(passkey?.credential, .passkey(credentialID: "cred-1"))
            let aaid = try await stores.database.run { sql in
                try await sql.raw("SELECT aaid FROM sessions WHERE id = 'passkey-session'").first()?.decode(column: "aaid", as: String?.self)
            }
            XCTAssertNil(aaid, "a passkey session has no AAID, not an empty one")
        }
    }
}
