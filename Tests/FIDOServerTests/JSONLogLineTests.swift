import Foundation
import Logging
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// `observability.logFormat` `json`: each line one JSON object, read back by Foundation's JSONSerialization (an
/// independent reader), whatever the message and metadata hold.
final class JSONLogLineTests: XCTestCase {
    func object(_ line: [UInt8]) throws -> [String: Any] {
        XCTAssertFalse(line.contains(UInt8(ascii: "\n")), "one line")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
    }

    func testALineCarriesTheFieldsAndTheMetadataAsMembers() throws {
        let time = Date(timeIntervalSince1970: 1_795_000_000.25)
        let line = LogLine.json(
            time: time, level: .info, label: "mauth.audit", message: "registration request for alice: 1200 issued",
            source: "FIDOServer", metadata: ["request_id": "r1", "client": "192.0.2.1", "tags": ["a", "b"], "nested": ["k": "v"]])
        let object = try object(line)
        XCTAssertEqual(object["time"] as? String, "2026-11-18T11:06:40.250Z")
        XCTAssertEqual(object["level"] as? String, "info")
        XCTAssertEqual(object["label"] as? String, "mauth.audit")
        XCTAssertEqual(object["message"] as? String, "registration request for alice: 1200 issued")
        XCTAssertEqual(object["source"] as? String, "FIDOServer")
        XCTAssertEqual(object["request_id"] as? String, "r1")
        XCTAssertEqual(object["tags"] as? [String], ["a", "b"])
        XCTAssertEqual(object["nested"] as? [String: String], ["k": "v"])
    }

    /// The audit file (`observability.auditLogPath`) and `mauth admin audit --json` write the same event the same way:
    /// `code` is a number in both.
    func testAnAuditEventsCodeIsANumberAsInTheAdminAuditJSON() throws {
        let event = AuditEvent(
            at: Date(timeIntervalSince1970: 1_795_000_000), requestID: "r1", clientAddress: "192.0.2.1", principal: nil,
            operation: "authentication", username: "alice", statusCode: 1401, detail: "refused")
        let line = try object(
            LogLine.json(
                time: event.at, level: .info, label: "mauth.audit", message: event.message, source: "FIDOServer",
                metadata: event.logMetadataValues))
        XCTAssertEqual(line["code"] as? Int, 1401)
        XCTAssertFalse(line["code"] is String)
        let stored = try XCTUnwrap(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(event)) as? [String: Any])
        XCTAssertEqual(stored["code"] as? Int, 1401)
        XCTAssertEqual(line["username"] as? String, "alice")
        XCTAssertTrue(
            LogLine.text(
                time: event.at, level: .info, label: "mauth.audit", message: event.message,
                metadata: event.logMetadataValues
            ).contains(#"code="1401""#))
    }

    func testQuotesNewlinesAndControlCharactersCannotBreakALineOrForgeAMember() throws {
        let hostile = "alice\"}\n{\"level\":\"critical\u{0}\u{1b}[31m"
        let object = try object(
            LogLine.json(
                time: Date(), level: .notice, label: "mauth.server", message: hostile, source: "s",
                metadata: ["username": .string(hostile)]))
        XCTAssertEqual(object["message"] as? String, hostile)
        XCTAssertEqual(object["username"] as? String, hostile)
        XCTAssertEqual(object["level"] as? String, "notice")
    }

    func testMetadataNamedLikeAFieldIsKeptApart() throws {
        let object = try object(
            LogLine.json(
                time: Date(), level: .info, label: "l", message: "m", source: "s",
                metadata: ["level": "forged", "message": "forged"]))
        XCTAssertEqual(object["level"] as? String, "info")
        XCTAssertEqual(object["metadata.level"] as? String, "forged")
        XCTAssertEqual(object["metadata.message"] as? String, "forged")
    }

    func testTheTimestampIsWhatFoundationsISO8601FormatterWrites() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SystemRandomNumberGenerator()
        // 1970 to 2100, and the edges of days, months, leap days and the millisecond.
        let fixed: [TimeInterval] = [0, 0.999, 86_399.999, 951_782_400, 951_868_799.5, 1_709_164_800, 4_102_444_799.999]
        for seconds in fixed + (0..<2000).map({ _ in TimeInterval(Int64.random(in: 0...4_102_444_799_999, using: &generator)) / 1000 }) {
            let date = Date(timeIntervalSince1970: seconds)
            XCTAssertEqual(AuditEvent.timestamp(date), formatter.string(from: date), "\(seconds)")
        }
    }

    func testAnAppendedFileGetsWholeLines() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-audit-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sink = try LogSink.appending(to: path)
        let logger = Logger(label: "mauth.audit") { label in ServerLogHandler(label: label, format: .json, sink: sink) }
        logger.info("first", metadata: ["username": "alice"])
        logger.info("second")
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(try object(Array(lines[0].utf8))["username"] as? String, "alice")
        XCTAssertThrowsError(try LogSink.appending(to: "/nonexistent-directory/audit.log")) { error in
            XCTAssertTrue("\(error)".contains("cannot open /nonexistent-directory/audit.log"), "\(error)")
        }
    }
}
