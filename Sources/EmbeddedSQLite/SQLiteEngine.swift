// SQLite's variadic sqlite3_db_config, which Swift cannot call.
import CSQLiteSettings
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO
// sqlite-nio's vendored SQLite (the same library SQLiteNIO links, with its `sqlite_nio_` prefix), used directly for
// what SQLiteNIO's API does not offer: statements kept prepared, and execution without a thread hop.
import VaporCSQLite

/// The embedded SQLite database, run in the caller's thread under a lock, with every statement prepared once and
/// commits grouped.
///
/// Why not SQLiteNIO's connection: it prepares every statement anew, runs it on a thread pool and hands each result
/// row back to an event loop, so one statement costs three or four thread switches; a login runs about ten
/// statements. Here a statement is a lock, a bind, a step and a reset on a statement prepared once
/// (`SQLITE_PREPARE_PERSISTENT`), typically a few microseconds, so it runs where the request already is. SQLite
/// serializes a connection's statements anyway; the lock only makes that explicit. The one wait that can happen
/// under the lock is another process holding the write lock (`busy_timeout`), which only short administrative
/// commands do.
///
/// **Group commit.** Once serving (``startGroupCommit()``), statements run inside a transaction the engine opens
/// (`BEGIN IMMEDIATE`) and commits on behalf of everyone who wrote in it: a caller finishes its unit of work with
/// ``durable(_:)``, which returns only after the transaction holding its statements has committed. So an answer is
/// never sent for a change that is not yet in the database file, exactly as with one commit per statement, but one
/// commit (WAL frames written, locks taken) serves every request that ran meanwhile; under load that was most of
/// SQLite's cost. A change other requests can see before it commits is only ever answered after that commit, and if
/// SQLite rolls a transaction back (an I/O error, a full disk), everyone who wrote in it gets the error.
///
/// Stores still speak SQLKit (``sql(_:)``), so they are one code path for SQLite and PostgreSQL.
public final class SQLiteEngine: @unchecked Sendable {
    // @unchecked: `handle`, `statements` and `checkpointer` are only touched while holding `lock`.
    private var handle: OpaquePointer?
    private var statements: [String: PreparedStatement] = [:]
    private var checkpointer: SQLiteCheckpointer?
    /// Statements prepared since the engine opened, cached or not (tests).
    private var preparations = 0
    private let lock = NIOLock()
    public let logger: Logger

    // Group commit, all under `lock`. `generation` numbers transactions; `committedThrough` is the last one that
    // ended (committed or failed); `failures` remembers the failed ones for callers that have not asked yet.
    private var grouping = false
    private var open = false
    private var dirty = false
    private var generation: UInt64 = 0
    private var committedThrough: UInt64 = 0
    private var commitScheduled = false
    private var waiters: [CheckedContinuation<Void, any Error>] = []
    private var failures: [UInt64: SQLiteEngineError] = [:]
    /// Failed transactions remembered; older ones are forgotten (a caller asks within microseconds).
    static let failureMemory = 1024
    /// More distinct statement texts than this (no store has that many) and the cache starts over.
    static let statementCacheLimit = 256

    /// A statement kept prepared, with its column names read once.
    private final class PreparedStatement {
        let pointer: OpaquePointer
        let columns: SQLiteResultColumns
        init(pointer: OpaquePointer, columns: SQLiteResultColumns) {
            self.pointer = pointer
            self.columns = columns
        }
    }

    /// Opens (and creates) the database at `path`, or an in-memory one for `":memory:"`.
    public init(path: String, logger: Logger) throws {
        self.logger = logger
        _ = Self.libraryInitialized
        // NOMUTEX: SQLite's own connection mutex would only repeat `lock`.
        let handle = try Self.connect(path, flags: SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX)
        // The query planner stability guarantee: a statement's plan never depends on the values bound to it. Without
        // it SQLite prepared a statement again whenever a value it had peeked at while planning changed: the lookup
        // of a user's registrations was prepared anew on every login (2 % of the server's CPU under load, measured).
        // Statements are prepared once and kept (below), so a plan chosen for one value must serve all of them anyway.
        let qpsg = mauth_sqlite_enable_qpsg(UnsafeMutableRawPointer(handle))
        guard qpsg == SQLITE_OK else {
            sqlite_nio_sqlite3_close(handle)
            throw SQLiteEngineError(code: qpsg, message: "cannot turn on the query planner stability guarantee (\(path))")
        }
        self.handle = handle
    }

