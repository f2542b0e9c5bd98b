import Foundation
import NIOConcurrencyHelpers
import SQLKit
import XCTest
@testable import UAFServer

/// On PostgreSQL a request's unit of work is one pooled connection, leased at its first statement and handed back
/// when it ends (PostgresLease). Checked against a real server: the backend process id tells connections apart.
final class PostgresLeaseTests: XCTestCase {
    private var database: StoreDatabase?

    private func open(poolSize: Int) async throws -> StoreDatabase {
        let database = try await StoreDatabase.open(.postgres(url: try PostgresStoreTests.postgresURL(), poolSize: poolSize))
        self.database = database
        return database
    }

    override func tearDown() async throws {
        try await database?.close()
    }

    private static func backend(_ database: StoreDatabase, sleeping seconds: Double = 0) async throws -> Int64 {
        try await database.run { sql in
            if seconds > 0 { try await sql.raw("SELECT pg_sleep(\(literal: seconds))").run() }
            return try await sql.raw("SELECT pg_backend_pid()::BIGINT AS pid").first()!.decode(column: "pid", as: Int64.self)
        }
    }

    /// Fails instead of hanging when `body` waits for a connection that never comes back.
    private func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask { try await Task.sleep(for: .seconds(seconds)); return nil }
            guard let first = try await group.next(), let value = first else {
                group.cancelAll()
                throw TimedOut()
            }
            group.cancelAll()
            return value
        }
    }
    struct TimedOut: Error {}

    func testTheStatementsOfOneRequestRunOnOneConnectionHeldUntilItEnds() async throws {
        let database = try await open(poolSize: 1)
        let outsider = Flag()
        let (backends, outsiderDoneDuringRequest) = try await database.unitOfWork { () -> ([Int64], Bool) in
            let first = try await Self.backend(database)
            // Work that is not this request's (no task-local lease) needs the pool's only connection: it must wait
            // until the request hands it back.
            Task.detached { _ = try await Self.backend(database); outsider.set() }
            try await Task.sleep(for: .milliseconds(300))
            let second = try await Self.backend(database), third = try await Self.backend(database)
            return ([first, second, third], outsider.isSet)
        }
        XCTAssertEqual(Set(backends).count, 1, "\(backends)")
        XCTAssertFalse(outsiderDoneDuringRequest, "the request kept its connection between its statements")
        for _ in 0..<50 where !outsider.isSet { try await Task.sleep(for: .milliseconds(100)) }
        XCTAssertTrue(outsider.isSet, "the connection went back to the pool when the request ended")
    }

    final class Flag: Sendable {
        private let value = NIOLockedValueBox(false)
        func set() { value.withLockedValue { $0 = true } }
        var isSet: Bool { value.withLockedValue { $0 } }
    }

    func testARequestThatRunsNoStatementLeasesNoConnection() async throws {
        let database = try await open(poolSize: 1)
        // The pool's only connection is busy for a second and a half.
        let holder = Task { @Sendable () async throws -> Int64 in try await Self.backend(database, sleeping: 1.5) }
        try await Task.sleep(for: .milliseconds(300))
        let answer = try await within(1.0) { try await database.unitOfWork { 42 } }
        XCTAssertEqual(answer, 42)
        _ = try await holder.value
    }

    func testARequestCancelledWhileWaitingForTheConnectionStopsWaiting() async throws {
        let database = try await open(poolSize: 1)
        let holder = Task.detached { @Sendable () async throws -> Int64 in try await Self.backend(database, sleeping: 2) }
        try await Task.sleep(for: .milliseconds(300))
        let request = Task { @Sendable () async throws -> Int64 in try await database.unitOfWork { try await Self.backend(database) } }
        try await Task.sleep(for: .milliseconds(200))
        request.cancel()
        let outcome = try await within(1.0) { await request.result }
        XCTAssertThrowsError(try outcome.get(), "a cancelled wait for the pool ends the run, as a cancelled pool lease does")
        _ = try await holder.value
        _ = try await within(5) { try await Self.backend(database) }
    }

    func testASecondRunWhileTheConnectionIsBusyGetsItsOwn() async throws {
        let database = try await open(poolSize: 2)
        let (first, second) = try await database.unitOfWork {
            async let slow = Self.backend(database, sleeping: 0.4)
            try await Task.sleep(for: .milliseconds(100))
            async let quick = Self.backend(database)
            return (try await slow, try await quick)
        }
        XCTAssertNotEqual(first, second, "two statements at once never share a connection")
    }

    func testTheConnectionGoesBackToThePoolWhenTheRequestEnds() async throws {
        let database = try await open(poolSize: 1)
        let late = try await database.unitOfWork { () -> Task<Int64, any Error> in
            _ = try await Self.backend(database)
            // A task the request leaves running: after the request it must lease on its own, and can only get the
            // pool's single connection if the request handed it back.
            return Task { try await Task.sleep(for: .milliseconds(200)); return try await Self.backend(database) }
        }
        _ = try await within(5) { try await late.value }
        _ = try await within(5) { try await Self.backend(database) }
    }

    func testAFailingStatementFailsOnlyItselfAndTheConnectionStaysUsable() async throws {
        let database = try await open(poolSize: 1)
        let pid = try await database.unitOfWork { () -> Int64 in
            do {
                try await database.run { sql in try await sql.raw("SELECT * FROM no_such_table_here").run() }
                XCTFail("the statement should have failed")
            } catch {}
            return try await Self.backend(database)
        }
        XCTAssertGreaterThan(pid, 0)
        _ = try await within(5) { try await Self.backend(database) }
    }
}
