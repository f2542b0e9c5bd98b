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

    func testAPasskeySignInsAnswerReadsItsCeremonyWithThePasskeyAndLeavesIt() async throws {
        try await onEveryEngine { stores in
            let record = passkey("cred-read")
            _ = try await stores.passkeys.insert(record)
            _ = try await stores.passkeyCeremonies.open(ceremony("with-passkey"), cap: nil)
            _ = try await stores.passkeyCeremonies.open(ceremony("unknown-credential", username: nil), cap: nil)
            let read = try await stores.ceremonies.pendingPasskeySignIn(challenge: "with-passkey", credentialID: "cred-read")
            XCTAssertEqual(read?.ceremony.sessionID, "session-with-passkey")
            XCTAssertEqual(read?.ceremony.username, "alice")
            XCTAssertEqual(read?.passkey, record)
            let again = try await stores.ceremonies.pendingPasskeySignIn(challenge: "with-passkey", credentialID: "cred-read")
            XCTAssertEqual(again?.ceremony.sessionID, "session-with-passkey", "a read leaves the ceremony to its completion")
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-with-passkey")
            XCTAssertEqual(status?.state, .initialized)
            let unknown = try await stores.ceremonies.pendingPasskeySignIn(challenge: "unknown-credential", credentialID: "nobody's")
            XCTAssertNotNil(unknown?.ceremony)
            XCTAssertNil(unknown?.ceremony.username)
            XCTAssertNil(unknown?.passkey)
            let none = try await stores.ceremonies.pendingPasskeySignIn(challenge: "never-issued", credentialID: "cred-read")
            XCTAssertNil(none)
        }
    }

    /// A sign-in completed for `challenge` with `credential`'s counter from `from` to `to`, and the session's token.
    static func completeSignIn(
        _ stores: Stores, _ challenge: String, credential: String, from: UInt32, to: UInt32, now: Date
    ) async throws -> (completion: CeremonyStore.Completion, token: String) {
        let session = SessionStore.make(username: "alice", credential: .passkey(credentialID: credential), now: now, lifetime: 600)
        let completion = try await stores.ceremonies.completePasskeySignIn(
            id: credential, from: from, to: to, backupState: true, at: now, sessionToken: session.token, session: session.record,
            challenge: challenge, counterRefusal: "the signature counter did not increase")
        return (completion, session.token)
    }

    func testACompletionOfAPasskeyCeremonyAlreadyTakenWritesNothing() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            _ = try await stores.passkeys.insert(passkey("cred-twice", signCount: 4))
            _ = try await stores.passkeyCeremonies.open(ceremony("twice", username: nil), cap: nil)
            let first = try await Self.completeSignIn(stores, "twice", credential: "cred-twice", from: 4, to: 5, now: now)
            XCTAssertEqual(first.completion, .completed)
            // The second answer's counter would advance: only the ceremony stands in its way.
            let second = try await Self.completeSignIn(stores, "twice", credential: "cred-twice", from: 5, to: 6, now: now)
            XCTAssertEqual(second.completion, .requestGone)
            let read = try await stores.passkeys.passkey(id: "cred-twice")
            XCTAssertEqual(read?.signCount, 5, "the second answer moved the counter")
            let notOpened = try await stores.sessions.session(token: second.token, now: now)
            XCTAssertNil(notOpened, "the second answer opened a session")
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-twice")
            XCTAssertEqual(status?.state, .succeeded)
            XCTAssertEqual(status?.username, "alice")
            let pending = try await stores.ceremonies.pendingPasskeySignIn(challenge: "twice", credentialID: "cred-twice")
            XCTAssertNil(pending, "a completed ceremony is read again")
        }
    }

    func testOnlyOneOfConcurrentPasskeyCompletionsOfOneCeremonyWritesAnything() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            // A sign-in without a username, answered by twenty passkeys at once: no counter stands between them.
            let credentials = (0..<20).map { "cred-race-\($0)" }
            for id in credentials { _ = try await stores.passkeys.insert(passkey(id)) }
            _ = try await stores.passkeyCeremonies.open(ceremony("race", username: nil), cap: nil)
            let outcomes = try await withThrowingTaskGroup(of: CeremonyStore.Completion.self) { group in
                for id in credentials {
                    group.addTask {
                        // Each reads the ceremony first, as an answer does; some read it after another took it.
                        _ = try await stores.ceremonies.pendingPasskeySignIn(challenge: "race", credentialID: id)
                        return try await Self.completeSignIn(stores, "race", credential: id, from: 0, to: 1, now: now).completion
                    }
                }
                return try await group.reduce(into: [CeremonyStore.Completion]()) { $0.append($1) }
            }
            XCTAssertEqual(outcomes.filter { $0 == .completed }.count, 1)
            XCTAssertEqual(outcomes.filter { $0 == .requestGone }.count, 19)
            var moved: [String] = []
            for id in credentials where try await stores.passkeys.passkey(id: id)?.signCount == 1 { moved.append(id) }
            XCTAssertEqual(moved.count, 1, "only the completing answer's counter moved")
            let sessions = try await stores.sessions.live(username: "alice", now: now)
            XCTAssertEqual(sessions.count, 1)
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-race")
            XCTAssertEqual(status?.state, .succeeded)
            XCTAssertEqual(status?.credentialID, moved.first, "the ceremony names the passkey that signed in")
        }
    }

    func testAnAbandonedPasskeyCeremonyFailsAndCannotBeCompleted() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            _ = try await stores.passkeys.insert(passkey("cred-late", signCount: 2))
            _ = try await stores.passkeyCeremonies.open(ceremony("refused"), cap: nil)
            try await stores.passkeyCeremonies.abandon(challenge: "refused", outcome: "the credential is not registered")
            let pending = try await stores.ceremonies.pendingPasskeySignIn(challenge: "refused", credentialID: "cred-late")
            XCTAssertNil(pending, "an abandoned ceremony can be answered again")
            let late = try await Self.completeSignIn(stores, "refused", credential: "cred-late", from: 2, to: 3, now: now)
            XCTAssertEqual(late.completion, .requestGone)
            let read = try await stores.passkeys.passkey(id: "cred-late")
            XCTAssertEqual(read?.signCount, 2)
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-refused")
            XCTAssertEqual(status?.state, .failed)
            XCTAssertEqual(status?.outcome, "the credential is not registered")
            // Only an unanswered ceremony is abandoned: not a completed one, nor a registration's consumed one.
            _ = try await stores.passkeyCeremonies.open(ceremony("done", username: nil), cap: nil)
            _ = try await Self.completeSignIn(stores, "done", credential: "cred-late", from: 2, to: 3, now: now)
            try await stores.passkeyCeremonies.abandon(challenge: "done", outcome: "a late refusal")
            let done = try await stores.passkeyCeremonies.status(sessionID: "session-done")
            XCTAssertEqual(done?.state, .succeeded, "a refusal overwrote a completed sign-in")
            _ = try await stores.passkeyCeremonies.open(ceremony("consumed"), cap: nil)
            _ = try await stores.passkeyCeremonies.consume(challenge: "consumed")
            try await stores.passkeyCeremonies.abandon(challenge: "consumed", outcome: "a late refusal")
            let consumed = try await stores.passkeyCeremonies.status(sessionID: "session-consumed")
            XCTAssertEqual(consumed?.state, .answered)
        }
    }

    func testACancelledPasskeySignInCannotBeCompleted() async throws {
        try await onEveryEngine { stores in
            let now = Date()
            _ = try await stores.passkeys.insert(passkey("cred-cancel", signCount: 7))
            _ = try await stores.passkeyCeremonies.open(ceremony("cancelled-sign-in"), cap: nil)
            // The answer was read before the relying party cancelled; its completion comes after.
            let read = try await stores.ceremonies.pendingPasskeySignIn(challenge: "cancelled-sign-in", credentialID: "cred-cancel")
            XCTAssertNotNil(read)
            let cancelled = try await stores.passkeyCeremonies.cancel(sessionID: "session-cancelled-sign-in")
            XCTAssertTrue(cancelled, "a ceremony whose answer is being verified can still be cancelled")
            let late = try await Self.completeSignIn(stores, "cancelled-sign-in", credential: "cred-cancel", from: 7, to: 8, now: now)
            XCTAssertEqual(late.completion, .requestGone)
            let notOpened = try await stores.sessions.session(token: late.token, now: now)
            XCTAssertNil(notOpened)
            let status = try await stores.passkeyCeremonies.status(sessionID: "session-cancelled-sign-in")
            XCTAssertEqual(status?.state, .cancelled)
            let passkey = try await stores.passkeys.passkey(id: "cred-cancel")
            XCTAssertEqual(passkey?.signCount, 7)
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
            }
            let first = try await Self.completeSignIn(stores, "signing", credential: "cred-sign", from: 4, to: 5, now: now)
            XCTAssertEqual(first.completion, .completed)
            let replayed = try await Self.completeSignIn(stores, "replaying", credential: "cred-sign", from: 4, to: 6, now: now)
            XCTAssertEqual(replayed.completion, .counterMoved)
            let signed = try await stores.passkeyCeremonies.status(sessionID: "session-signing")
            XCTAssertEqual(signed?.state, .succeeded)
            XCTAssertEqual(signed?.username, "alice")
            XCTAssertEqual(signed?.credentialID, "cred-sign")
            let notSigned = try await stores.passkeyCeremonies.status(sessionID: "session-replaying")
            XCTAssertEqual(notSigned?.state, .failed, "the replay's ceremony is spent with its refusal")
            XCTAssertEqual(notSigned?.outcome, "the signature counter did not increase")
            XCTAssertNil(notSigned?.username)
            XCTAssertNil(notSigned?.credentialID)
            let opened = try await stores.sessions.session(token: first.token, now: now)
            XCTAssertEqual(opened?.credential, .passkey(credentialID: "cred-sign"))
            let notOpened = try await stores.sessions.session(token: replayed.token, now: now)
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