    /// Reads an existing database file's schema on a read-only connection, without creating or changing anything:
    /// throws SQLite's reason when the file is not a database or its first pages are damaged. The server calls it
    /// before it writes anything beside the file; reading the schema costs a few pages, whatever the file's size.
    public static func checkReadable(path: String) throws {
        _ = Self.libraryInitialized
        let handle = try connect(path, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX)
        defer { sqlite_nio_sqlite3_close(handle) }
        try check(sqlite_nio_sqlite3_exec(handle, "SELECT count(*) FROM sqlite_schema", nil, nil, nil), handle)
    }

    /// Opens a connection to `path` with `flags` (and extended result codes), or throws SQLite's reason; the engine's
    /// and the checkpointer's connections. `context` is added to the message after the path.
    static func connect(_ path: String, flags: Int32, context: String = "") throws -> OpaquePointer {
        var handle: OpaquePointer?
        let status = sqlite_nio_sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_EXRESCODE, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.flatMap { sqlite_nio_sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "cannot open"
            if let handle { sqlite_nio_sqlite3_close(handle) }
            throw SQLiteEngineError(code: status, message: "\(message) (\(path)\(context))")
        }
        return handle
    }

    deinit {
        checkpointer?.stop()
        closeLocked()
    }

    /// Runs one statement and returns its rows. The statement text is the cache key, so texts built by SQLKit from
    /// the same call site share one prepared statement.
    func execute(_ sql: String, _ binds: [SQLiteData], unit: UnitOfWork? = nil) throws -> [SQLiteResultRow] {
        try locked(unit: unit) { handle in try step(sql, binds, handle: handle) }
    }

    /// Runs one statement that writes (`INSERT`, `UPDATE`, `DELETE`) and returns how many rows it changed, read from
    /// SQLite under the same lock, so no other caller's statement comes between. Why not `RETURNING`: SQLite collects
    /// returned rows in a temporary table, a B-tree with a page cache of its own opened and closed for every
    /// statement, which was about 15 allocations a statement and four statements of every login.
    func changes(_ sql: String, _ binds: [SQLiteData], unit: UnitOfWork? = nil) throws -> Int {
        try locked(unit: unit) { handle in
            _ = try step(sql, binds, handle: handle)
            return Int(sqlite_nio_sqlite3_changes64(handle))
        }
    }

    /// Runs `body` under the lock, inside the open grouped transaction (opening one if needed) when grouping.
    private func locked<T>(unit: UnitOfWork?, _ body: (OpaquePointer) throws -> T) throws -> T {
        var woken: [CheckedContinuation<Void, any Error>] = []
        defer { for waiter in woken { waiter.resume(throwing: SQLiteEngineError(code: SQLITE_ABORT, message: "the transaction was rolled back")) } }
        return try lock.withLock {
            guard let handle else { throw SQLiteEngineError(code: SQLITE_MISUSE, message: "the database is closed") }
            if grouping {
                if !open {
                    try run("BEGIN IMMEDIATE", handle)
                    open = true
                    generation += 1
                }
                unit?.generations.insert(generation)
            }
            do {
                return try body(handle)
            } catch let error as SQLiteEngineError {
                // Some errors (I/O, full disk, busy) make SQLite roll the whole transaction back: everyone who wrote
                // in it must hear so, not just this caller.
                if open, sqlite_nio_sqlite3_get_autocommit(handle) != 0 { woken = endTransaction(failure: error) }
                throw error
            }
        }
    }

