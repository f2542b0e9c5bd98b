import Foundation
import Primitives
import SQLKit

/// WebAuthn ceremonies awaiting an answer. ``consume(challenge:)`` is one `DELETE … RETURNING`: a challenge is
/// answered at most once across every instance sharing the database, whether the answer succeeds or not.
public struct PasskeyCeremonyStore: Sendable {
    let database: StoreDatabase

    /// Stores a ceremony; under `cap` only while its user has fewer than `cap.limit` counted ceremonies unexpired
    /// (the count and the insert in one statement). False when the cap is reached.
    package func open(_ record: PasskeyCeremony, cap: CeremonyCap?) async throws -> Bool {
        let values: SQLQueryString = """
            \(bind: record.challenge), \(bind: record.sessionID), \(bind: record.kind.rawValue), \(bind: record.username), \(bind: record.userHandle), \
            \(bind: record.userVerification), \(bind: cap?.username), \(bind: record.expiresAt.epochMillis)
            """
        let columns = "challenge, session_id, kind, username, user_handle, user_verification, counted_username, expires_at"
        return try await database.run { sql in
            if let cap {
                return try await sql.raw(
                    """
                    INSERT INTO webauthn_ceremonies (\(unsafeRaw: columns)) SELECT \(values)
                    WHERE (SELECT COUNT(*) FROM webauthn_ceremonies WHERE counted_username = \(bind: cap.username)
                           AND +expires_at >= \(bind: cap.now.epochMillis)) < \(bind: Int64(cap.limit))
                    RETURNING challenge
                    """
                ).first() != nil
            }
            return try await sql.raw("INSERT INTO webauthn_ceremonies (\(unsafeRaw: columns)) VALUES (\(values)) RETURNING challenge").first() != nil
        }
    }

    /// Removes and returns the ceremony of `challenge` (once only), expired or not: the caller refuses an expired one.
    public func consume(challenge: String) async throws -> PasskeyCeremony? {
        try await database.run { sql in
            try await sql.raw("DELETE FROM webauthn_ceremonies WHERE challenge = \(bind: challenge) RETURNING *").first()
        }.map { try Self.record($0) }
    }

    /// Removes the unanswered ceremonies counted against `username` (her erasure); returns how many.
    public func deleteCounted(username: String) async throws -> Int {
        try await database.run { sql in
            try await sql.raw("DELETE FROM webauthn_ceremonies WHERE counted_username = \(bind: username) RETURNING challenge").all().count
        }
    }

    /// Removes ceremonies that expired before `date`; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "webauthn_ceremonies", before: date.epochMillis, batch: batch)
    }

    /// The columns a ceremony is read from.
    static let columns = ["challenge", "session_id", "kind", "username", "user_handle", "user_verification", "expires_at"]
    /// What a ceremony's columns are renamed to when a statement also returns a passkey's (which has its own
    /// `username` and `user_handle`).
    static let prefix = "ceremony_"

    /// `source`'s ceremony columns, each as ``prefix`` and its name.
    static func prefixedColumns(from source: String) -> String {
        columns.map { "\(source).\($0) AS \(prefix)\($0)" }.joined(separator: ", ")
    }

    static func record(_ row: any SQLRow, prefix: String = "") throws -> PasskeyCeremony {
        func column(_ name: String) -> String { prefix + name }
        let kind = try row.decode(column: column("kind"), as: String.self)
        guard let parsed = PasskeyCeremony.Kind(rawValue: kind) else { throw StoreError.malformedRow("WebAuthn ceremony kind \(kind)") }
        return PasskeyCeremony(
            challenge: try row.decode(column: column("challenge"), as: String.self),
            sessionID: try row.decode(column: column("session_id"), as: String.self),
            kind: parsed, username: try row.decode(column: column("username"), as: String?.self),
            userHandle: try row.decode(column: column("user_handle"), as: String?.self),
            userVerification: try row.decode(column: column("user_verification"), as: String.self),
            expiresAt: Date(epochMillis: try row.decode(column: column("expires_at"), as: Int64.self)))
    }
}
