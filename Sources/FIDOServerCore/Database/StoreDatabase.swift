import EmbeddedSQLite
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresKit
import PostgresNIO
import Primitives
import SQLKit
import SQLiteKit

/// The one SQL layer every store is written against (vapor/sql-kit): an embedded SQLite file, or a PostgreSQL
/// server shared by several instances. Stores write portable SQL only: `TEXT` and `BIGINT` columns (times are
/// epoch milliseconds, keys base64url text), `INSERT … ON CONFLICT DO NOTHING` for duplicates, `DELETE … RETURNING`
/// and conditional `UPDATE … RETURNING` for once-only and compare-and-set changes. Both engines make each such
/// statement atomic, which is what lets two instances share one database safely. The one exception is
/// ``CeremonyStore``: on PostgreSQL it chains a step's writes in one data-modifying `WITH` (one round trip), on
/// SQLite it runs the same writes as the stores' portable statements.
public final class StoreDatabase: Sendable {
    public enum Engine: String, Sendable { case sqlite, postgres }

    public let engine: Engine
    private let backing: Backing
    private let logger: Logger
    private let metrics: ServerMetrics?
    /// Whether each statement is a span of the request's trace (`observability.tracing`): off, statements cost
    /// nothing more.
    private let traced: Bool

    private enum Backing: Sendable {
        case sqlite(SQLiteEngine)
        case postgres(PostgresConnections, Task<Void, Never>, PostgresStatementCache)
    }

    /// The PostgreSQL connection set, for the tests that watch it (runs waiting for a connection).
    var postgresConnections: PostgresConnections? {
        if case .postgres(let connections, _, _) = backing { return connections }
        return nil
    }

    private init(engine: Engine, backing: Backing, logger: Logger, metrics: ServerMetrics?, traced: Bool) {
        self.traced = traced
        self.engine = engine
        self.backing = backing
        self.logger = logger
        self.metrics = metrics
    }

    /// Opens the configured database and brings its schema up to date (`Migrations`).
    /// With `groupCommit` false, SQLite commits each run on its own and `transaction(_:)` may be used at any time
    /// (the operator's imports and migrations, which need all or nothing); a server always groups.
    /// On PostgreSQL, the server first checks that the database answers (``StartupAttempts``), so an unreachable one
    /// ends the start with an error that names it instead of a wait without end.
    public static func open(
        _ configuration: ServerConfiguration.Database, logger: Logger = Logger(label: "mauth.database"),
        metrics: ServerMetrics? = nil, startup: StartupAttempts = .standard, groupCommit: Bool = true, traced: Bool = false
    ) async throws -> StoreDatabase {
        do {
            return try await openNamingNothing(
                configuration, logger: logger, metrics: metrics, startup: startup, groupCommit: groupCommit, traced: traced)
        } catch let error as SQLiteEngineError {
            guard case .sqlite(let path) = configuration else { throw error }
            throw ServerConfiguration.ConfigurationError.invalid("database \(path): \(sqliteReason(error))")
        }
    }