    private func step(_ sql: String, _ binds: [SQLiteData], handle: OpaquePointer) throws -> [SQLiteResultRow] {
        let statement = try prepared(sql, handle: handle)
        let pointer = statement.pointer
        // Whatever happens, the statement goes back to the cache reset and without the caller's values.
        defer {
            sqlite_nio_sqlite3_reset(pointer)
            sqlite_nio_sqlite3_clear_bindings(pointer)
        }
        for (offset, value) in binds.enumerated() {
            try Self.check(bind(value, at: Int32(offset + 1), in: pointer), handle)
        }
        var rows: [SQLiteResultRow] = []
        while true {
            let step = sqlite_nio_sqlite3_step(pointer)
            if step == SQLITE_DONE { break }
            guard step == SQLITE_ROW else { throw SQLiteEngineError(code: step, message: Self.message(handle)) }
            var values: [SQLiteData] = []
            values.reserveCapacity(statement.columns.names.count)
            for column in 0..<Int32(statement.columns.names.count) { values.append(Self.value(pointer, column)) }
            rows.append(SQLiteResultRow(columns: statement.columns, values: values))
        }
        if open, sqlite_nio_sqlite3_stmt_readonly(pointer) == 0 { dirty = true }
        return rows
    }

    /// Runs a statement without results or values (transaction control), prepared once like every other statement:
    /// `sqlite3_exec` parsed it anew each time, and every group commit runs two of them (about 20 allocations a
    /// commit, and a login's count then varied with how many logins a commit happened to serve).
    private func run(_ sql: String, _ handle: OpaquePointer) throws {
        let pointer = try prepared(sql, handle: handle).pointer
        defer { sqlite_nio_sqlite3_reset(pointer) }
        let status = sqlite_nio_sqlite3_step(pointer)
        guard status == SQLITE_DONE || status == SQLITE_ROW else { throw SQLiteEngineError(code: status, message: Self.message(handle)) }
    }

    /// Runs a statement whose rows are not needed, outside any unit of work: the settings (pragmas) a database file
    /// is opened with.
    public func apply(_ statement: String) throws { _ = try execute(statement, []) }

    /// From now on statements run in grouped transactions (after the migrations, which commit on their own).
    public func startGroupCommit() { lock.withLock { grouping = true } }

