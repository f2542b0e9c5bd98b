import FIDOServerTesting
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresNIO
import SQLKit
import TestSupport
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// On PostgreSQL every run takes one connection of the instance's set (PostgresConnections), held from the pool for
/// as long as it lives. Checked against a real server: the backend process id tells connections apart.
final class PostgresConnectionsTests: XCTestCase {
    private var databases: [StoreDatabase] = []
    private var sets: [(PostgresConnections, Task<Void, Never>)] = []

    private func open(poolSize: Int) async throws -> StoreDatabase {
        let database = try await StoreDatabase.open(.postgres(url: try PostgresStoreTests.postgresURL(), poolSize: poolSize))
        databases.append(database)
        return database
    }

    /// A set of its own over a pool of its own, for the rules a StoreDatabase does not expose (keep-alive).
    private func connections(
        size: Int, keepAliveInterval: Duration, keepAliveTimeout: Duration = .seconds(10),
        keepAliveQuery: String = "SELECT 1", setupQuery: String = PostgresConnections.sessionSetup
    ) throws -> PostgresConnections {
        let client = try StoreDatabase.postgresClient(
            url: try PostgresStoreTests.postgresURL(), poolSize: size, logger: Logger(label: "test.postgres"))
        let run = Task { await client.run() }
        let connections = PostgresConnections(
            client: client, size: size, logger: Logger(label: "test.postgres"),
            keepAliveInterval: keepAliveInterval, keepAliveTimeout: keepAliveTimeout,
            keepAliveQuery: keepAliveQuery, setupQuery: setupQuery)
        connections.start()
        sets.append((connections, run))
        return connections
    }

    override func tearDown() async throws {
        for database in databases { try await database.close() }
        for (connections, run) in sets {
            await connections.close()
            run.cancel()
            await run.value
        }
    }

    private static func backend(_ database: StoreDatabase, sleeping seconds: Double = 0) async throws -> Int64 {
        try await database.run { sql in
            if seconds > 0 { try await sql.raw("SELECT pg_sleep(\(literal: seconds))").run() }
            return try await sql.raw("SELECT pg_backend_pid()::BIGINT AS pid").first()!.decode(column: "pid", as: Int64.self)
        }
    }

    private static func backend(_ connections: PostgresConnections) async throws -> Int32 {
        let connection = try await connections.acquire()
        defer { connections.release(connection) }
        for try await pid in try await connection.query("SELECT pg_backend_pid()", logger: connection.logger).decode(Int32.self) { return pid }
        throw TimedOut()
    }

    /// Runs on `database` and holds the connection until `release` is set, after setting `holding`: what orders a
    /// second run after the first has its connection, without guessing how long that takes.
    private static func hold(_ database: StoreDatabase, holding: Flag, release: Flag) async throws -> Int64 {
        try await database.run { sql in
            holding.set()
            _ = try await eventually(within: .seconds(10)) { release.isSet }
            return try await sql.raw("SELECT pg_backend_pid()::BIGINT AS pid").first()!.decode(column: "pid", as: Int64.self)
        }
    }

    /// Runs waiting for a connection of `database`'s set.
    private static func waiting(_ database: StoreDatabase) -> Int { database.postgresConnections?.counts.waiting ?? 0 }