    private static func openNamingNothing(
        _ configuration: ServerConfiguration.Database, logger: Logger, metrics: ServerMetrics?,
        startup: StartupAttempts, groupCommit: Bool, traced: Bool
    ) async throws -> StoreDatabase {
        let database: StoreDatabase
        var postgresStarting: PostgresStartupLogFilter.Flag?
        switch configuration {
        case .sqliteInMemory:
            database = StoreDatabase(
                engine: .sqlite, backing: .sqlite(try SQLiteEngine(path: ":memory:", logger: logger)), logger: logger,
                metrics: metrics, traced: traced)
            metrics?.databasePool(size: 1)
        case .sqlite(let path):
            try createDirectory(containing: path)
            let engine = try SQLiteEngine(path: path, logger: logger)
            database = StoreDatabase(engine: .sqlite, backing: .sqlite(engine), logger: logger, metrics: metrics, traced: traced)
            metrics?.databasePool(size: 1)  // one connection, whose statements run one at a time
            // WAL without a sync per commit: a commit is in the file (the OS's cache) when it returns, so a killed
            // process loses nothing it answered; only a power loss can take the last commits.
            // The log is copied into the file by a thread of its own (SQLiteCheckpointer), every tenth of a second,
            // off the engine. The automatic checkpoint inside the commit that crosses the threshold remains, because
            // only it can let the log start over under continuous writes; it now finds all but the last tenth of a
            // second already copied and synced. The threshold, and why it is where it is: `checkpointPages`.
            // The page size first: SQLite applies it only to a file that has no page yet, so a new database gets
            // `pageSize` and an existing one keeps the size it was created with (in WAL mode SQLite cannot change it).
            for pragma in [
                "PRAGMA page_size = \(Self.pageSize)",
                "PRAGMA busy_timeout = 5000", "PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL",
                "PRAGMA wal_autocheckpoint = \(Self.checkpointPages)",
            ] {
                try engine.apply(pragma)
            }
            try engine.startBackgroundCheckpoints(path: path)
        case .postgres(let url, let poolSize):
            let target = try await waitUntilReachable(url: url, attempts: startup, logger: logger)
            // The pool serves no connection before `run()` has begun, and PostgresNIO logs a warning ("run() hasn't
            // been called yet") for a lease asked earlier. The migrations below lease right after the task that
            // calls `run()` starts, and on a busy machine that thread can be preempted before `run()` marks the
            // client running: a false alarm in the operator's log. The lease is not lost (the pool serves it once
            // `run()` begins), so until the start-up is over that one warning is logged at debug; after it, a
            // lease before `run()` would be a real mistake and warns again.
            let starting = PostgresStartupLogFilter.Flag()
            postgresStarting = starting
            let client = try postgresClient(
                url: url, poolSize: poolSize,
                logger: Logger(label: logger.label) { _ in PostgresStartupLogFilter(upstream: logger.handler, starting: starting) })
            let (started, signal) = AsyncStream<Void>.makeStream()
            let task = Task {
                signal.finish()
                await client.run()
            }
            for await _ in started {}
            let connections = PostgresConnections(client: client, size: poolSize, logger: logger, describe: { reason($0, target: target) })
            connections.start()
            database = StoreDatabase(
                engine: .postgres, backing: .postgres(connections, task, PostgresStatementCache()), logger: logger,
                metrics: metrics, traced: traced)
            metrics?.databasePool(size: poolSize)
        }
        do {
            try await Migrations.run(on: database, logger: logger)
            postgresStarting?.end()
        } catch {
            try? await database.close()
            throw error
        }
        if groupCommit, case .sqlite(let engine) = database.backing { engine.startGroupCommit() }
        return database
    }

    /// Log pages after which a commit copies the SQLite log back into the database file (SQLite's automatic
    /// checkpoint, kept beside the background one: see `open`). SQLite's default of 1000 meant about 25 such inline
    /// checkpoints a second under load; 10000, ten times rarer, with pages written many times copied once, gave
    /// about +20 % authentication flows/s (measured in pairs before the background thread existed). The inline
    /// checkpoint still holds every login in flight for a few milliseconds; at 40000 it comes every 1.5 s instead of
    /// every 0.4 s under login load. Measured under `mauth load` (32 connections, 10 s, alternated): 10000, 20000,
    /// 40000 and 80000 pages gave a whole-flow p99 of 14.5 to 16.5, 13.9 to 15.0, 12.3 to 14.5 and 12.5 to 13.4 ms.
    /// These were measured with 4 KiB pages. With ``pageSize`` (2 KiB) a login writes about a quarter more log
    /// frames, so at 4,500 logins/s 40000 pages come about every 1.1 s; 40000 keeps the log file at about 80 MiB (160
    /// MiB in a database created with 4 KiB pages), which SQLite then reuses.
    static let checkpointPages = 40_000

    /// The page size of a new SQLite database file, in bytes (SQLite's default is 4096). Under login load a commit
    /// writes a log frame for every page its logins changed: with 2 KiB pages a login wrote about 8.4 frames instead
    /// of 6.8, but 17 KiB to the file instead of 27 KiB, and in 24 alternated `mauth load` pairs the whole flow's p99
    /// was lower in 20 (below 15 ms in 23 of 24 runs, against 19 of 24). 1024 was no better than 4096. The
    /// measurements, and how an older database can be given these pages: FIDOServer documentation, "The embedded
    /// SQLite engine".
    static let pageSize = 2048