    /// Returns once every statement `unit` ran is committed; throws if the transaction holding one of them failed.
    public func durable(_ unit: UnitOfWork) async throws {
        let (settled, writes) = lock.withLock { (outcome(of: unit), dirty) }
        if let settled { return try settled.get() }
        guard writes else {
            // Only reads so far: they saw committed data only. The transaction is still ended soon, so that it
            // does not keep the write lock from other processes while the server is idle.
            scheduleCommit()
            return
        }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            // Asked again under the lock: the commit may have happened since.
            let settled: Result<Void, any Error>? = lock.withLock {
                let settled = outcome(of: unit)
                if settled == nil { waiters.append(continuation) }
                return settled
            }
            if let settled { continuation.resume(with: settled) } else { scheduleCommit() }
        }
    }

    /// Under `lock`: how `unit`'s transactions ended, or nil while the last one is still open.
    private func outcome(of unit: UnitOfWork) -> Result<Void, any Error>? {
        if let failure = unit.generations.lazy.compactMap({ self.failures[$0] }).first { return .failure(failure) }
        guard let last = unit.generations.max(), last > committedThrough else { return .success(()) }
        return nil
    }

    /// Commits soon: after the work already queued has run, so that it joins this transaction.
    private func scheduleCommit() {
        let first: Bool = lock.withLock {
            defer { commitScheduled = true }
            return !commitScheduled
        }
        guard first else { return }
        Task {
            await Task.yield()
            self.commit()
        }
    }

    /// Commits the open transaction and wakes its writers.
    public func commit() {
        let (woken, failure): ([CheckedContinuation<Void, any Error>], SQLiteEngineError?) = lock.withLock {
            commitScheduled = false
            // Not open: nothing to commit, and nobody waits (waiters only wait for the open transaction).
            guard open, let handle else { return ([], nil) }
            var failure: SQLiteEngineError?
            do { try run("COMMIT", handle) } catch let error as SQLiteEngineError {
                failure = error
                if sqlite_nio_sqlite3_get_autocommit(handle) == 0 { try? run("ROLLBACK", handle) }
            } catch {}
            return (endTransaction(failure: failure), failure)
        }
        for waiter in woken {
            if let failure { waiter.resume(throwing: failure) } else { waiter.resume() }
        }
    }

    /// Under `lock`: the open transaction is over (committed, or rolled back with `failure`). Returns its waiters,
    /// for the caller to wake outside the lock.
    private func endTransaction(failure: SQLiteEngineError?) -> [CheckedContinuation<Void, any Error>] {
        open = false
        dirty = false
        committedThrough = generation
        if let failure {
            failures[generation] = failure
            if failures.count > Self.failureMemory, let oldest = failures.keys.min() { failures[oldest] = nil }
        }
        defer { waiters = [] }
        return waiters
    }

    /// Commits what is open, then closes (the background checkpointer first, if it runs).
    public func close() {
        let checkpointer = lock.withLock { () -> SQLiteCheckpointer? in
            defer { self.checkpointer = nil }
            return self.checkpointer
        }
        checkpointer?.stop()
        commit()
        lock.withLock { closeLocked() }
    }

    /// Starts copying the log into the file on a thread of its own (``SQLiteCheckpointer``); for a database file in
    /// WAL mode, once.
    public func startBackgroundCheckpoints(path: String) throws {
        let started = try SQLiteCheckpointer(path: path, logger: logger)
        lock.withLock { checkpointer = started }
    }

    /// How often SQLite has prepared the cached statement `sql` again since it was first prepared; nil when it is not
    /// cached (tests).
    func reprepares(of sql: String) -> Int32? {
        lock.withLock {
            statements[sql].map { sqlite_nio_sqlite3_stmt_status($0.pointer, Int32(SQLITE_STMTSTATUS_REPREPARE), 0) }
        }
    }

    /// How many statements the engine has prepared since it opened: a statement text seen for the first time, or
    /// again after the cache started over (tests).
    public var statementsPrepared: Int { lock.withLock { preparations } }

    /// The background checkpointer's progress, if it runs (tests).
    public var checkpointProgress: SQLiteCheckpointer.Progress? { lock.withLock { checkpointer?.progress } }

    private func closeLocked() {
        forgetStatements()
        if let handle { sqlite_nio_sqlite3_close(handle) }
        handle = nil
    }

    /// Under `lock`: finalizes every cached statement and empties the cache.
    private func forgetStatements() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement.pointer) }
        statements = [:]
    }

    private func prepared(_ sql: String, handle: OpaquePointer) throws -> PreparedStatement {
        if let statement = statements[sql] { return statement }
        if statements.count >= Self.statementCacheLimit { forgetStatements() }
        var pointer: OpaquePointer?
        preparations += 1
        let status = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &pointer, nil)
        guard status == SQLITE_OK, let pointer else {
            throw SQLiteEngineError(code: status, message: Self.message(handle))
        }
        let count = sqlite_nio_sqlite3_column_count(pointer)
        let names = (0..<count).map { sqlite_nio_sqlite3_column_name(pointer, $0).map { String(cString: $0) } ?? "" }
        let statement = PreparedStatement(pointer: pointer, columns: SQLiteResultColumns(names: names))
        statements[sql] = statement
        return statement
    }

    private func bind(_ value: SQLiteData, at index: Int32, in pointer: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let number): return sqlite_nio_sqlite3_bind_int64(pointer, index, Int64(number))
        case .float(let number): return sqlite_nio_sqlite3_bind_double(pointer, index, number)
        case .null: return sqlite_nio_sqlite3_bind_null(pointer, index)
        case .text(var text):
            // TRANSIENT: SQLite copies the bytes, which live only for this call. `withUTF8` hands over the string's
            // own bytes (a small string's from the stack); passing the String itself made a C string copy, one
            // allocation per text value bound (about 36 of a login's).
            return text.withUTF8 { bytes in
                sqlite_nio_sqlite3_bind_text64(
                    pointer, index, UnsafeRawPointer(bytes.baseAddress ?? Self.empty.utf8Start).assumingMemoryBound(to: CChar.self),
                    UInt64(bytes.count), Self.transient, UInt8(SQLITE_UTF8))
            }
        case .blob(let buffer):
            return buffer.withUnsafeReadableBytes { bytes in
                sqlite_nio_sqlite3_bind_blob64(pointer, index, bytes.baseAddress, UInt64(bytes.count), Self.transient)
            }
        }
    }

    /// `sqlite3_initialize`, once per process before the first open (a lazy static is initialized exactly once).
    private static let libraryInitialized: Void = { _ = sqlite_nio_sqlite3_initialize() }()

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// The bytes bound for an empty text (a static, null-terminated buffer): a null pointer would bind NULL instead of ''.
    private static let empty: StaticString = ""

    private static func value(_ pointer: OpaquePointer, _ column: Int32) -> SQLiteData {
        switch sqlite_nio_sqlite3_column_type(pointer, column) {
        case SQLITE_INTEGER: return .integer(Int(sqlite_nio_sqlite3_column_int64(pointer, column)))
        case SQLITE_FLOAT: return .float(sqlite_nio_sqlite3_column_double(pointer, column))
        case SQLITE_TEXT:
            let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
            guard let text = sqlite_nio_sqlite3_column_text(pointer, column) else { return .text("") }
            return .text(String(decoding: UnsafeRawBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite_nio_sqlite3_column_bytes(pointer, column))
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            if let bytes = sqlite_nio_sqlite3_column_blob(pointer, column) {
                buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
            }
            return .blob(buffer)
        default: return .null
        }
    }

    private static func check(_ status: Int32, _ handle: OpaquePointer) throws {
        guard status == SQLITE_OK else { throw SQLiteEngineError(code: status, message: Self.message(handle)) }
    }

    /// SQLite's message for the last failure on `handle` (also the checkpointer's).
    static func message(_ handle: OpaquePointer) -> String {
        sqlite_nio_sqlite3_errmsg(handle).map { String(cString: $0) } ?? "unknown error"
    }

    /// The engine as an SQLKit database, for the stores; statements run through it are noted in `unit`.
    public func sql(_ unit: UnitOfWork) -> any SQLDatabase { SQLiteEngineDatabase(engine: self, unit: unit) }

    /// Whether a run may join `unit` (instead of waiting for its own commit): only while the unit's owner has not
    /// finished it (``end(_:)``), so that nothing runs in a unit after its one wait for durability began, and only
    /// for this engine's units.
    public func joins(_ unit: UnitOfWork) -> Bool {
        unit.engine == ObjectIdentifier(self) && lock.withLock { !unit.ended }
    }

    /// The unit's owner is done with it: later runs that find it (a task the request started) wait on their own.
    public func end(_ unit: UnitOfWork) { lock.withLock { unit.ended = true } }

    /// The transactions one caller's statements ran in (usually one), so ``durable(_:)`` knows what to wait for.
    /// Only read and written under the engine's lock.
    public final class UnitOfWork: @unchecked Sendable {
        fileprivate var generations: Set<UInt64> = []
        fileprivate var ended = false
        fileprivate let engine: ObjectIdentifier
        public init(_ engine: SQLiteEngine) { self.engine = ObjectIdentifier(engine) }
    }
}

