import Foundation

extension ServerConfiguration {
    /// Metrics, logs, the audit trail and shutdown behaviour for operators.
    public struct Observability: Codable, Sendable, Equatable {
        /// How log lines are written to standard error: `text` (one line, for people) or `json` (one JSON object a
        /// line, for a log pipeline).
        public enum LogFormat: String, Codable, Sendable, CaseIterable { case text, json }

        /// Serve `GET /metrics` (Prometheus text format). The series hold counts and timings only, no usernames or
        /// keys; still, expose the path to the monitoring network only (the balancer need not route it).
        public var metrics: Bool
        /// On SIGTERM, seconds during which `/health/ready` already answers 503 while the instance still serves
        /// everything, so a balancer that polls readiness stops sending new traffic first; then the server stops
        /// accepting and finishes the requests under way. Set it to the balancer's health-check interval or more.
        public var shutdownDrainSeconds: Int
        public var logFormat: LogFormat
        /// Days the audit trail keeps a decision in the database (`mauth admin audit`); 0 keeps none there (the
        /// `mauth.audit` log stream still carries them).
        public var auditRetentionDays: Int
        /// Audit rows a minute a caller without credentials may cause (per address; IPv6 per prefix); past it one
        /// summary row a minute stands for the rest.
        public var auditAnonymousEventsPerMinute: Int
        /// A file the `mauth.audit` log stream is appended to, one JSON object a line, instead of standard error.
        public var auditLogPath: String?

        public init(
            metrics: Bool = true, shutdownDrainSeconds: Int = 0, logFormat: LogFormat = .text, auditRetentionDays: Int = 30,
            auditAnonymousEventsPerMinute: Int = 60, auditLogPath: String? = nil
        ) {
            self.metrics = metrics
            self.shutdownDrainSeconds = shutdownDrainSeconds
            self.logFormat = logFormat
            self.auditRetentionDays = auditRetentionDays
            self.auditAnonymousEventsPerMinute = auditAnonymousEventsPerMinute
            self.auditLogPath = auditLogPath
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case metrics, shutdownDrainSeconds, logFormat, auditRetentionDays, auditAnonymousEventsPerMinute, auditLogPath
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            let d = Observability()
            self.init(
                metrics: try c.decodeIfPresent(Bool.self, forKey: .metrics) ?? d.metrics,
                shutdownDrainSeconds: try c.decodeIfPresent(Int.self, forKey: .shutdownDrainSeconds) ?? d.shutdownDrainSeconds,
                logFormat: try c.decodeIfPresent(LogFormat.self, forKey: .logFormat) ?? d.logFormat,
                auditRetentionDays: try c.decodeIfPresent(Int.self, forKey: .auditRetentionDays) ?? d.auditRetentionDays,
                auditAnonymousEventsPerMinute: try c.decodeIfPresent(Int.self, forKey: .auditAnonymousEventsPerMinute)
                    ?? d.auditAnonymousEventsPerMinute,
                auditLogPath: try c.decodeIfPresent(String.self, forKey: .auditLogPath))
        }

        func validate() throws {
            guard (0...300).contains(shutdownDrainSeconds) else {
                throw ConfigurationError.invalid("observability.shutdownDrainSeconds must be 0...300")
            }
            guard (0...3650).contains(auditRetentionDays) else {
                throw ConfigurationError.invalid("observability.auditRetentionDays must be 0...3650")
            }
            guard (0...10_000).contains(auditAnonymousEventsPerMinute) else {
                throw ConfigurationError.invalid("observability.auditAnonymousEventsPerMinute must be 0...10000")
            }
        }
    }
}
