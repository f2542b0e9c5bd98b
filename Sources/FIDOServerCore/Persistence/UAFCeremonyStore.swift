import Foundation
import Primitives
import SQLKit
import UAF
import WireJSON

/// Issued UAF requests (their challenges). A request is answered at most once across every instance sharing the
/// database: a registration's answer takes it with ``consume(id:)``, one `DELETE … RETURNING` (on SQLite a read and a
/// delete that must remove the row); a login's answer reads it (`CeremonyStore.pending(id:)`) and the login's
/// completion removes it, writing nothing unless that removal happens (`CeremonyStore.completeAuthentication(_:)`).
public struct UAFCeremonyStore: Sendable {
    let database: StoreDatabase

    public func insert(_ record: UAFCeremony) async throws {
        _ = try await insert(record, cap: nil)
    }

    /// Inserts the request of a named user only while fewer than `cap` of that user's counted requests are unexpired at
    /// `now`; false when the cap is reached (nothing inserted). One statement: the count and the insert are one
    /// round trip, not two.
    public func insert(_ record: UAFCeremony, username: String, cap: Int, now: Date) async throws -> Bool {
        try await insert(record, cap: CeremonyCap(username: username, limit: cap, now: now))
    }

    /// Inserts `record`, under `cap` when given; false when the cap is reached (nothing inserted).
    func insert(_ record: UAFCeremony, cap: CeremonyCap?) async throws -> Bool {
        let insert = try Self.insertion(record, cap: cap)
        return try await database.run { sql in try await sql.changedAny(insert) }
    }

    /// The insert of `record` without its `RETURNING`. Under `cap` it inserts nothing once `cap.username` has
    /// `cap.limit` unexpired requests at `cap.now`, in the same statement.
    static func insertion(_ record: UAFCeremony, cap: CeremonyCap?) throws -> StoreStatement {
        guard let cap else { return "INSERT INTO uaf_requests (\(unsafeRaw: columns)) VALUES (\(try values(record, counted: nil)))" }
        var record = record
        record.username = cap.username
        return "INSERT INTO uaf_requests (\(unsafeRaw: columns)) SELECT \(try values(record, counted: cap.username)) WHERE \(below(cap))"
    }

    /// The condition that `cap.username` has fewer than `cap.limit` counted requests unexpired at `cap.now`.
    static func below(_ cap: CeremonyCap) -> StoreStatement {
        "(SELECT COUNT(*) FROM uaf_requests WHERE \(unexpired(username: cap.username, now: cap.now))) < \(bind: Int64(cap.limit))"
    }

    /// The condition that a request counts against `username` and is unexpired at `now`, written so that only those
    /// index entries are read: the unary `+` keeps both engines from answering it through the expiry index.
    ///
    /// Why: PostgreSQL plans a prepared statement once per connection (a generic plan), and on a table whose
    /// statistics are young it sometimes chose `uaf_requests_by_expiry` for this count, filtering by user. That
    /// range holds every request issued within one request lifetime, the answered ones too until vacuum removes
    /// them, so under load the count read tens of thousands of entries, and PostgreSQL's CPU per login rose by as
    /// much as 60 %. Through `uaf_requests_by_counted_username_expiry` it reads only the user's entries, from the index
    /// alone where it can. (`+x` is SQLite's documented way to keep a term off an index; in PostgreSQL it is an
    /// expression, which no index on the bare column serves.)
    static func unexpired(username: String, now: Date) -> StoreStatement {
        "counted_username = \(bind: username) AND +expires_at >= \(bind: now.epochMillis)"
    }

    /// The columns a request's row fills, in the order of ``values(_:counted:policy:)``: its id, ``returnedColumns``,
    /// and the user it counts against.
    static let columns = (["id"] + returnedColumns + ["counted_username"]).joined(separator: ", ")

    /// A request's values, in the order of ``columns``; `counted` is the user whose cap it counts against (nil for
    /// nobody); with `policy`, that SQL expression is its policy column instead of the record's own policy.
    static func values(_ record: UAFCeremony, counted: String?, policy expression: StoreStatement? = nil) throws -> StoreStatement {
        let policy: StoreStatement = try expression ?? "\(bind: JSONCoding.string(record.policy))"
        let transactions = try JSONCoding.string(record.transactions)
        return """
            \(bind: record.id), \(bind: record.operation.rawValue), \(bind: record.challenge), \(bind: record.username), \
            \(policy), \(bind: transactions), \(bind: record.expiresAt.epochMillis), \(bind: record.policyName), \(bind: record.appAttestation), \(bind: counted)
            """
    }

