import Foundation

extension ServerConfiguration {
    /// Metrics and shutdown behaviour for operators.
    public struct Observability: Codable, Sendable, Equatable {
        /// Serve `GET /metrics` (Prometheus text format). The series hold counts and timings only, no usernames or
        /// keys; still, expose the path to the monitoring network only (the balancer need not route it).
        public var metrics: Bool
        /// On SIGTERM, seconds during which `/health/ready` already answers 503 while the instance still serves
        /// everything, so a balancer that polls readiness stops sending new traffic first; then the server stops
        /// accepting and finishes the requests under way. Set it to the balancer's health-check interval or more.
        public var shutdownDrainSeconds: Int

        public init(metrics: Bool = true, shutdownDrainSeconds: Int = 0) {
            self.metrics = metrics; self.shutdownDrainSeconds = shutdownDrainSeconds
        }

        package enum CodingKeys: String, CodingKey, CaseIterable { case metrics, shutdownDrainSeconds }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Observability()
            self.init(metrics: try c.decodeIfPresent(Bool.self, forKey: .metrics) ?? d.metrics,
                      shutdownDrainSeconds: try c.decodeIfPresent(Int.self, forKey: .shutdownDrainSeconds) ?? d.shutdownDrainSeconds)
        }

        func validate() throws {
            guard (0...300).contains(shutdownDrainSeconds) else {
                throw ConfigurationError.invalid("observability.shutdownDrainSeconds must be 0...300")
            }
        }
    }
}