    /// Fails instead of hanging when `body` waits for a connection that never comes back.
    private func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            guard let first = try await group.next(), let value = first else {
                group.cancelAll()
                throw TimedOut()
            }
            group.cancelAll()
            return value
        }
    }
    struct TimedOut: Error {}

    final class Flag: Sendable {
        private let value = NIOLockedValueBox(false)
        func set() { value.withLockedValue { $0 = true } }
        var isSet: Bool { value.withLockedValue { $0 } }
    }

    func testARunKeepsItsConnectionForItsWholeBodyAndNobodyElseUsesIt() async throws {
        let database = try await open(poolSize: 1)
        let outsider = Flag()
        let (backends, outsiderDoneDuringRun) = try await database.run { sql -> ([Int64], Bool) in
            func pid() async throws -> Int64 {
                try await sql.raw("SELECT pg_backend_pid()::BIGINT AS pid").first()!.decode(column: "pid", as: Int64.self)
            }
            let first = try await pid()
            // Another run needs the set's only connection: it must wait until this run is over.
            Task.detached {
                _ = try await Self.backend(database)
                outsider.set()
            }
            let queued = try await eventually { Self.waiting(database) == 1 }
            XCTAssertTrue(queued, "the second run did not ask for the connection")
            return ([first, try await pid(), try await pid()], outsider.isSet)
        }
        XCTAssertEqual(Set(backends).count, 1, "\(backends)")
        XCTAssertFalse(outsiderDoneDuringRun, "the run kept its connection between its statements")
        let served = try await eventually(within: .seconds(5)) { outsider.isSet }
        XCTAssertTrue(served, "the waiting run got the connection when the first one ended")
    }

    func testTwoRunsAtOnceNeverShareAConnection() async throws {
        let database = try await open(poolSize: 2)
        let holding = Flag()
        let release = Flag()
        async let first = Self.hold(database, holding: holding, release: release)
        let held = try await eventually { holding.isSet }
        XCTAssertTrue(held)
        let second = try await Self.backend(database)
        release.set()
        let firstBackend = try await first
        XCTAssertNotEqual(firstBackend, second)
    }

    func testConsecutiveRunsReuseTheSameHeldConnections() async throws {
        let database = try await open(poolSize: 2)
        var seen = Set<Int64>()
        for _ in 0..<20 { seen.insert(try await Self.backend(database)) }
        XCTAssertLessThanOrEqual(seen.count, 2, "the set never opens more connections than its size: \(seen)")
    }

    func testARunCancelledWhileWaitingStopsWaiting() async throws {
        let database = try await open(poolSize: 1)
        let holding = Flag()
        let release = Flag()
        let holder = Task.detached { @Sendable () async throws -> Int64 in try await Self.hold(database, holding: holding, release: release) }
        let held = try await eventually { holding.isSet }
        XCTAssertTrue(held)
        let waiting = Task { @Sendable () async throws -> Int64 in try await Self.backend(database) }
        let queued = try await eventually { Self.waiting(database) == 1 }
        XCTAssertTrue(queued)
        waiting.cancel()
        let outcome = try await within(1.0) { await waiting.result }
        XCTAssertThrowsError(try outcome.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        release.set()
        _ = try await holder.value
        _ = try await within(5) { try await Self.backend(database) }
    }

    func testAFailingStatementFailsOnlyItselfAndTheConnectionStaysUsable() async throws {
        let database = try await open(poolSize: 1)
        let before = try await Self.backend(database)
        do {
            try await database.run { sql in try await sql.raw("SELECT * FROM no_such_table_here").run() }
            XCTFail("the statement should have failed")
        } catch {}
        let after = try await within(5) { try await Self.backend(database) }
        XCTAssertEqual(before, after, "a statement's error does not cost the connection")
    }

    func testAConnectionTheServerEndsIsReplaced() async throws {
        let database = try await open(poolSize: 1)
        let before = try await Self.backend(database)
        do {
            try await database.run { sql in try await sql.raw("SELECT pg_terminate_backend(pg_backend_pid())").run() }
        } catch {}  // the statement dies with its session
        var after: Int64?
        _ = try await eventually(every: .milliseconds(100)) {
            after = try? await Self.backend(database)
            return after != nil
        }
        XCTAssertNotEqual(before, try XCTUnwrap(after), "a new session replaced the ended one")
    }

    func testCloseFailsTheWaitingRunsAndReturnsOnceTheRunningOneEnds() async throws {
        let connections = try connections(size: 1, keepAliveInterval: .seconds(30))
        let busy = try await connections.acquire()
        let waiting = Task { try await connections.acquire() }
        let queued = try await eventually { connections.counts.waiting == 1 }
        XCTAssertTrue(queued)
        let closed = Flag()
        let closing = Task {
            await connections.close()
            closed.set()
        }
        let outcome = try await within(2) { await waiting.result }
        XCTAssertThrowsError(try outcome.get()) { XCTAssertEqual($0 as? PostgresConnections.Failure, .closed) }
        let closedEarly = try await eventually(within: .milliseconds(300)) { closed.isSet }
        XCTAssertFalse(closedEarly, "the connection in use goes back only when its run ends")
        connections.release(busy)
        _ = try await within(5) { await closing.value }
        XCTAssertEqual(connections.counts.alive, 0, "every connection went back to the pool")
        do {
            _ = try await connections.acquire()
            XCTFail("a closed set lends nothing")
        } catch PostgresConnections.Failure.closed {}
    }

    func testEventLoopsInTurnGiveTheNextLoopEvenToACallerOnALoop() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        defer { try? group.syncShutdownGracefully() }
        let caller = group.next()
        // The plain group answers a caller on one of its loops with that very loop: why every connection of an
        // instance ended up on one loop (PostgresNIO opens them with any(), from a task running on a loop).
        XCTAssertTrue(try caller.submit { group.any() === caller }.wait())
        let inTurn = EventLoopsInTurn(group)
        let given = try caller.submit { (0..<3).map { _ in ObjectIdentifier(inTurn.any()) } }.wait()
        XCTAssertEqual(Set(given).count, 3, "three calls on one loop give the group's three loops")
    }

    func testTheSetsConnectionsAreOpenedOnDifferentEventLoops() async throws {
        var loops = 0
        MultiThreadedEventLoopGroup.singleton.makeIterator().forEach { _ in loops += 1 }
        guard loops >= 2 else { throw XCTSkip("one event loop: nothing to spread over") }
        let connections = try connections(size: 4, keepAliveInterval: .seconds(30))
        let all = try await within(10) { () -> [PostgresConnection] in
            var taken: [PostgresConnection] = []
            for _ in 0..<4 { taken.append(try await connections.acquire()) }
            return taken
        }
        defer { all.forEach(connections.release) }
        XCTAssertEqual(Set(all.map { ObjectIdentifier($0.eventLoop) }).count, min(4, loops))
    }

    func testAnIdleConnectionIsKeptAliveWithSelect1() async throws {
        let connections = try connections(size: 1, keepAliveInterval: .milliseconds(300))
        let pid = try await Self.backend(connections)
        let observer = try await open(poolSize: 1)
        var query: String?
        _ = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
            let row = try await observer.run { sql in
                try await sql.raw("SELECT query FROM pg_stat_activity WHERE pid::BIGINT = \(bind: Int64(pid))").first()
            }
            query = try row?.decode(column: "query", as: String.self)
            return query != nil && query != "SELECT pg_backend_pid()"
        }
        XCTAssertEqual(query, "SELECT 1")
        let later = try await Self.backend(connections)
        XCTAssertEqual(later, pid, "a connection that answered its keep-alive stays")
    }

    func testAConnectionThatDoesNotAnswerItsKeepAliveIsClosedAndReplaced() async throws {
        // The keep-alive's statement stands in for a connection that went silent: it answers only after the timeout.
        let connections = try connections(
            size: 1, keepAliveInterval: .milliseconds(300), keepAliveTimeout: .milliseconds(300),
            keepAliveQuery: "SELECT pg_sleep(5)")
        let pid = try await Self.backend(connections)
        // Left idle (a run would count as use) until the keep-alive has started on it: its session is no longer idle.
        // A run asked then waits for the keep-alive, which gives up on the silent connection and replaces it.
        let observer = try await open(poolSize: 1)
        let started = try await eventually(within: .seconds(5), every: .milliseconds(100)) {
            try await observer.run { sql in
                try await sql.raw("SELECT count(*)::BIGINT AS n FROM pg_stat_activity WHERE pid::BIGINT = \(bind: Int64(pid)) AND state = 'idle'")
                    .first()!.decode(column: "n", as: Int64.self) == 0
            }
        }
        XCTAssertTrue(started, "the keep-alive never started")
        let replaced = try await within(5) { try await Self.backend(connections) }
        XCTAssertNotEqual(replaced, pid)
    }
    func testEveryConnectionOfTheSetPlansPreparedStatementsGenerically() async throws {
        let database = try await open(poolSize: 2)
        /// The connection's backend and plan mode; with `hold`, after `hold.holding` is set and until `hold.release` is.
        @Sendable func setting(hold: (holding: Flag, release: Flag)? = nil) async throws -> (Int64, String) {
            try await database.run { sql in
                if let hold {
                    hold.holding.set()
                    _ = try await eventually { hold.release.isSet }
                }
                let pid = try await sql.raw("SELECT pg_backend_pid()::BIGINT AS pid").first()!.decode(column: "pid", as: Int64.self)
                let mode = try await sql.raw("SELECT current_setting('plan_cache_mode') AS mode").first()!.decode(column: "mode", as: String.self)
                return (pid, mode)
            }
        }
        // Two runs at once, so that two connections answer: the first holds its connection until the second has one.
        let holding = Flag()
        let release = Flag()
        async let held = setting(hold: (holding, release))
        let started = try await eventually { holding.isSet }
        XCTAssertTrue(started)
        let second = try await setting()
        release.set()
        let first = try await held
        XCTAssertNotEqual(first.0, second.0, "two connections were asked")
        XCTAssertEqual([first.1, second.1], ["force_generic_plan", "force_generic_plan"])
    }

    func testAStoreStatementRunManyTimesIsNeverPlannedForItsValues() async throws {
        let database = try await open(poolSize: 1)
        let counts = try await database.run { sql -> (generic: Int64, custom: Int64)? in
            // pg_prepared_statements counts plans from PostgreSQL 14 on.
            let version = try await sql.raw("SELECT current_setting('server_version_num')::BIGINT AS v").first()!.decode(column: "v", as: Int64.self)
            guard version >= 140000 else { return nil }
            // A statement with values is prepared by the statement cache; by default PostgreSQL plans the first five
            // executions for their values.
            for n in 0..<8 { _ = try await sql.raw("SELECT \(bind: "value \(n)") AS echoed").first() }
            let row = try await sql.raw("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%AS echoed%'").first()
            guard let row else { return (0, -1) }
            return (try row.decode(column: "generic_plans", as: Int64.self), try row.decode(column: "custom_plans", as: Int64.self))
        }
        guard let counts else { throw XCTSkip("PostgreSQL before 14 does not count plans") }
        XCTAssertEqual(counts.custom, 0, "no execution was planned for its values")
        XCTAssertGreaterThanOrEqual(counts.generic, 1)
    }

    func testAConnectionThatRefusesTheSessionSettingStillServes() async throws {
        let connections = try connections(size: 1, keepAliveInterval: .seconds(30), setupQuery: "SET no_such_setting_here = 1")
        _ = try await within(5) { try await Self.backend(connections) }
    }

    func testClosingTheSetDoesNotWaitForASessionSettingThatDoesNotAnswer() async throws {
        // The setting's statement stands in for a connection that went silent: it answers only after 30 s.
        let connections = try connections(
            size: 1, keepAliveInterval: .seconds(30), keepAliveTimeout: .milliseconds(300),
            setupQuery: "SELECT pg_sleep(30)")
        let observer = try await open(poolSize: 1)
        let hanging = try await eventually(within: .seconds(5)) {
            try await observer.run { sql in
                try await sql.raw("SELECT count(*)::BIGINT AS n FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")
                    .first()!.decode(column: "n", as: Int64.self) > 0
            }
        }
        XCTAssertTrue(hanging, "the session setting never started")
        _ = try await within(5) {
            await connections.close()
            return true
        }
    }
}
