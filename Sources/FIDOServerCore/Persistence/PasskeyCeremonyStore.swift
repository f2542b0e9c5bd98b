import Foundation
import Primitives
import SQLKit

/// WebAuthn ceremonies, awaiting an answer and then keeping its outcome for nevisFIDO's status service.
///
/// A registration's answer consumes its ceremony: ``consume(challenge:)`` is one `UPDATE … WHERE state = 'initialized'
/// RETURNING` (on SQLite a read and an update that must change the row), and
/// ``finish(challenge:succeeded:outcome:username:credentialID:)`` then records how it ended. A sign-in's answer only
/// reads its ceremony (`CeremonyStore.pendingPasskeySignIn(challenge:credentialID:)`); the sign-in's completion moves
/// it out of `initialized` together with the rest of what it writes, and a refusal does so with
/// ``abandon(challenge:outcome:)``. Either way a challenge is answered at most once across every instance sharing the
/// database, whether the answer succeeds or not. The row goes the status retention after the ceremony's expiry.
public struct PasskeyCeremonyStore: Sendable {
    let database: StoreDatabase

    /// Stores a ceremony; under `cap` only while its user has fewer than `cap.limit` counted ceremonies unexpired
    /// (the count and the insert in one statement). False when the cap is reached.
    package func open(_ record: PasskeyCeremony, cap: CeremonyCap?) async throws -> Bool {
        let values = Self.insertedValues(record, counted: cap?.username)
        let columns = Self.insertedColumns
        return try await database.run { sql in
            if let cap {
                return try await sql.changedAny(
                    """
                    INSERT INTO webauthn_ceremonies (\(unsafeRaw: columns)) SELECT \(values)
                    WHERE (SELECT COUNT(*) FROM webauthn_ceremonies WHERE counted_username = \(bind: cap.username)
                           AND +expires_at >= \(bind: cap.now.epochMillis) AND state = 'initialized') < \(bind: Int64(cap.limit))
                    """
                )
            }
            return try await sql.changedAny("INSERT INTO webauthn_ceremonies (\(unsafeRaw: columns)) VALUES (\(values))")
        }
    }

    /// The columns a new ceremony's row fills, in the order of ``insertedValues(_:counted:)``.
    static let insertedColumns =
        "challenge, session_id, kind, username, user_handle, user_verification, counted_username, expires_at, conditional, credential_id"

    /// A new ceremony's values, in the order of ``insertedColumns``; `counted` is the user whose cap it counts against.
    static func insertedValues(_ record: PasskeyCeremony, counted: String?) -> StoreStatement {
        """
        \(bind: record.challenge), \(bind: record.sessionID), \(bind: record.kind.rawValue), \(bind: record.username), \(bind: record.userHandle), \
        \(bind: record.userVerification), \(bind: counted), \(bind: record.expiresAt.epochMillis), \(bind: Int64(record.conditional ? 1 : 0)), \(bind: record.credentialID)
        """
    }

    /// Marks the ceremony of `challenge` answered and returns it (once only), expired or not: the caller refuses an
    /// expired one, and then records the outcome (``finish(challenge:succeeded:outcome:username:credentialID:)``).
    public func consume(challenge: String) async throws -> PasskeyCeremony? {
        try await database.run { sql in
            // The record read does not include the state, so the row read before the update is the one returned after it.
            try await sql.consumedRow(read: Self.unanswered(challenge: challenge), write: Self.consumption(challenge: challenge), returning: "*")
        }.map { try Self.record($0) }
    }

    /// The read of the ceremony of `challenge` while nothing answered it.
    static func unanswered(challenge: String) -> StoreStatement {
        "SELECT * FROM webauthn_ceremonies WHERE challenge = \(bind: challenge) AND state = 'initialized'"
    }

    /// Marks the ceremony of `challenge` answered if nothing answered it before; false otherwise. How a sign-in's
    /// completion takes its ceremony on SQLite (``CeremonyStore/completePasskeySignIn(id:from:to:backupState:at:sessionToken:session:challenge:counterRefusal:)``).
    func claim(challenge: String) async throws -> Bool {
        try await database.run { sql in try await sql.changedAny(Self.consumption(challenge: challenge)) }
    }

