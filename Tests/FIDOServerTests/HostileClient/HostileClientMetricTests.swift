import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// What a caller can make `/metrics` count: labels come from bounded sets, so no number of distinct paths, ids,
/// methods or credentials adds a series.
final class HostileClientMetricTests: XCTestCase {
    let relyingParty = LocalRelyingParty()

    /// The number of series in the exposition (sample lines, not comments).
    static func seriesCount(_ metrics: ServerMetrics) -> Int {
        String(decoding: metrics.exposition(), as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }.count
    }

    /// The requests of round `index`: unknown paths, unknown ids on routes with parameters, Auth Cloud paths with
    /// and without a (wrong) access key, a protected route with a forged bearer token, and an invented method.
    static func requests(_ index: Int) -> [(String, HTTPRequest.Method, HTTPFields)] {
        let id = "x\(index)-" + String(repeating: "p", count: 200)
        return [
            ("/nowhere/\(id)", .get, [:]),
            ("/api/v1/users/\(id)", .get, [:]),
            ("/api/v1/\(id)", .delete, [.authorization: "Bearer wrong-\(index)"]),
            ("/nevisfido/token/dispatch/targets/\(id)", .delete, [.authorization: "Bearer forged.\(index).jwt"]),
            ("/nevisfido/devices/credentials/\(id)", .get, [:]),
            ("/health/\(id)", HTTPRequest.Method("M\(index % 1000)")!, [:]),
        ]
    }

    func testTenThousandDistinctPathsIdsAndCredentialsAddNoSeries() async throws {
        var quiet = Logger(label: "mauth.hostile-metrics")
        quiet.logLevel = .warning  // thousands of refusals, each a notice line
        try await RouterTests.withRouter(relyingParty: relyingParty, logger: quiet) { client, built in
            // One round first, so every label set these requests can reach exists; then count.
            for (path, method, headers) in Self.requests(0) {
                try await client.execute(uri: path, method: method, headers: headers) { _ in }
            }
            let before = Self.seriesCount(built.metrics)
            var sent = 0
            for round in 1...(10_000 / 6 + 1) {
                for (path, method, headers) in Self.requests(round) {
                    try await client.execute(uri: path, method: method, headers: headers) { response in
                        XCTAssertGreaterThanOrEqual(response.status.code, 400)
                    }
                    sent += 1
                }
            }
            XCTAssertGreaterThanOrEqual(sent, 10_000)
            XCTAssertEqual(Self.seriesCount(built.metrics), before)
        }
    }
}
