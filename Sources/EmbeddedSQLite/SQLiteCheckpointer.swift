import Foundation
import Logging
import NIOConcurrencyHelpers
import VaporCSQLite

/// Copies SQLite's write-ahead log back into the database file on a thread of its own, through a second connection,
/// so that the copying and its two `fsync`s no longer happen while every request waits for the engine.
///
/// Why: with the log's pages copied only inside the commit that crosses the `wal_autocheckpoint` threshold (SQLite's
/// automatic checkpoint), that one commit held the engine, and so every login in flight, for about 25 ms: an 18 ms
/// `fsync` of the 40 MiB log, then the database file's. Under authentication load that happened every 0.7 s
/// (`perf trace`, measured), so it was the p99 of every endpoint and left a core idle meanwhile.
///
/// How: every `interval` this thread runs a PASSIVE checkpoint, which copies every log page already committed and
/// never waits for, nor blocks, the engine's writes (SQLite's WAL mode is built for a checkpointer beside a writer).
/// The automatic checkpoint stays on the engine's own connection, because only a checkpoint that has copied
/// *everything* lets the next write start the log over, and under continuous writes this thread never quite catches
/// up (a PASSIVE checkpoint stops at the last page committed when it began). When the log reaches the threshold, the
/// engine's checkpoint now finds all but the last interval's pages copied and synced: what it still copies and syncs
/// inline is about a tenth of a second of writes instead of the whole log.
///
/// Durability is SQLite's own: a checkpoint syncs the log before it overwrites the file and the file after, and a
/// process killed in the middle of one loses nothing, since the log stays authoritative until it restarts.
public final class SQLiteCheckpointer: @unchecked Sendable {
    // @unchecked: `handle` is used only by the checkpointer's own thread, and closed by it; `stopping` and `stopped`
    // only under `wake`'s lock; `state` is locked.
    private let handle: OpaquePointer
    private let interval: TimeInterval
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    private let wake = NSCondition()
    private var stopping = false
    private var stopped = false

    private struct State {
        var passes = 0
        var logPages: Int32 = 0
        var checkpointedPages: Int32 = 0
        var lastFailure: Int32?
    }

    /// How often the thread checkpoints: about a tenth of a second of writes is what the engine's own checkpoint is
    /// left with.
    static let defaultInterval: TimeInterval = 0.1

    /// Opens a second connection to the WAL-mode database at `path` and starts the thread.
    init(path: String, interval: TimeInterval = SQLiteCheckpointer.defaultInterval, logger: Logger) throws {
        let handle = try SQLiteEngine.connect(path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, context: ", checkpointer")
        // A new connection learns that the file is in WAL mode only when it first reads it; until then a checkpoint
        // through it does nothing at all. The same sync level as the engine's connection, and the same patience
        // with another process's lock while it first reads (a PASSIVE checkpoint itself never waits).
        for pragma in ["PRAGMA busy_timeout = 5000", "PRAGMA journal_mode", "PRAGMA synchronous = NORMAL"] {
            let status = sqlite_nio_sqlite3_exec(handle, pragma, nil, nil, nil)
            guard status == SQLITE_OK else {
                let message = SQLiteEngine.message(handle)
                sqlite_nio_sqlite3_close(handle)
                throw SQLiteEngineError(code: status, message: "\(message) (\(path), checkpointer)")
            }
        }
        self.handle = handle
        self.interval = interval
        self.logger = logger
        let thread = Thread { [self] in
            // Linux takes at most 15 characters (what `top -H` and `perf` show).
            Thread.current.name = "mauth-checkpt"
            self.loop()
        }
        thread.start()
    }

    /// What the thread has done so far: its passes, and after the last pass that ran, the pages in the log and how
    /// many of them are copied into the file (equal once it has caught up); for tests.
    public struct Progress: Equatable, Sendable {
        public var passes: Int
        public var logPages: Int32
        public var checkpointedPages: Int32
        public var lastFailure: Int32?
    }

    var progress: Progress {
        state.withLockedValue {
            Progress(passes: $0.passes, logPages: $0.logPages, checkpointedPages: $0.checkpointedPages, lastFailure: $0.lastFailure)
        }
    }

    /// Stops the thread (after the pass under way, if any) and closes its connection; returns once both are done.
    func stop() {
        wake.lock()
        stopping = true
        wake.broadcast()
        while !stopped { wake.wait() }
        wake.unlock()
    }

    private func loop() {
        while true {
            wake.lock()
            if !stopping { _ = wake.wait(until: Date(timeIntervalSinceNow: interval)) }
            let stop = stopping
            wake.unlock()
            if stop { break }
            checkpoint()
        }
        sqlite_nio_sqlite3_close(handle)
        wake.lock()
        stopped = true
        wake.broadcast()
        wake.unlock()
    }

    /// One PASSIVE checkpoint. BUSY only means another checkpoint (the engine's) is running: the next pass goes on.
    private func checkpoint() {
        var logPages: Int32 = 0
        var copied: Int32 = 0
        let status = sqlite_nio_sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logPages, &copied)
        let failed = status != SQLITE_OK && status & 0xff != SQLITE_BUSY
        let first = state.withLockedValue { state -> Bool in
            state.passes += 1
            if status == SQLITE_OK { (state.logPages, state.checkpointedPages) = (logPages, copied) }
            guard failed else {
                state.lastFailure = nil
                return false
            }
            defer { state.lastFailure = status }
            return state.lastFailure != status
        }
        // A failing checkpoint loses nothing (the log keeps every commit, and the engine's own checkpoint still runs);
        // it is logged once per kind of failure, not ten times a second.
        if failed, first {
            logger.warning(
                "background checkpoint failed",
                metadata: ["code": .stringConvertible(status), "error": .string(SQLiteEngine.message(handle))])
        }
    }
}