    /// The statement that marks the ceremony of `challenge` answered, if nothing answered it before.
    static func consumption(challenge: String) -> StoreStatement {
        "UPDATE webauthn_ceremonies SET state = 'answered' WHERE challenge = \(bind: challenge) AND state = 'initialized'"
    }

    /// Records how the answered ceremony of `challenge` ended: `succeeded`, or `failed` with `outcome`, the refusal's
    /// words as its caller heard them. A sign-in without a username learns its user here, and a succeeded ceremony
    /// the credential that answered it (`credentialID`). Only an answered ceremony changes, once.
    public func finish(challenge: String, succeeded: Bool, outcome: String?, username: String? = nil, credentialID: String? = nil) async throws {
        try await database.run { sql in
            try await sql.statement(
                "\(Self.finishing(challenge: challenge, succeeded: succeeded, outcome: outcome, username: username, credentialID: credentialID))"
            ).run()
        }
    }

    /// The statement of ``finish(challenge:succeeded:outcome:username:credentialID:)``.
    static func finishing(challenge: String, succeeded: Bool, outcome: String?, username: String?, credentialID: String? = nil) -> StoreStatement {
        """
        UPDATE webauthn_ceremonies SET state = \(bind: succeeded ? "succeeded" : "failed"), outcome = \(bind: outcome),
            username = COALESCE(username, \(bind: username)), credential_id = COALESCE(credential_id, \(bind: credentialID))
        WHERE challenge = \(bind: challenge) AND state = 'answered'
        """
    }

