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

/// Log messages kept for a test to read.
final class RecordedLogs: Sendable {
    private let entries = NIOLockedValueBox([(Logger.Level, String)]())
    func append(_ level: Logger.Level, _ message: String) { entries.withLockedValue { $0.append((level, message)) } }
    func messages(atLeast level: Logger.Level) -> [String] { entries.withLockedValue { $0.filter { $0.0 >= level }.map(\.1) } }
}

/// A log handler that records every message at every level into a ``RecordedLogs``.
struct RecordingLogHandler: LogHandler {
    let records: RecordedLogs
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    init(_ records: RecordedLogs) { self.records = records }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { records.append(event.level, "\(event.message)") }
}