    /// Runs `body` with a database handle. On PostgreSQL the handle is one connection for the whole body (see
    /// `PostgresConnections`), so statements in it run in order on one session (what `transaction(_:)` needs).
    public func run<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard let metrics else { return try await perform(body) }
        return try await metrics.databaseOperation { try await perform(body) }
    }

    /// Rows a purge deletes per statement at most (`deleteExpired(from:before:batch:pause:)`).
    public static let purgeBatch = 5_000

    /// Deletes the rows of `table` whose `expires_at` is before `cutoff` (epoch milliseconds), oldest first, at most
    /// `batch` of them per statement, each statement run (and on SQLite committed) on its own, `pause` apart, until
    /// one deletes fewer than `batch`; returns how many it deleted. Every table purged this way has an index on
    /// `expires_at`.
    ///
    /// Why a cap: one `DELETE` holds SQLite's one writer, and the event loop it runs on, until it is done, so every
    /// login in flight waits for it, and a backlog (a server that was down for an hour) would hold it for minutes.
    /// Why not small batches: a batch dirties the index pages of the rows it deletes and every commit writes them
    /// again, so the rows of one batch should share pages. With random keys (before ``OrderedToken``), batches of
    /// 500 rows rewrote each page of the sessions' indexes a hundred times a minute and starved the logins for 4.5 s
    /// (measured); a batch of 5,000 took about a tenth of a second. The pause lets the logins run between batches.
    ///
    /// Several instances may purge at once (PostgreSQL): they may pick the same rows, and one of them then deletes
    /// fewer than it picked and stops early; what is left goes at the next purge (expired rows are already refused
    /// when read, so a purge only reclaims space).
    func deleteExpired(
        from table: String, before cutoff: Int64,
        batch: Int = StoreDatabase.purgeBatch, pause: Duration = .milliseconds(100)
    ) async throws -> Int {
        precondition(batch > 0, "a purge deletes at least one row per statement")
        return try await inBatches(Self.purgeStatement(engine: engine, table: table, before: cutoff, batch: batch), batch: batch, pause: pause)
    }

    /// Runs `statement`, which changes at most `batch` rows and returns a row for each, again after `pause` until it
    /// changes fewer than `batch`; returns how many rows it changed in all (a purge's loop, see
    /// `deleteExpired(from:before:batch:pause:)`).
    func inBatches(_ statement: StoreStatement, batch: Int, pause: Duration = .milliseconds(100)) async throws -> Int {
        var changed = 0
        while true {
            let count = try await run { sql in try await sql.statement(statement).all().count }
            changed += count
            if count < batch { return changed }
            try await Task.sleep(for: pause)
        }
    }

    /// The condition that a row is one of those `picked` selects (`FROM … WHERE … ORDER BY … LIMIT n`), matched by
    /// physical row id so the statement reads only the picked rows (why: ``purgeStatement(engine:table:before:batch:)``).
    static func pickedRows(engine: Engine, _ picked: StoreStatement) -> StoreStatement {
        switch engine {
        case .sqlite: return "rowid IN (SELECT rowid \(picked))"
        case .postgres: return "ctid = ANY(ARRAY(SELECT ctid \(picked)))"
        }
    }

    /// An expiry (epoch milliseconds) in a purge's condition: a value on SQLite, written into the statement's text on
    /// PostgreSQL (see ``expired(before:engine:)``). The value is an integer formatted here, so it cannot change what
    /// the statement says.
    static func expiry(_ millis: Int64, engine: Engine) -> StoreStatement {
        switch engine {
        case .sqlite: return "\(bind: millis)"
        case .postgres: return "\(unsafeRaw: String(millis))"
        }
    }

    /// A purge's condition, "expired before `cutoff`", written so that PostgreSQL picks the rows through the
    /// `expires_at` index whatever it knows of the table.
    ///
    /// Why: the plain `expires_at < $1` read the whole table at every purge, once a second, in two states every new
    /// database goes through (`pg_stat_statements` over a benchmark's run, two instances: the purges of the status
    /// records, sessions and audit events read 330 to 520 pages each, up to 49 µs of PostgreSQL's time a login):
    /// - **No statistics yet** (until autovacuum first analyzes the table, a minute at the soonest): PostgreSQL then
    ///   guesses that a third of the rows match, and sorting a sequential scan looked cheaper than 5,000 index
    ///   probes. A range, `expires_at >= 0 AND expires_at < x`, is guessed at half a percent when either bound is
    ///   unknown, so the index wins; with statistics the lower bound matches every row (an expiry is a date after
    ///   1970) and changes no estimate.
    /// - **A plan kept from the empty table**: a statement with values is prepared once per connection and keeps its
    ///   generic plan until the table is analyzed again (``PostgresStatementCache``, `plan_cache_mode =
    ///   force_generic_plan`). The first purge runs a second after a server starts, often on empty tables, where a
    ///   sequential scan costs nothing, so that plan stayed, for the pick and for the delete by `ctid` alike. With the
    ///   cutoff in the text the statement has no values, is not prepared, and is planned at each run (once a second
    ///   per table, a fraction of a millisecond) with the cutoff and the statistics of the moment.
    ///
    /// SQLite keeps `expires_at < ?` with a value: its statements are prepared once with a plan that never depends on
    /// values (``SQLiteEngine``) and it reads the index for this, and a new text every second would only fill its
    /// statement cache.
    static func expired(before cutoff: Int64, engine: Engine) -> StoreStatement {
        switch engine {
        case .sqlite: return "expires_at < \(expiry(cutoff, engine: engine))"
        case .postgres: return "expires_at >= 0 AND expires_at < \(expiry(cutoff, engine: engine))"
        }
    }

    /// One statement of `deleteExpired(from:before:batch:pause:)`: the oldest `batch` expired rows, picked through
    /// the `expires_at` index and deleted by their physical row id, so it reads only the rows it deletes.
    ///
    /// Why by row id on PostgreSQL: deleting `WHERE key IN (SELECT key … LIMIT n)` let the planner join the picked
    /// keys against a sequential scan of the whole table whenever it guessed that cheaper than n index probes. It
    /// did for the status records (half a million rows, ten minutes' worth): every purge read all of them, 0.4 to
    /// 0.75 s a statement, twice a second with two instances, and the logins lost 12 % of their rate while rows
    /// expired (8 % now; measured, steady-state run). `ctid = ANY(ARRAY(…))` is a TID scan whatever the estimates
    /// for a table with rows (the condition that picks them: ``expired(before:engine:)``);
    /// a row updated since it was picked has a new ctid, is skipped, and goes at the next purge. SQLite's `rowid` is
    /// the same idea.
    static func purgeStatement(engine: Engine, table: String, before cutoff: Int64, batch: Int) -> StoreStatement {
        let oldest: StoreStatement =
            "FROM \(unsafeRaw: table) WHERE \(expired(before: cutoff, engine: engine)) ORDER BY expires_at LIMIT \(unsafeRaw: String(batch))"
        return "DELETE FROM \(unsafeRaw: table) WHERE \(pickedRows(engine: engine, oldest)) RETURNING 1 AS deleted"
    }

    /// The background checkpointer's progress on an SQLite file (``SQLiteCheckpointer``); nil for PostgreSQL and an
    /// in-memory database, which have none. For tests.
    var checkpointProgress: SQLiteCheckpointer.Progress? {
        guard case .sqlite(let engine) = backing else { return nil }
        return engine.checkpointProgress
    }

    /// How many statements the embedded SQLite engine has prepared since it opened; nil for PostgreSQL. For tests.
    var sqliteStatementsPrepared: Int? {
        guard case .sqlite(let engine) = backing else { return nil }
        return engine.statementsPrepared
    }

    /// A trivial query: whether the database answers (readiness).
    package func ping() async throws {
        try await run { sql in try await sql.raw("SELECT 1").run() }
    }

    private func perform<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        switch backing {
        case .sqlite(let engine):
            // Inside a request's unit of work (``unitOfWork(_:)``), the request waits for the commit once, at its
            // end; otherwise this run waits for the commit of what it wrote (group commit, see SQLiteEngine).
            if let shared = Self.currentUnit, engine.joins(shared) { return try await body(traced(engine.sql(shared))) }
            let unit = SQLiteEngine.UnitOfWork(engine)
            let result = try await body(traced(engine.sql(unit)))
            try await engine.durable(unit)
            return result
        case .postgres(let connections, _, let statements):
            let connection = try await connections.acquire()
            let result: T
            do {
                result = try await body(traced(PostgresPreparingDatabase(connection: connection, cache: statements)))
            } catch {
                if PostgresConnections.endsSession(error) { await connections.discard(connection) } else { connections.release(connection) }
                throw error
            }
            connections.release(connection)
            return result
        }
    }

    /// `sql`, whose statements are spans when the database is traced.
    private func traced(_ sql: any SQLDatabase) -> any SQLDatabase {
        traced ? TracingSQLDatabase(base: sql, system: engine == .sqlite ? "sqlite" : "postgresql") : sql
    }

    /// The unit of work of the request being served, if any (see ``unitOfWork(_:)``).
    @TaskLocal static var currentUnit: SQLiteEngine.UnitOfWork?

    /// Runs `body` (one HTTP request) as one unit of work: on SQLite, every ``run(_:)`` inside it returns as soon as
    /// its statements ran, and this returns only once all of them are committed, so the answer still never leaves
    /// before what it reports is in the database file, but a request waits for one commit instead of one per
    /// statement group. If that commit fails, a successful body's result is replaced by the failure; a failing
    /// body's own error wins (its answer reports a failure anyway). Runs that outlive the body (a task it started)
    /// wait for their own commits.
    ///
    /// PostgreSQL commits each statement on its own, so there a unit of work is just `body`: each run takes a
    /// connection of `PostgresConnections` for its statements, which costs a lock, not a trip to the pool.
    package func unitOfWork<T>(_ body: () async throws -> T) async throws -> T {
        guard case .sqlite(let engine) = backing else { return try await body() }
        let unit = SQLiteEngine.UnitOfWork(engine)
        let result: Result<T, any Error>
        do { result = .success(try await Self.$currentUnit.withValue(unit) { try await body() }) } catch { result = .failure(error) }
        engine.end(unit)
        do {
            try await engine.durable(unit)
        } catch {
            guard case .failure(let bodyError) = result else { throw error }
            logger.error("a failed request's changes were not committed either", metadata: ["error": .string(String(describing: error))])
            throw bodyError
        }
        return try result.get()
    }

    /// Runs `body` inside one transaction on one connection. On SQLite only while the engine does not group commits
    /// (its own transaction would refuse a `BEGIN`): at start-up (migrations), or on a database opened with
    /// `groupCommit: false`; on PostgreSQL it is safe at any time.
    func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await transaction(beginning: engine == .sqlite ? "BEGIN IMMEDIATE" : "BEGIN", body)
    }

    /// Runs `body` in one read transaction on one connection, so that everything it reads is one moment of the
    /// database while servers go on writing: SQLite's deferred transaction reads one snapshot of its log and takes no
    /// write lock (a running server is not held up); PostgreSQL's repeatable read is one snapshot too. On SQLite the
    /// database must be opened with `groupCommit: false`, as for ``transaction(_:)``.
    func readSnapshot<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await transaction(beginning: engine == .sqlite ? "BEGIN DEFERRED" : "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", body)
    }

    private func transaction<T: Sendable>(beginning: String, _ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await run { sql in
            try await sql.raw(SQLQueryString(beginning)).run()
            do {
                let result = try await body(sql)
                try await sql.raw("COMMIT").run()
                return result
            } catch {
                try? await sql.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    public func close() async throws {
        switch backing {
        case .sqlite(let engine): engine.close()
        case .postgres(let connections, let task, _):
            await connections.close()
            task.cancel()
            await task.value
        }
    }
}