    /// Records the refusal of a sign-in's answer (`outcome`, the words its caller heard) on its ceremony, which was
    /// only read (`CeremonyStore.pendingPasskeySignIn(challenge:credentialID:)`): the challenge cannot be answered
    /// afterwards. Only a ceremony nothing answered changes: not one another answer completed or is completing, nor one
    /// the relying party cancelled.
    public func abandon(challenge: String, outcome: String) async throws {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE webauthn_ceremonies SET state = 'failed', outcome = \(bind: outcome)
                WHERE challenge = \(bind: challenge) AND state = 'initialized'
                """
            ).run()
        }
    }

    /// The outcome a ceremony the relying party cancelled keeps.
    public static let cancelledOutcome = "the relying party cancelled the ceremony"

    /// Cancels the ceremony of `sessionID` if nothing answered it yet (the Auth Cloud's cancel): its challenge can no
    /// longer be answered, and its status reads `cancelled`. False when there is no such unanswered ceremony.
    public func cancel(sessionID: String) async throws -> Bool {
        try await database.run { sql in
            try await sql.statement(
                """
                UPDATE webauthn_ceremonies SET state = 'cancelled', outcome = \(bind: Self.cancelledOutcome)
                WHERE session_id = \(bind: sessionID) AND state = 'initialized' RETURNING challenge
                """
            ).first() != nil
        }
    }

    /// What the status service reports of a ceremony.
    public struct Status: Sendable, Equatable {
        public enum State: String, Sendable {
            /// Options were issued and nothing answered them yet.
            case initialized
            /// An answer consumed the ceremony and is being verified.
            case answered
            case succeeded, failed
            /// The relying party cancelled it before an answer (``PasskeyCeremonyStore/cancel(sessionID:)``).
            case cancelled
        }
        public var kind: PasskeyCeremony.Kind
        public var state: State
        /// The refusal's words of a failed ceremony.
        public var outcome: String?
        /// The user it was for, or who signed in.
        public var username: String?
        /// The credential a succeeded ceremony registered or signed in with (or the one a sign-in was narrowed to).
        public var credentialID: String?
        public var expiresAt: Date
    }

    /// The status of the ceremony with `sessionID`, until its row is purged; nil when there is none.
    public func status(sessionID: String) async throws -> Status? {
        let row = try await database.run { sql in
            try await sql.statement(
                "SELECT kind, state, outcome, username, credential_id, expires_at FROM webauthn_ceremonies WHERE session_id = \(bind: sessionID) LIMIT 1"
            ).first()
        }
        guard let row else { return nil }
        let kind = try row.decode(column: "kind", as: String.self)
        let state = try row.decode(column: "state", as: String.self)
        guard let parsedKind = PasskeyCeremony.Kind(rawValue: kind), let parsedState = Status.State(rawValue: state) else {
            throw StoreError.malformedRow("WebAuthn ceremony kind \(kind), state \(state)")
        }
        return Status(
            kind: parsedKind, state: parsedState, outcome: try row.decode(column: "outcome", as: String?.self),
            username: try row.decode(column: "username", as: String?.self),
            credentialID: try row.decode(column: "credential_id", as: String?.self),
            expiresAt: Date(epochMillis: try row.decode(column: "expires_at", as: Int64.self)))
    }

    /// Removes the unanswered ceremonies counted against `username` (her erasure); returns how many.
    public func deleteCounted(username: String) async throws -> Int {
        try await database.run { sql in
            try await sql.statement("DELETE FROM webauthn_ceremonies WHERE counted_username = \(bind: username) RETURNING challenge").all().count
        }
    }

    /// Removes ceremonies that expired before `date` (the caller keeps them the status retention past their expiry);
    /// returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "webauthn_ceremonies", before: date.epochMillis, batch: batch)
    }

    /// The columns a ceremony is read from.
    static let columns = [
        "challenge", "session_id", "kind", "username", "user_handle", "user_verification", "expires_at", "conditional", "credential_id",
    ]
    /// What a ceremony's columns are renamed to when a statement also returns a passkey's (which has its own
    /// `username` and `user_handle`).
    static let prefix = "ceremony_"

    /// The ceremony columns of the table named `ceremony` in a statement, each as ``prefix`` and its name. Made once:
    /// made for every sign-in's read, the list was about 23 allocations of it.
    static let prefixedColumns = columns.map { "ceremony.\($0) AS \(prefix)\($0)" }.joined(separator: ", ")

    /// The names a ceremony's columns are read under: as they are, or each with ``prefix``. Made once: a prefixed
    /// name is longer than a string Swift keeps inline, so making it for every read allocated once per column.
    struct ColumnNames: Sendable {
        let challenge, sessionID, kind, username, userHandle, userVerification, expiresAt, conditional, credentialID: String

        init(prefix: String) {
            (challenge, sessionID, kind, username) = (prefix + "challenge", prefix + "session_id", prefix + "kind", prefix + "username")
            (userHandle, userVerification, expiresAt) = (prefix + "user_handle", prefix + "user_verification", prefix + "expires_at")
            (conditional, credentialID) = (prefix + "conditional", prefix + "credential_id")
        }

        static let plain = ColumnNames(prefix: "")
        static let prefixed = ColumnNames(prefix: PasskeyCeremonyStore.prefix)
    }

    static func record(_ row: any SQLRow, names: ColumnNames = .plain) throws -> PasskeyCeremony {
        let kind = try row.decode(column: names.kind, as: String.self)
        guard let parsed = PasskeyCeremony.Kind(rawValue: kind) else { throw StoreError.malformedRow("WebAuthn ceremony kind \(kind)") }
        return PasskeyCeremony(
            challenge: try row.decode(column: names.challenge, as: String.self),
            sessionID: try row.decode(column: names.sessionID, as: String.self),
            kind: parsed, username: try row.decode(column: names.username, as: String?.self),
            userHandle: try row.decode(column: names.userHandle, as: String?.self),
            userVerification: try row.decode(column: names.userVerification, as: String.self),
            expiresAt: Date(epochMillis: try row.decode(column: names.expiresAt, as: Int64.self)),
            conditional: try row.decode(column: names.conditional, as: Int64.self) != 0,
            credentialID: try row.decode(column: names.credentialID, as: String?.self))
    }
}
