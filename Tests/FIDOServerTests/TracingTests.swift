import Foundation
import XCTest

@testable import FIDOServerCore

/// The tracing settings' rules, the statement summary a database span is named by, and the audit line's trace ID.
/// The traces themselves are exported by a real `mauth server` to a collector in `.ci/tracing-test`.
final class TracingTests: XCTestCase {
    func testEachTracingSettingRuleRefusesOneChangedValue() throws {
        let valid = ServerConfiguration.Observability.Tracing(endpoint: "http://otel-collector:4318/v1/traces")
        XCTAssertNoThrow(try valid.validate())
        let cases: [(String, (inout ServerConfiguration.Observability.Tracing) -> Void, String)] = [
            ("no scheme", { $0.endpoint = "otel-collector:4318" }, "must be an http:// or https:// URL"),
            ("ftp", { $0.endpoint = "ftp://otel-collector/v1/traces" }, "must be an http:// or https:// URL"),
            ("grpc", { $0.protocol = "grpc" }, "must be http/protobuf or http/json"),
            ("empty name", { $0.serviceName = "" }, "serviceName must be 1...128 bytes"),
            ("ratio above 1", { $0.sampleRatio = 1.5 }, "sampleRatio must be 0...1"),
            ("negative ratio", { $0.sampleRatio = -0.1 }, "sampleRatio must be 0...1"),
        ]
        for (what, change, expected) in cases {
            var tracing = valid
            change(&tracing)
            XCTAssertThrowsError(try tracing.validate(), what) { XCTAssertTrue("\($0)".contains(expected), "\(what): \($0)") }
        }
    }

    func testTracingIsOffUnlessConfigured() throws {
        let configuration = try JSONDecoder().decode(ServerConfiguration.Observability.self, from: Data("{}".utf8))
        XCTAssertNil(configuration.tracing)
        let on = try JSONDecoder().decode(
            ServerConfiguration.Observability.self, from: Data(#"{"tracing":{"endpoint":"https://collector.example/v1/traces"}}"#.utf8))
        XCTAssertEqual(
            on.tracing, .init(endpoint: "https://collector.example/v1/traces", protocol: "http/protobuf", serviceName: "mauth", sampleRatio: 1))
    }

    func testADatabaseSpanIsNamedByItsOperationAndTable() {
        XCTAssertEqual(TracingSQLDatabase.summary("SELECT * FROM passkeys WHERE username = $1").table, "passkeys")
        XCTAssertEqual(TracingSQLDatabase.summary("INSERT INTO registrations (aaid, key_id) VALUES ($1, $2)").operation, "INSERT")
        XCTAssertEqual(TracingSQLDatabase.summary("INSERT INTO registrations (aaid) VALUES ($1)").table, "registrations")
        XCTAssertEqual(TracingSQLDatabase.summary("UPDATE sessions SET revoked_at = $1").table, "sessions")
        XCTAssertEqual(TracingSQLDatabase.summary("CREATE TABLE IF NOT EXISTS mauth_migrations (version BIGINT)").table, "mauth_migrations")
        XCTAssertNil(TracingSQLDatabase.summary("BEGIN IMMEDIATE").table)
    }

    func testTheAuditLineCarriesTheTraceID() throws {
        let event = AuditEvent(
            at: Date(timeIntervalSince1970: 0), requestID: "r1", clientAddress: "127.0.0.1", principal: nil, operation: "registration request",
            username: "alice", statusCode: 1200, detail: "issued", traceID: "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(event.logMetadata["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736")
        let json = String(decoding: try JSONEncoder().encode(event), as: UTF8.self)
        XCTAssertTrue(json.contains(#""trace_id":"4bf92f3577b34da6a3ce929d0e0e4736""#), json)
        let untraced = AuditEvent(
            at: Date(), requestID: nil, clientAddress: nil, principal: nil, operation: "x", username: nil, statusCode: 200, detail: "")
        XCTAssertNil(untraced.logMetadata["trace_id"])
    }
}
