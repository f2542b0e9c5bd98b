import Dispatch
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// The PostgreSQL connections one instance runs its statements on: `size` connections of PostgresNIO's pool, each
/// held by this set for as long as it lives and lent to one run at a time (``acquire()``, ``release(_:)``).
///
/// Why not a lease from the pool for each run (or each request, as before): every lease and hand-back goes through
/// the pool's state machine, and every hand-back schedules the connection's keep-alive and idle timers, each a task
/// sleeping on Dispatch, which the next lease cancels again. On two instances under `mauth load` those timers alone
/// were about a tenth of the server's CPU. Here lending a connection is a lock and an array, and one keep-alive task
/// serves the whole set.
///
/// The rules:
/// - **One run at a time per connection.** A run keeps its connection for its whole body, so the statements of a
///   transaction share one session, and nobody else uses it meanwhile.
/// - **Where a run is.** A run takes an idle connection on its own event loop if there is one (its statements then
///   need no thread hop), else any idle one, else it waits, first come first served. Cancelling a waiting run ends its
///   wait with `CancellationError`.
/// - **Broken connections are replaced.** A connection that closes (PostgreSQL restarted, the network cut) leaves
///   the set when it is idle, or when the run using it ends (that run's statement has failed already); its holder
///   then leases a replacement from the pool, which reconnects with its own backoff.
/// - **An outage fails the waiting runs.** While no connection is alive, a failed attempt to get one (the pool fails
///   a lease once it has tried to connect for a minute) fails every waiting run with the pool's error; later runs
///   wait for the next attempt. That is how a lease from the pool behaved before.
/// - **Idle connections are kept alive.** The pool's own keep-alive never sees a held connection, so a connection
///   idle for ``keepAliveInterval`` runs `SELECT 1`; one that does not answer within ``keepAliveTimeout`` is closed
///   and replaced. This is what finds a connection a firewall or proxy dropped without a word.
/// - **Every connection plans a prepared statement once.** Before a connection joins the set it runs
///   ``sessionSetup``, see there.
final class PostgresConnections: Sendable {
    private let client: PostgresClient
    private let size: Int
    private let logger: Logger
    private let describe: @Sendable (any Error) -> String
    let keepAliveInterval: Duration
    let keepAliveTimeout: Duration
    /// The keep-alive's statement; `SELECT 1` but in tests.
    private let keepAliveQuery: String
    /// What a newly leased connection runs before it joins the set; ``sessionSetup`` but in tests.
    private let setupQuery: String
    private let state = NIOLockedValueBox(State())
    private let holders = NIOLockedValueBox<Task<Void, Never>?>(nil)

    /// Why a run got no connection.
    package enum Failure: Error, Equatable { case closed }

    private struct Member {
        let connection: PostgresConnection
        var inUse: Bool
        var closed = false
        var lastUsed: ContinuousClock.Instant
        /// Resumed once, to give the connection back to the pool (ends its holder's `withConnection`).
        let handBack: CheckedContinuation<Void, Never>
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<PostgresConnection, any Error>
    }

    private struct State {
        var members: [PostgresConnection.ID: Member] = [:]
        /// Idle members, the one released last at the end.
        var idle: [PostgresConnection.ID] = []
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
        var closing = false
        /// A failed lease was logged as a warning since a connection last joined (one warning per outage, not one per
        /// holder and attempt).
        var outageWarned = false

        /// An idle connection, on the caller's event loop if one is, marked in use.
        mutating func takeIdle() -> PostgresConnection? {
            guard !idle.isEmpty else { return nil }
            let position = idle.lastIndex { members[$0]?.connection.eventLoop.inEventLoop == true } ?? idle.count - 1
            let id = idle.remove(at: position)
            members[id]?.inUse = true
            return members[id]?.connection
        }

        mutating func removeWaiter(_ id: UInt64) -> Waiter? {
            guard let index = waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return waiters.remove(at: index)
        }
    }