    /// Removes and returns the request with `id` (once only), whether or not it has expired.
    public func consume(id: String) async throws -> UAFCeremony? {
        let row = try await database.run { sql in
            try await sql.consumedRow(read: Self.lookup(id: id), write: Self.removal(id: id), returning: Self.returned)
        }
        return try row.map { try Self.record(id: id, $0) }
    }

    /// Removes the request with `id`; false when it was not there.
    func remove(id: String) async throws -> Bool {
        let removal = Self.removal(id: id)
        return try await database.run { sql in try await sql.changedAny(removal) }
    }

    /// The read of the request with `id`.
    static func lookup(id: String) -> StoreStatement { "SELECT \(unsafeRaw: returned) FROM uaf_requests WHERE id = \(bind: id)" }

    /// The delete of the request with `id`, without its `RETURNING`.
    static func removal(id: String) -> StoreStatement { "DELETE FROM uaf_requests WHERE id = \(bind: id)" }

    /// The columns a consumed request is read back from (its id is known), as a list and as SQL text.
    static let returnedColumns = ["operation", "challenge", "username", "policy", "transactions", "expires_at", "policy_name", "app_attestation"]
    static let returned = returnedColumns.joined(separator: ", ")

    /// The request `id` read from `row`, whose columns are ``returned``, each read under its name in `names`.
    static func record(id: String, _ row: any SQLRow, names: ColumnNames = .plain) throws -> UAFCeremony {
        guard let operation = UAFOperation(rawValue: try row.decode(column: names.operation, as: String.self)) else {
            throw StoreError.malformedRow("uaf_requests.operation")
        }
        return UAFCeremony(
            id: id, operation: operation, challenge: try row.decode(column: names.challenge, as: String.self),
            username: try row.decode(column: names.username, as: String?.self),
            policy: try JSONCoding.value(Policy.self, try row.decode(column: names.policy, as: String.self)),
            transactions: try JSONCoding.value([Transaction].self, try row.decode(column: names.transactions, as: String.self)),
            expiresAt: Date(epochMillis: try row.decode(column: names.expiresAt, as: Int64.self)),
            policyName: try row.decode(column: names.policyName, as: String?.self),
            appAttestation: try row.decode(column: names.appAttestation, as: String?.self))
    }

    /// The names a request's ``returnedColumns`` are read under: as they are, or each with a prefix. Made once per
    /// prefix: a prefixed name is longer than a string Swift keeps inline, so making it for every read allocated once
    /// per column.
    struct ColumnNames: Sendable {
        let operation, challenge, username, policy, transactions, expiresAt, policyName, appAttestation: String

        init(prefix: String) {
            (operation, challenge, username, policy) = (prefix + "operation", prefix + "challenge", prefix + "username", prefix + "policy")
            (transactions, expiresAt) = (prefix + "transactions", prefix + "expires_at")
            (policyName, appAttestation) = (prefix + "policy_name", prefix + "app_attestation")
        }

        static let plain = ColumnNames(prefix: "")
    }

    /// Removes the requests that count against `username` (the user is being deleted); returns how many. Every
    /// request that could still add something for her, a registration, is counted; the uncounted ones (step-ups)
    /// can only be answered with a key of hers, and those are deleted with her.
    public func deleteCounted(username: String) async throws -> Int {
        try await database.run { sql in
            try await sql.statement("DELETE FROM uaf_requests WHERE counted_username = \(bind: username) RETURNING 1 AS deleted").all().count
        }
    }

    /// How many unexpired requests count against `username`'s cap.
    public func outstanding(username: String, now: Date) async throws -> Int {
        try await database.run { sql in
            try await sql.statement(
                """
                SELECT COUNT(*) AS n FROM uaf_requests WHERE \(Self.unexpired(username: username, now: now))
                """
            ).first()?.decode(column: "n", as: Int.self) ?? 0
        }
    }

    /// Removes requests that expired before `date`, `batch` per statement; returns how many.
    public func purge(expiredBefore date: Date, batch: Int = StoreDatabase.purgeBatch) async throws -> Int {
        try await database.deleteExpired(from: "uaf_requests", before: date.epochMillis, batch: batch)
    }
}
