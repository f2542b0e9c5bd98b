import FIDOServerTesting
import FIDOSimulation
import Foundation
import Logging
import NIOConcurrencyHelpers
import Primitives
import SQLKit
import SQLiteNIO
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The filter on the PostgreSQL pool's background logger while a store opens.
final class PostgresStartupLogFilterTests: XCTestCase {
    static let earlyLease = "Trying to lease connection from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet."

    func testTheEarlyLeaseWarningIsDebugWhileStarting() {
        let records = RecordedLogs()
        let logger = Logger(label: "test") { _ in PostgresStartupLogFilter(upstream: RecordingLogHandler(records), starting: .init()) }
        logger.warning("\(Self.earlyLease)")
        XCTAssertEqual(records.messages(atLeast: .warning), [])
        XCTAssertEqual(records.messages(atLeast: .debug), [Self.earlyLease])
    }

    func testTheEarlyLeaseWarningWarnsAfterTheStartup() {
        let records = RecordedLogs()
        let starting = PostgresStartupLogFilter.Flag()
        let logger = Logger(label: "test") { _ in PostgresStartupLogFilter(upstream: RecordingLogHandler(records), starting: starting) }
        starting.end()
        logger.warning("\(Self.earlyLease)")
        XCTAssertEqual(records.messages(atLeast: .warning), [Self.earlyLease])
    }

    func testOtherWarningsPassWhileStarting() {
        let records = RecordedLogs()
        let logger = Logger(label: "test") { _ in PostgresStartupLogFilter(upstream: RecordingLogHandler(records), starting: .init()) }
        logger.warning("connection lost")
        XCTAssertEqual(records.messages(atLeast: .warning), ["connection lost"])
    }
}