    /// `describe`: a failure in the operator's words (``StoreDatabase/reason(_:target:)``).
    init(
        client: PostgresClient, size: Int, logger: Logger, describe: @escaping @Sendable (any Error) -> String = { String(describing: $0) },
        keepAliveInterval: Duration = .seconds(30), keepAliveTimeout: Duration = .seconds(10), keepAliveQuery: String = "SELECT 1",
        setupQuery: String = PostgresConnections.sessionSetup
    ) {
        precondition(size > 0, "a set of PostgreSQL connections holds at least one")
        self.client = client
        self.size = size
        self.logger = logger
        self.describe = describe
        self.keepAliveInterval = keepAliveInterval
        self.keepAliveTimeout = keepAliveTimeout
        self.keepAliveQuery = keepAliveQuery
        self.setupQuery = setupQuery
    }

    /// The session setting every connection of the set runs with: PostgreSQL plans each prepared statement once and
    /// reuses that plan (a generic plan), instead of planning it again for each execution's values.
    ///
    /// Why: by default PostgreSQL plans a prepared statement for its values the first five times and then keeps a
    /// generic plan only if its estimated cost is close; our data-modifying `WITH` statements never qualified, so
    /// every login planned its three statements anew (`perf` under two instances: the planner about 15 % of
    /// PostgreSQL's CPU). Every statement the stores prepare finds rows by key or by an indexed column, where the
    /// values do not change the best plan; the expiry sweeps take the oldest rows by `ORDER BY expires_at LIMIT n`,
    /// which a generic plan reads from the expiry index too (`EXPLAIN EXECUTE` on 28,000 rows). Measured with two
    /// instances on one PostgreSQL: PostgreSQL's own CPU per login 0.25 to 0.29 ms against 0.30 to 0.37 ms (FIDOServer
    /// documentation, "PostgreSQL"). A server that refuses the setting (PostgreSQL before 12) keeps its
    /// per-execution plans: slower, never wrong.
    static let sessionSetup = "SET plan_cache_mode = force_generic_plan"

    /// Starts the holders (one per connection, each leasing its connection from the pool at once) and the keep-alive.
    /// The pool's `run()` must be running.
    func start() {
        let task = Task {
            await withDiscardingTaskGroup { group in
                for _ in 0..<size { group.addTask { await self.hold() } }
                group.addTask { await self.keepAlive() }
            }
        }
        holders.withLockedValue { $0 = task }
    }

    /// Gives every connection back to the pool and fails the runs still waiting; returns once the holders have
    /// stopped. A connection in use goes back when its run ends.
    func close() async {
        let (handBacks, waiters) = state.withLockedValue { state -> ([CheckedContinuation<Void, Never>], [Waiter]) in
            state.closing = true
            let handBacks = state.idle.compactMap { state.members.removeValue(forKey: $0)?.handBack }
            state.idle = []
            defer { state.waiters = [] }
            return (handBacks, state.waiters)
        }
        for handBack in handBacks { handBack.resume() }
        for waiter in waiters { waiter.continuation.resume(throwing: Failure.closed) }
        let task = holders.withLockedValue { $0 }
        task?.cancel()
        await task?.value
    }