/// An SQLite failure: its (extended) result code and SQLite's message.
public struct SQLiteEngineError: Error, CustomStringConvertible {
    public let code: Int32
    public let message: String
    public var description: String { "SQLite error \(code): \(message)" }
}

/// The column names of a statement's results, shared by all its rows.
final class SQLiteResultColumns: Sendable {
    let names: [String]
    init(names: [String]) { self.names = names }
    func index(of name: String) -> Int? { names.firstIndex(of: name) }
}

/// One result row, read out of SQLite before the statement was reset.
struct SQLiteResultRow: SQLRow {
    let columns: SQLiteResultColumns
    let values: [SQLiteData]
    private static let decoder = SQLiteDataDecoder()

    var allColumns: [String] { columns.names }
    func contains(column: String) -> Bool { columns.index(of: column) != nil }
    func decodeNil(column: String) throws -> Bool {
        guard let index = columns.index(of: column) else { return true }
        return values[index] == .null
    }
    func decode<D: Decodable>(column: String, as: D.Type) throws -> D {
        guard let index = columns.index(of: column) else {
            throw SQLiteEngineError(code: SQLITE_RANGE, message: "no column \(column) in the result")
        }
        let value = values[index]
        // The types the stores read, by a cast to the asked type instead of the decoder's protocol lookup (about a
        // third of a read's decoding, profiled); anything else, a null and any conversion go through the decoder.
        switch value {
        case .text(let text): if let text = text as? D { return text }
        case .integer(let number):
            if let number = Int64(number) as? D { return number }
            if let number = number as? D { return number }
        default: break
        }
        return try Self.decoder.decode(D.self, from: value)
    }
}

