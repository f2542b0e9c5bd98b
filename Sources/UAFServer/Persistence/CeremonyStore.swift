import Foundation
import SQLKit
import UAF

/// The writes one step of a ceremony makes together, and the reads that go with them, as one store call.
///
/// Why: on PostgreSQL every statement is a round trip, and under load each costs about as much CPU in the server
/// (PostgresNIO, the socket) and in PostgreSQL as the whole rest of the step. So there each call here is **one**
/// statement: its writes are chained in a data-modifying `WITH`, and each later write (or read) only happens for the
/// rows the earlier one returned. That also makes the writes atomic: all happen or none.
///
/// SQLite has no data-modifying `WITH`; there a statement is a few microseconds in-process, so a call runs the
/// stores' own statements in order, stopping where the chained statement would write nothing, inside the request's
/// unit of work (one commit). What the other instances or requests can observe is the same on both engines: the
/// writes of a call are committed together before its caller answers.
///
/// Both forms are defined here, next to each other, from the stores' own column lists and values, and the store
/// suite runs each call against both engines (`StoreContract`).
public struct CeremonyStore: Sendable {
    let database: StoreDatabase
    private var stores: Stores { Stores(database: database) }

    /// Stores an issued request and opens its status record (the request's id is the status session id). With
    /// `cap`, only while its user has fewer than `cap.limit` unexpired requests at `cap.now`; false when the cap is
    /// reached, and then neither is stored.
    func open(_ request: ChallengeRecord, status: StatusRecord, retention: TimeInterval, cap: UAFRequestStore.Cap?) async throws -> Bool {
        guard database.engine == .postgres else {
            guard try await stores.requests.insert(request, cap: cap) else { return false }
            try await stores.status.create(status, retention: retention)
            return true
        }
        let insert = try UAFRequestStore.insertion(request, cap: cap)
        let statusValues = try StatusStore.values(status, retention: retention)
        return try await database.run { sql in
            try await sql.raw("""
                WITH request AS (\(insert) RETURNING id)
                INSERT INTO status_records (\(unsafeRaw: StatusStore.columns)) SELECT \(statusValues) FROM request
                RETURNING session_id
                """).first() != nil
        }
    }

    /// A consumed request, with the registrations of its user when they were read in the same step.
    struct Consumed: Sendable {
        var request: ChallengeRecord
        /// The registrations of the request's user as they were when it was consumed (PostgreSQL, when asked for and
        /// the request names a user); otherwise empty, and keys are looked up on their own.
        var registrations: [RegistrationRecord]

        /// The prefetched registration of (`aaid`, `keyID`), if it is among ``registrations``. Stored AAIDs are
        /// normalized (``RegistrationStore/insert(_:)``), so only the one asked for is, as the store's own lookup does.
        func registration(aaid: String, keyID: String) -> RegistrationRecord? {
            let aaid = AAID.normalized(aaid)
            return registrations.first { $0.keyID == keyID && $0.aaid == aaid }
        }
    }

    /// Removes and returns the request with `id`, once only (as ``UAFRequestStore/consume(id:)``). With
    /// `registrationsOfItsUser` on PostgreSQL, the registrations of the user it was issued for come back in the same
    /// statement, so verifying the response of a step-up login needs no second round trip to find its key. SQLite
    /// only consumes: a key lookup there costs microseconds.
    func consume(id: String, registrationsOfItsUser: Bool) async throws -> Consumed? {
        guard registrationsOfItsUser, database.engine == .postgres else {
            return try await stores.requests.consume(id: id).map { Consumed(request: $0, registrations: []) }
        }
        // One row per registration of the request's user, or one row without a registration (NULL columns): no
        // user, or none registered.
        let rows = try await database.run { sql in
            try await sql.raw("""
                WITH consumed AS (\(UAFRequestStore.removal(id: id)) RETURNING \(unsafeRaw: UAFRequestStore.returned))
                SELECT \(unsafeRaw: Self.consumedRequestColumns), registrations.*
                FROM consumed LEFT JOIN registrations ON registrations.username = consumed.username
                """).all()
        }
        guard let first = rows.first else { return nil }
        return Consumed(request: try UAFRequestStore.record(id: id, first, prefix: Self.consumedRequestPrefix),
                        registrations: try rows.filter { try !$0.decodeNil(column: "aaid") }.map(RegistrationStore.record))
    }

    /// The consumed request's columns, renamed with ``consumedRequestPrefix`` so that they cannot clash with the
    /// registration's own (`username` is in both): `consumed.operation AS request_operation, …`.
    private static let consumedRequestPrefix = "request_"
    private static let consumedRequestColumns = UAFRequestStore.returnedColumns.map { column in
        "consumed.\(column) AS \(consumedRequestPrefix)\(column)"
    }.joined(separator: ", ")

    /// What a verified authentication writes: its authenticator's counter moves from the value the verifier
    /// compared against to the new one, a session opens, and the operation's status record finishes.
    struct Authentication: Sendable {
        var counter: CounterAdvance
        var sessionToken: String
        var session: SessionRecord
        var status: StatusStore.Outcome
    }

    /// One authenticator's signature counter, compared and set.
    struct CounterAdvance: Sendable, Equatable {
        var aaid: String
        var keyID: String
        var from: UInt32
        var to: UInt32
    }

    /// Records a verified authentication (``Authentication``). False when the counter no longer had its compared
    /// value (another request advanced it meanwhile: this one is a replay); then nothing is written.
    func completeAuthentication(_ authentication: Authentication) async throws -> Bool {
        let counter = authentication.counter
        guard database.engine == .postgres else {
            guard try await stores.registrations.updateSignCounter(aaid: counter.aaid, keyID: counter.keyID, from: counter.from, to: counter.to) else {
                return false
            }
            try await stores.sessions.insert(token: authentication.sessionToken, authentication.session)
            try await stores.status.finish(authentication.status)
            return true
        }
        let advance = RegistrationStore.counterAdvance(aaid: counter.aaid, keyID: counter.keyID, from: counter.from, to: counter.to)
        let finish = try authentication.status.update()
        return try await database.run { sql in
            try await sql.raw("""
                WITH advanced AS (\(advance) RETURNING key_id),
                opened AS (
                    INSERT INTO sessions (\(unsafeRaw: SessionStore.columns))
                    SELECT \(SessionStore.values(token: authentication.sessionToken, authentication.session)) FROM advanced
                    RETURNING id),
                finished AS (\(finish) AND EXISTS (SELECT 1 FROM opened) RETURNING session_id)
                SELECT COUNT(*) AS advanced FROM advanced
                """).first()?.decode(column: "advanced", as: Int64.self) == 1
        }
    }
}
