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
    func open(_ request: UAFCeremony, status: StatusRecord, retention: TimeInterval, cap: CeremonyCap?) async throws -> Bool {
        guard database.engine == .postgres else {
            guard try await stores.uafCeremonies.insert(request, cap: cap) else { return false }
            try await stores.status.create(status, retention: retention)
            return true
        }
        let insert = try UAFCeremonyStore.insertion(request, cap: cap)
        let statusValues = try StatusStore.values(status, retention: retention)
        return try await database.run { sql in
            try await sql.statement(
                """
                WITH request AS (\(insert) RETURNING id)
                INSERT INTO status_records (\(unsafeRaw: StatusStore.columns)) SELECT \(statusValues) FROM request
                RETURNING session_id
                """
            ).first() != nil
        }
    }

    /// How issuing a step-up request ended (``openStepUp(username:cap:retention:request:status:)``).
    package enum StepUp: Sendable {
        /// The user has no registered key: nothing was stored.
        case noKeys
        /// The user has `cap.limit` unexpired requests already: nothing was stored.
        case capReached
        /// Stored, with its status record; the request's policy accepts exactly the user's keys.
        case issued(UAFCeremony)
    }

    /// One registered key, as a step-up policy names it.
    package struct StepUpKey: Sendable, Equatable {
        var aaid: String
        var keyID: String
    }

    /// The policy of a step-up request: every key of the user, one alternative per AAID (in the order of the AAIDs'
    /// bytes), each with that AAID's key IDs in the order given. `keys` come in registration order (oldest first,
    /// then by key ID). ``stepUpPolicyColumn`` is its twin in SQL.
    static func stepUpPolicy(_ keys: [StepUpKey]) -> Policy {
        var order: [String] = []
        var keyIDs: [String: [String]] = [:]
        for key in keys {
            if keyIDs[key.aaid] == nil { order.append(key.aaid) }
            keyIDs[key.aaid, default: []].append(key.keyID)
        }
        return Policy(
            accepted: order.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { aaid in
                [MatchCriteria(aaid: [aaid], keyIDs: keyIDs[aaid])]
            })
    }

    /// The step-up policy for `username`'s keys as stored now (``stepUpPolicy(_:)``); nil when the user has none.
    func stepUpPolicy(username: String) async throws -> Policy? {
        let keys = try await stores.registrations.registrations(username: username).map { StepUpKey(aaid: $0.aaid, keyID: $0.keyID) }
        return keys.isEmpty ? nil : Self.stepUpPolicy(keys)
    }

    /// ``stepUpPolicy(_:)``'s text as PostgreSQL writes it from the rows of `keys` (`aaid`, `key_id`, `created_at`):
    /// byte for byte what ``JSONCoding`` writes for that policy (sorted members, no spaces), so the response finds the
    /// policy remembered for it; NULL when there are no rows. A store test holds the two equal on PostgreSQL (keys under
    /// two AAIDs, registered at different times, one key ID with characters JSON escapes). Ordering by `COLLATE "C"`
    /// is ordering by bytes, as ``stepUpPolicy(_:)`` does.
    static let stepUpPolicyColumn = """
        (SELECT '{"accepted":[' || string_agg(criteria, ',' ORDER BY aaid COLLATE "C") || ']}' FROM (
            SELECT aaid, '[{"aaid":[' || to_json(aaid)::text || '],"keyIDs":[' \
        || string_agg(to_json(key_id)::text, ',' ORDER BY created_at, key_id COLLATE "C") || ']}]' AS criteria
            FROM keys GROUP BY aaid) AS alternatives)
        """

    /// The order in which ``stepUpPolicy(_:)`` wants a user's keys (registration order), in SQL.
    static let stepUpKeyOrder = "created_at, aaid COLLATE \"C\", key_id COLLATE \"C\""

    /// Issues a step-up request for `username`: its policy accepts exactly the user's registered keys
    /// (``stepUpPolicy(_:)``), and it is stored with its status record, only while the user is under `cap`.
    /// `request` makes the request from its policy, `status` its status record.
    ///
    /// On PostgreSQL this is one statement instead of two: it reads the user's keys, writes the policy column from
    /// them (``stepUpPolicyColumn``), stores the request and its status record, and returns the keys, from which the
    /// policy sent to the client is made. Both come from the same rows of the same snapshot, so the client sees the
    /// policy the response is verified against. SQLite reads the keys and then stores the request (``open``).
    func openStepUp(
        username: String, cap: CeremonyCap?, retention: TimeInterval,
        request: (Policy) -> UAFCeremony, status: (UAFCeremony) -> StatusRecord
    ) async throws -> StepUp {
        guard database.engine == .postgres else {
            guard let policy = try await stepUpPolicy(username: username) else { return .noKeys }
            let record = request(policy)
            return try await open(record, status: status(record), retention: retention, cap: cap) ? .issued(record) : .capReached
        }
        // The policy is not known yet: every other value is, and the policy column is written in SQL.
        let pending = request(Policy(accepted: []))
        var insert = pending
        insert.username = username
        // As every capped insert: the row counts against the cap it was checked under.
        let values = try UAFCeremonyStore.values(insert, counted: cap?.username, policy: "policy.text")
        let belowCap: StoreStatement = cap.map(UAFCeremonyStore.below) ?? "TRUE"
        let statusValues = try StatusStore.values(status(pending), retention: retention)
        let rows = try await database.run { sql in
            try await sql.statement(
                """
                WITH keys AS (SELECT aaid, key_id, created_at FROM registrations WHERE username = \(bind: username)),
                policy AS (SELECT \(unsafeRaw: Self.stepUpPolicyColumn) AS text),
                request AS (
                    INSERT INTO uaf_requests (\(unsafeRaw: UAFCeremonyStore.columns)) SELECT \(values) FROM policy
                    WHERE policy.text IS NOT NULL AND \(belowCap)
                    RETURNING id),
                opened AS (INSERT INTO status_records (\(unsafeRaw: StatusStore.columns)) SELECT \(statusValues) FROM request RETURNING session_id)
                SELECT aaid, key_id, (SELECT COUNT(*) FROM opened) AS issued FROM keys ORDER BY \(unsafeRaw: Self.stepUpKeyOrder)
                """
            ).all()
        }
        guard let first = rows.first else { return .noKeys }
        guard try first.decode(column: "issued", as: Int64.self) == 1 else { return .capReached }
        let keys = try rows.map {
            StepUpKey(aaid: try $0.decode(column: "aaid", as: String.self), keyID: try $0.decode(column: "key_id", as: String.self))
        }
        let record = request(Self.stepUpPolicy(keys))
        // Remembers the policy for the text PostgreSQL wrote (the same bytes), so the response reads it back without
        // decoding it.
        _ = try JSONCoding.string(record.policy)
        return .issued(record)
    }

    /// A request taken for its answer (``consume(id:)``, ``pending(id:)``), with the registrations of its user when they
    /// were read in the same step.
    package struct Answered: Sendable {
        var request: UAFCeremony
        /// The registrations of the request's user as they were when it was read (``pending(id:)``, when the request
        /// names a user); otherwise empty, and keys are looked up on their own.
        var registrations: [RegistrationRecord]

        /// The prefetched registration of (`aaid`, `keyID`), if it is among ``registrations``. Stored AAIDs are
        /// normalized (``RegistrationStore/insert(_:)``), so only the one asked for is, as the store's own lookup does.
        func registration(aaid: String, keyID: String) -> RegistrationRecord? {
            let aaid = AAID.normalized(aaid)
            return registrations.first { $0.keyID == keyID && $0.aaid == aaid }
        }
    }

    /// Removes and returns the request with `id`, once only (``UAFCeremonyStore/consume(id:)``): how a registration's
    /// response takes its request.
    func consume(id: String) async throws -> Answered? {
        try await stores.uafCeremonies.consume(id: id).map { Answered(request: $0, registrations: []) }
    }

    /// Reads the request with `id` for a login's response, and leaves it: the login's completion removes it
    /// (``completeAuthentication(_:)``), or its refusal does (``abandon(_:)``), each in one statement with the rest of
    /// what it writes. The registrations of the user it was issued for come back in the same statement, so verifying
    /// a step-up login's response needs no second statement to find its key: a round trip on PostgreSQL, and on SQLite
    /// a statement's own cost, about a tenth of what a login's statements cost the server there (profiled).
    ///
    /// Why not remove it here, as a registration does: on PostgreSQL each statement that writes is a commit that waits
    /// for its log to reach the disk, and a read is not. Removing the request in the completion makes a login two such
    /// commits instead of three. The request is still answered at most once: only the statement that removes it writes
    /// the login, so of two answers read at the same time one completes and the other finds it gone.
    func pending(id: String) async throws -> Answered? {
        // One row per registration of the request's user, or one row without a registration (NULL columns): no
        // user, or none registered.
        let rows = try await database.run { sql in
            try await sql.statement(
                """
                SELECT \(unsafeRaw: Self.pendingRequestColumns), registrations.*
                FROM uaf_requests AS request LEFT JOIN registrations ON registrations.username = request.username
                WHERE request.id = \(bind: id)
                """
            ).all()
        }
        guard let first = rows.first else { return nil }
        return Answered(
            request: try UAFCeremonyStore.record(id: id, first, names: Self.pendingRequestNames),
            registrations: try rows.filter { try !$0.decodeNil(column: "aaid") }.map(RegistrationStore.record))
    }

    /// The pending request's columns, renamed with ``pendingRequestPrefix`` so that they cannot clash with the
    /// registration's own (`username` is in both): `request.operation AS request_operation, …`.
    private static let pendingRequestPrefix = "request_"
    private static let pendingRequestColumns = UAFCeremonyStore.returnedColumns.map { column in
        "request.\(column) AS \(pendingRequestPrefix)\(column)"
    }.joined(separator: ", ")
    private static let pendingRequestNames = UAFCeremonyStore.ColumnNames(prefix: pendingRequestPrefix)

    /// Removes the request of a refused answer and records the refusal (`outcome`, whose session id is the request's
    /// id) in its status record, in one statement on PostgreSQL. A request already gone changes nothing but the
    /// status record, and a finished record stays as it is (``StatusStore/Outcome/update()``).
    func abandon(_ outcome: StatusStore.Outcome) async throws {
        let finish = try outcome.update()
        guard database.engine == .postgres else {
            _ = try await stores.uafCeremonies.remove(id: outcome.sessionId)
            try await stores.status.finish(outcome)
            return
        }
        try await database.run { sql in
            try await sql.statement("WITH removed AS (\(UAFCeremonyStore.removal(id: outcome.sessionId))) \(finish)").run()
        }
    }

    /// What a verified authentication writes: its request is removed (its id is the status record's session id),
    /// its authenticator's counter moves from the value the verifier compared against to the new one, a session
    /// opens, and the operation's status record finishes.
    package struct Authentication: Sendable {
        var counter: CounterAdvance
        var sessionToken: String
        var session: SessionRecord
        var status: StatusStore.Outcome
    }

    /// One authenticator's signature counter, compared and set.
    package struct CounterAdvance: Sendable, Equatable {
        var aaid: String
        var keyID: String
        var from: UInt32
        var to: UInt32
    }

    /// How ``completeAuthentication(_:)`` or ``completePasskeySignIn(id:from:to:backupState:at:sessionToken:session:challenge:counterRefusal:)``
    /// ended. For a passkey sign-in, the request is its ceremony.
    package enum Completion: Sendable, Equatable {
        /// Everything written.
        case completed
        /// The request was gone (answered already, refused, cancelled or purged): nothing was written.
        case requestGone
        /// The request was there and is taken (a UAF request removed, a passkey ceremony recorded `failed`), but the
        /// counter no longer had its compared value (another request advanced it meanwhile: this answer is a replay);
        /// nothing else was written.
        case counterMoved
    }

    /// Records a verified authentication (``Authentication``): all of it only if its request was still there to
    /// remove and the counter still had its compared value.
    func completeAuthentication(_ authentication: Authentication) async throws -> Completion {
        let counter = authentication.counter
        let requestID = authentication.status.sessionId
        guard database.engine == .postgres else {
            guard try await stores.uafCeremonies.remove(id: requestID) else { return .requestGone }
            guard try await stores.registrations.updateSignCounter(aaid: counter.aaid, keyID: counter.keyID, from: counter.from, to: counter.to)
            else {
                return .counterMoved
            }
            try await stores.sessions.insert(token: authentication.sessionToken, authentication.session)
            try await stores.status.finish(authentication.status)
            return .completed
        }
        let advance = RegistrationStore.counterAdvance(aaid: counter.aaid, keyID: counter.keyID, from: counter.from, to: counter.to)
        let finish = try authentication.status.update()
        let row = try await database.run { sql in
            try await sql.statement(
                """
                WITH removed AS (\(UAFCeremonyStore.removal(id: requestID)) RETURNING id),
                advanced AS (\(advance) AND EXISTS (SELECT 1 FROM removed) RETURNING key_id),
                opened AS (
                    INSERT INTO sessions (\(unsafeRaw: SessionStore.columns))
                    SELECT \(SessionStore.values(token: authentication.sessionToken, authentication.session)) FROM advanced
                    RETURNING id),
                finished AS (\(finish) AND EXISTS (SELECT 1 FROM opened) RETURNING session_id)
                SELECT (SELECT COUNT(*) FROM removed) AS removed, (SELECT COUNT(*) FROM advanced) AS advanced
                """
            ).first()
        }
        guard let row, try row.decode(column: "removed", as: Int64.self) == 1 else { return .requestGone }
        return try row.decode(column: "advanced", as: Int64.self) == 1 ? .completed : .counterMoved
    }

    // MARK: Passkeys

    /// Opens a passkey sign-in's ceremony (uncounted), reading the passkeys of `username` first when it is given.
    /// The ceremony is stored only if `requiringPasskeys` is false or she has a passkey, and only if `credentialID`
    /// is nil or one of hers; otherwise nothing is stored. Returns her passkeys (oldest first) and whether it was
    /// stored.
    ///
    /// On PostgreSQL this is one statement instead of two (the read and the insert, the insert only under the same
    /// condition), as every step of a login there. SQLite reads, then inserts.
    func openPasskeySignIn(
        _ record: PasskeyCeremony, passkeysOf username: String?, requiringPasskeys: Bool, credentialID: String?
    ) async throws -> (passkeys: [PasskeyRecord], opened: Bool) {
        guard let username, database.engine == .postgres else {
            var passkeys: [PasskeyRecord] = []
            if let username { passkeys = try await stores.passkeys.passkeys(username: username) }
            guard !requiringPasskeys || !passkeys.isEmpty, credentialID.map({ id in passkeys.contains { $0.credentialID == id } }) ?? true
            else { return (passkeys, false) }
            return (passkeys, try await stores.passkeyCeremonies.open(record, cap: nil))
        }
        let hasPasskeys: StoreStatement = requiringPasskeys ? "EXISTS (SELECT 1 FROM keys)" : "TRUE"
        let hasCredential: StoreStatement = credentialID.map { "EXISTS (SELECT 1 FROM keys WHERE credential_id = \(bind: $0))" } ?? "TRUE"
        // One row per passkey of hers, or one row without a passkey (NULL columns) when she has none; each row says
        // whether the ceremony was stored.
        let rows = try await database.run { sql in
            try await sql.statement(
                """
                WITH keys AS (SELECT * FROM passkeys WHERE username = \(bind: username)),
                opened AS (
                    INSERT INTO webauthn_ceremonies (\(unsafeRaw: PasskeyCeremonyStore.insertedColumns))
                    SELECT \(PasskeyCeremonyStore.insertedValues(record, counted: nil)) WHERE \(hasPasskeys) AND \(hasCredential)
                    RETURNING challenge)
                SELECT keys.*, (SELECT COUNT(*) FROM opened) AS ceremonies_opened
                FROM (SELECT 1) AS one LEFT JOIN keys ON TRUE ORDER BY keys.created_at, keys.credential_id
                """
            ).all()
        }
        guard let first = rows.first else { throw StoreError.malformedRow("webauthn_ceremonies: no row for an opened sign-in") }
        let passkeys = try rows.filter { try !$0.decodeNil(column: "credential_id") }.map(PasskeyStore.record)
        return (passkeys, try first.decode(column: "ceremonies_opened", as: Int64.self) == 1)
    }

    /// A passkey sign-in's answer, read: the ceremony of `challenge` if nothing answered it yet (expired or not), left
    /// as it is, and the passkey `credentialID` names (nil when none has it). Nil when no unanswered ceremony has that
    /// challenge, and then no passkey is read. One statement on both engines. The sign-in's completion takes the
    /// ceremony (``completePasskeySignIn(id:from:to:backupState:at:sessionToken:session:challenge:counterRefusal:)``),
    /// or its refusal does (``PasskeyCeremonyStore/abandon(challenge:outcome:)``).
    ///
    /// Why not take it here, as a registration's answer does: on PostgreSQL each statement that writes is a commit that
    /// waits for its log to reach the disk, and a read is not. Taking the ceremony in the completion makes a sign-in two
    /// such commits instead of three, as for a UAF login (``pending(id:)``).
    func pendingPasskeySignIn(challenge: String, credentialID: String) async throws -> (ceremony: PasskeyCeremony, passkey: PasskeyRecord?)? {
        let row = try await database.run { sql in
            try await sql.statement(
                """
                SELECT \(unsafeRaw: PasskeyCeremonyStore.prefixedColumns), passkeys.*
                FROM webauthn_ceremonies AS ceremony LEFT JOIN passkeys ON passkeys.credential_id = \(bind: credentialID)
                WHERE ceremony.challenge = \(bind: challenge) AND ceremony.state = 'initialized'
                """
            ).first()
        }
        guard let row else { return nil }
        let ceremony = try PasskeyCeremonyStore.record(row, names: .prefixed)
        let passkey = try row.decode(column: "credential_id", as: String?.self) == nil ? nil : try PasskeyStore.record(row)
        return (ceremony, passkey)
    }

    /// A verified passkey sign-in, written, only if its ceremony (`challenge`) is still unanswered: the ceremony is
    /// taken, the counter moves by compare-and-set (``PasskeyStore/recordUse(id:from:to:backupState:at:)``) and, only
    /// if it moved, the session opens and the ceremony is recorded `succeeded` for its user. When the counter did not
    /// move (another sign-in moved it first: this answer is a replay), the ceremony is recorded `failed` with
    /// `counterRefusal`, the words the caller hears.
    ///
    /// Of two answers to one ceremony verified at the same time, only one takes it: on PostgreSQL the statement locks
    /// the ceremony's row while it is unanswered (`SELECT … FOR UPDATE`, which waits for a concurrent holder and then
    /// reads the row again) and writes the rest only if it got it; on SQLite the first statement marks it answered
    /// and must change it.
    func completePasskeySignIn(
        id: String, from: UInt32, to: UInt32, backupState: Bool, at: Date, sessionToken: String,
        session: SessionRecord, challenge: String, counterRefusal: String
    ) async throws -> Completion {
        guard database.engine == .postgres else {
            guard try await stores.passkeyCeremonies.claim(challenge: challenge) else { return .requestGone }
            guard try await stores.passkeys.recordUse(id: id, from: from, to: to, backupState: backupState, at: at) else {
                try await stores.passkeyCeremonies.finish(challenge: challenge, succeeded: false, outcome: counterRefusal)
                return .counterMoved
            }
            try await stores.sessions.insert(token: sessionToken, session)
            try await stores.passkeyCeremonies.finish(
                challenge: challenge, succeeded: true, outcome: nil, username: session.username, credentialID: id)
            return .completed
        }
        // PostgreSQL updates a row once per statement: the ceremony's row is locked first and written last, with the
        // outcome the counter's compare-and-set gave.
        let row = try await database.run { sql in
            try await sql.statement(
                """
                WITH claimed AS (\(PasskeyCeremonyStore.unanswered(challenge: challenge)) FOR UPDATE),
                used AS (\(PasskeyStore.use(id: id, from: from, to: to, backupState: backupState, at: at)) AND EXISTS (SELECT 1 FROM claimed)
                    RETURNING credential_id),
                opened AS (
                    INSERT INTO sessions (\(unsafeRaw: SessionStore.columns)) SELECT \(SessionStore.values(token: sessionToken, session)) FROM used
                    RETURNING id),
                finished AS (
                    UPDATE webauthn_ceremonies AS ceremony SET
                        state = CASE WHEN verdict.signed THEN 'succeeded' ELSE 'failed' END,
                        outcome = CASE WHEN verdict.signed THEN NULL ELSE \(bind: counterRefusal) END,
                        username = CASE WHEN verdict.signed THEN COALESCE(ceremony.username, \(bind: session.username)) ELSE ceremony.username END,
                        credential_id = CASE WHEN verdict.signed THEN COALESCE(ceremony.credential_id, \(bind: id)) ELSE ceremony.credential_id END
                    FROM (SELECT EXISTS (SELECT 1 FROM opened) AS signed) AS verdict
                    WHERE ceremony.challenge IN (SELECT challenge FROM claimed)
                    RETURNING ceremony.challenge)
                SELECT (SELECT COUNT(*) FROM finished) AS taken, (SELECT COUNT(*) FROM opened) AS opened
                """
            ).first()
        }
        guard let row, try row.decode(column: "taken", as: Int64.self) == 1 else { return .requestGone }
        return try row.decode(column: "opened", as: Int64.self) == 1 ? .completed : .counterMoved
    }
}