    /// A connection for one run, which must hand it back with ``release(_:)`` exactly once.
    func acquire() async throws -> PostgresConnection {
        let (connection, id): (PostgresConnection?, UInt64) = try state.withLockedValue { state in
            if state.closing { throw Failure.closed }
            if let connection = state.takeIdle() { return (connection, 0) }
            state.nextWaiter += 1
            return (nil, state.nextWaiter)
        }
        if let connection { return connection }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PostgresConnection, any Error>) in
                enum Next { case wait, take(PostgresConnection), fail(any Error) }
                let next: Next = state.withLockedValue { state in
                    if state.closing { return .fail(Failure.closed) }
                    if let connection = state.takeIdle() { return .take(connection) }
                    // Cancelled before the wait was registered: the handler below has run already and found nothing.
                    if Task.isCancelled { return .fail(CancellationError()) }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch next {
                case .wait: break
                case .take(let connection): continuation.resume(returning: connection)
                case .fail(let error): continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            state.withLockedValue { $0.removeWaiter(id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The run that ``acquire()`` answered is done with `connection`: it goes to the first waiting run, or becomes
    /// idle, or back to the pool if it has closed (or the set is closing).
    func release(_ connection: PostgresConnection) {
        enum Next { case none, give(Waiter), handBack(CheckedContinuation<Void, Never>) }
        let now = ContinuousClock.now
        let next: Next = state.withLockedValue { state in
            guard var member = state.members[connection.id] else { return .none }
            if member.closed || state.closing || connection.isClosed {
                state.members[connection.id] = nil
                return .handBack(member.handBack)
            }
            member.lastUsed = now
            if !state.waiters.isEmpty {
                state.members[connection.id] = member
                return .give(state.waiters.removeFirst())
            }
            member.inUse = false
            state.members[connection.id] = member
            state.idle.append(connection.id)
            return .none
        }
        switch next {
        case .none: break
        case .give(let waiter): waiter.continuation.resume(returning: connection)
        case .handBack(let handBack): handBack.resume()
        }
    }

    /// Hands back a connection whose run saw PostgreSQL end the session (``endsSession(_:)``): it is closed first, so it
    /// is never lent again. Released as usual, it could be lent before its close is seen, and a statement sent on a
    /// session the server has ended was seen never to answer (about one run in 25 of the test that ends a session),
    /// so that run, and its request, waited for ever.
    func discard(_ connection: PostgresConnection) async {
        try? await connection.close()
        release(connection)
    }

    /// Whether `error` says PostgreSQL ended the session (a FATAL or PANIC error, e.g. `pg_terminate_backend` or a
    /// shutdown) or the connection is closed, rather than that one statement failed.
    static func endsSession(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown: return true
        case .server: return ["FATAL", "PANIC"].contains(error.serverInfo?[.severity] ?? "")
        default: return false
        }
    }

    /// Connections alive in the set and how many of them are idle (tests).
    var counts: (alive: Int, idle: Int, waiting: Int) { state.withLockedValue { ($0.members.count, $0.idle.count, $0.waiters.count) } }

    /// One holder: leases a connection from the pool, lends it through the set until it closes (or the set closes),
    /// gives it back, and leases the next; after a failed lease it waits 0.1 s, doubling each time up to 1.6 s.
    private func hold() async {
        var failures = 0
        while !Task.isCancelled, !state.withLockedValue({ $0.closing }) {
            do {
                try await client.withConnection { connection in
                    await self.setUp(connection)
                    await withCheckedContinuation { (handBack: CheckedContinuation<Void, Never>) in
                        guard self.admit(connection, handBack: handBack) else { return handBack.resume() }
                        connection.closeFuture.whenComplete { _ in self.closed(connection.id) }
                    }
                }
                failures = 0
            } catch {
                failures += 1
                let (waiters, warn, closing) = state.withLockedValue { state -> ([Waiter], Bool, Bool) in
                    let warn = !state.outageWarned
                    state.outageWarned = true
                    guard state.members.isEmpty else { return ([], warn, state.closing) }
                    defer { state.waiters = [] }
                    return (state.waiters, warn, state.closing)
                }
                if !closing {
                    logger.log(
                        level: warn ? .warning : .debug, "no PostgreSQL connection: \(describe(error))",
                        metadata: ["waiting runs failed": .stringConvertible(waiters.count)])
                }
                for waiter in waiters { waiter.continuation.resume(throwing: error) }
                do { try await Task.sleep(for: .milliseconds(100 * (1 << min(failures - 1, 4)))) } catch { return }
            }
        }
    }

    /// Runs ``setupQuery`` on a newly leased connection. A failure only costs speed (the statement's settings are
    /// about planning), so the connection joins the set either way; a connection that broke meanwhile, or that did not
    /// answer (``answer(_:on:)`` closes it), leaves the set as soon as its close is seen.
    private func setUp(_ connection: PostgresConnection) async {
        switch await answer(setupQuery, on: connection) {
        case .answered, .closed: break
        case .failed(let error):
            logger.info("a PostgreSQL connection runs without its session setting: \(describe(error))", metadata: ["setting": .string(setupQuery)])
        case .timedOut:
            logger.warning("a new PostgreSQL connection did not answer its session setting; closing it")
        }
    }

    /// How a statement the set runs on its own (the session setting, the keep-alive) ended.
    package enum Answer: Sendable {
        case answered
        case failed(any Error)
        /// The connection closed before the statement answered.
        case closed
        /// No answer within ``keepAliveTimeout``: the connection is being closed.
        case timedOut
    }

    /// Runs `query` on `connection` (its rows discarded) and waits until it answers or fails, the connection closes,
    /// or ``keepAliveTimeout`` passes; then the connection is closed, and this returns without waiting for the close.
    ///
    /// Why not simply await the statement: the pool can hand over a connection just as it dies (PostgreSQL ended the
    /// session), and a statement sent on it then was seen never to answer (about one in 25 runs of the test that ends
    /// a session), which left the waiting holder, and closing the set, waiting for ever.
    private func answer(_ query: String, on connection: PostgresConnection) async -> Answer {
        let finished = NIOLockedValueBox(false)
        let (logger, timeout) = (logger, keepAliveTimeout)
        var timer: Task<Void, Never>?
        let answer = await withCheckedContinuation { (done: CheckedContinuation<Answer, Never>) in
            // Whoever claims first ends the wait; claiming before closing means the timer never closes a connection
            // whose answer came first (it may already be lent to a run).
            let claim: @Sendable () -> Bool = {
                finished.withLockedValue { state in
                    defer { state = true }
                    return !state
                }
            }
            connection.closeFuture.whenComplete { _ in if claim() { done.resume(returning: .closed) } }
            Task {
                let answer: Answer
                do {
                    for try await _ in try await connection.query(PostgresQuery(unsafeSQL: query), logger: logger) {}
                    answer = .answered
                } catch {
                    answer = .failed(error)
                }
                if claim() { done.resume(returning: answer) }
            }
            timer = Task {
                guard (try? await Task.sleep(for: timeout)) != nil, claim() else { return }
                done.resume(returning: .timedOut)
                try? await connection.close()
            }
        }
        timer?.cancel()
        return answer
    }

    /// A newly leased connection joins the set: to the first waiting run, or idle. False when the set is closing.
    private func admit(_ connection: PostgresConnection, handBack: CheckedContinuation<Void, Never>) -> Bool {
        let (admitted, waiter): (Bool, Waiter?) = state.withLockedValue { state in
            guard !state.closing else { return (false, nil) }
            let waiter = state.waiters.isEmpty ? nil : state.waiters.removeFirst()
            state.outageWarned = false
            state.members[connection.id] = Member(connection: connection, inUse: waiter != nil, lastUsed: .now, handBack: handBack)
            if waiter == nil { state.idle.append(connection.id) }
            return (true, waiter)
        }
        waiter?.continuation.resume(returning: connection)
        return admitted
    }

    /// `connection` closed: it leaves the set now if idle, else when its run releases it.
    private func closed(_ id: PostgresConnection.ID) {
        let handBack = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            guard var member = state.members[id] else { return nil }
            guard !member.inUse else {
                member.closed = true
                state.members[id] = member
                return nil
            }
            state.idle.removeAll { $0 == id }
            state.members[id] = nil
            return member.handBack
        }
        handBack?.resume()
    }

    /// Every so often, runs `SELECT 1` on each connection idle for ``keepAliveInterval``; closes one that fails or
    /// does not answer within ``keepAliveTimeout`` (the set then replaces it).
    private func keepAlive() async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: keepAliveInterval / 2) } catch { return }
            let cutoff = ContinuousClock.now - keepAliveInterval
            let stale = state.withLockedValue { state -> [PostgresConnection] in
                let ids = state.idle.filter { (state.members[$0]?.lastUsed ?? cutoff) < cutoff }
                state.idle.removeAll { ids.contains($0) }
                return ids.compactMap { id in
                    state.members[id]?.inUse = true
                    return state.members[id]?.connection
                }
            }
            for connection in stale {
                switch await answer(keepAliveQuery, on: connection) {
                case .answered: break
                case .timedOut:
                    logger.warning("a PostgreSQL connection did not answer its keep-alive; closing it")
                    try? await connection.close()
                case .failed(let error):
                    logger.info("a PostgreSQL connection failed its keep-alive: \(describe(error))")
                    try? await connection.close()
                case .closed:
                    logger.info("a PostgreSQL connection closed during its keep-alive")
                }
                release(connection)
            }
        }
    }
}