/// A database that tells how many rows a write changed without a `RETURNING` clause (the embedded SQLite engine,
/// where `RETURNING` costs a temporary table per statement: ``SQLiteEngine``).
public protocol SQLChangeCounting: SQLDatabase {
    /// Runs `write`, an `INSERT`, `UPDATE` or `DELETE`, and returns how many rows it changed.
    func changedRows(_ write: any SQLExpression) async throws -> Int
}

/// ``SQLiteEngine`` seen through SQLKit: serializes the expression with SQLite's dialect and runs it inline.
struct SQLiteEngineDatabase: SQLChangeCounting {
    let engine: SQLiteEngine
    let unit: SQLiteEngine.UnitOfWork
    private static let encoder = SQLiteDataEncoder()

    var logger: Logger { engine.logger }
    var eventLoop: any EventLoop { MultiThreadedEventLoopGroup.singleton.any() }
    var dialect: any SQLDialect { SQLiteDialect() }
    var queryLogLevel: Logger.Level? { nil }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        for row in try run(query) { onRow(row) }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        do {
            for row in try run(query) { onRow(row) }
            return eventLoop.makeSucceededVoidFuture()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
    }

    func changedRows(_ write: any SQLExpression) async throws -> Int {
        let (sql, binds) = try serialized(write)
        return try engine.changes(sql, binds, unit: unit)
    }

    private func run(_ query: any SQLExpression) throws -> [SQLiteResultRow] {
        let (sql, binds) = try serialized(query)
        return try engine.execute(sql, binds, unit: unit)
    }

    /// The statement's text and values, as SQLKit's `serialize(_:)` makes them but with room for a typical
    /// statement reserved at once: SQLKit appends to an empty text and an empty list of values, which grew one
    /// doubling at a time (about 40 allocations of a login's statements).
    private func serialized(_ query: any SQLExpression) throws -> (String, [SQLiteData]) {
        var serializer = SQLSerializer(database: self)
        serializer.sql.reserveCapacity(512)
        serializer.binds.reserveCapacity(16)
        query.serialize(to: &serializer)
        return (serializer.sql, try serializer.binds.map(Self.data))
    }

    /// A bound value as SQLite's: the types the stores bind (a text, a 64-bit integer, or one of them optional and
    /// present) and an absent optional of any type (NULL) by a cast, instead of the encoder's protocol lookup for every
    /// value (profiled: most of what turning a login's values into SQLite's cost; and the encoder allocates for a
    /// NULL, about ten times a login); anything else through the encoder, which gives these the same values.
    static func data(_ bind: any Encodable & Sendable) throws -> SQLiteData {
        if let text = bind as? String { return .text(text) }
        if let number = bind as? Int64 { return .integer(Int(number)) }
        if let number = bind as? Int { return .integer(number) }
        // A nil casts to every optional type, and only a nil gives `.some(.none)` here.
        if case .some(.none) = bind as? String? { return .null }
        return try encoder.encode(bind)
    }
}
