import Foundation
import Logging
import NIOCore
import NIOPosix
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// A PostgreSQL that does not answer at start-up ends the start, after bounded attempts each logged as a warning,
/// with an error that names the database (and not its password).
final class DatabaseStartupTests: XCTestCase {
    /// A loopback port nothing listens on: bound, then closed.
    static func closedPort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try XCTUnwrap(channel.localAddress?.port)
        try await channel.close()
        return port
    }

    func testAnUnreachablePostgreSQLEndsTheStartWithAnErrorThatNamesIt() async throws {
        let port = try await Self.closedPort()
        let records = RecordedLogs()
        let started = ContinuousClock.now
        do {
            _ = try await StoreDatabase.open(
                .postgres(url: "postgres://mauth:secretpw@127.0.0.1:\(port)/mauthdb?sslmode=disable", poolSize: 2),
                logger: Logger(label: "test") { _ in RecordingLogHandler(records) },
                startup: .init(count: 3, pause: .milliseconds(20), connectTimeout: .seconds(2)))
            XCTFail("the start went on without a database")
        } catch let error as StoreDatabase.UnreachableDatabase {
            XCTAssertEqual(error.attempts, 3)
            XCTAssertTrue(error.description.contains("127.0.0.1:\(port), database mauthdb"), error.description)
            XCTAssertTrue(error.description.hasSuffix(": nothing answers at 127.0.0.1:\(port) (connection refused)"), error.description)
            XCTAssertFalse(error.description.contains("secretpw"))
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(20))
        let warnings = records.messages(atLeast: .warning)
        XCTAssertEqual(warnings.count, 2, "\(warnings)")
        XCTAssertTrue(warnings.allSatisfy { $0.contains("attempt") && !$0.contains("secretpw") }, "\(warnings)")
    }

    /// PostgreSQL answers but refuses the database: its words, not `PSQLError`'s or NIO's.
    func testADatabaseThatDoesNotExistIsNamedInWords() async throws {
        let url = try PostgresStoreTests.postgresURL()
        var components = try XCTUnwrap(URLComponents(string: url))
        components.path = "/no_such_database"
        do {
            _ = try await StoreDatabase.open(
                .postgres(url: try XCTUnwrap(components.string), poolSize: 1),
                startup: .init(count: 1, pause: .milliseconds(20), connectTimeout: .seconds(2)))
            XCTFail("the start went on without its database")
        } catch let error as StoreDatabase.UnreachableDatabase {
            XCTAssertTrue(
                error.description.hasSuffix(": the database no_such_database does not exist on that server: create it, or name another"),
                error.description)
        }
    }

    /// A PostgreSQL that goes away after the start: the outage's warning says why in words. (It takes the pool's
    /// minute before it gives up on new connections; PostgresNIO does not let that be shortened.) A minute of waiting
    /// is a twentieth of CI's budget: `.ci/run` runs it beside the fault tests with `MAUTH_RUN_MINUTE_TESTS=1`, and
    /// a plain `swift test` skips it.
    func testALostPostgreSQLIsWarnedInWords() async throws {
        try XCTSkipUnless(
            ProcessInfo.processInfo.environment["MAUTH_RUN_MINUTE_TESTS"] == "1",
            "waits a minute for PostgresNIO's pool to give up: MAUTH_RUN_MINUTE_TESTS=1 runs it (.ci/run does, beside the fault tests)")
        let port = try await Self.closedPort()
        let url = "postgres://mauth@127.0.0.1:\(port)/mauthdb?sslmode=disable&connect_timeout=2"
        let records = RecordedLogs()
        let logger = Logger(label: "test") { _ in RecordingLogHandler(records) }
        let client = try StoreDatabase.postgresClient(url: url, poolSize: 1, logger: Logger(label: "test.quiet") { _ in SwiftLogNoOpLogHandler() })
        let run = Task { await client.run() }
        let target = StoreDatabase.PostgresTarget(try StoreDatabase.parsedURL(url).coreConfiguration)
        let connections = PostgresConnections(client: client, size: 1, logger: logger, describe: { StoreDatabase.reason($0, target: target) })
        connections.start()
        do {
            let connection = try await connections.acquire()
            connections.release(connection)
            XCTFail("a connection to a closed port")
        } catch {}
        await connections.close()
        run.cancel()
        await run.value
        let warnings = records.messages(atLeast: .warning)
        XCTAssertEqual(
            warnings,
            [
                "no PostgreSQL connection: no connection to 127.0.0.1:\(port) could be opened for a minute: is PostgreSQL running, and reachable from here?"
            ])
    }
}
