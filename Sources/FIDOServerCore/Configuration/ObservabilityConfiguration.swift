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
        /// OpenTelemetry traces, exported over OTLP/HTTP; off when absent (the default).
        public var tracing: Tracing?

        /// Traces of each request (`mauth server`): a span per HTTP request, named by its route, and a span per
        /// database statement under it, exported over OTLP/HTTP to a collector. A caller's W3C `traceparent` is
        /// continued. The audit stream's lines carry the request's `trace_id`.
        public struct Tracing: Codable, Sendable, Equatable {
            /// The collector's OTLP/HTTP traces URL, used as written (`http://otel-collector:4318/v1/traces`).
            public var endpoint: String
            /// `http/protobuf` (the default) or `http/json`.
            public var `protocol`: String
            /// The spans' `service.name`.
            public var serviceName: String
            /// The share of new traces kept, 0...1; a caller's trace is kept or dropped as the caller sampled it.
            public var sampleRatio: Double

            public init(endpoint: String, protocol: String = "http/protobuf", serviceName: String = "mauth", sampleRatio: Double = 1) {
                self.endpoint = endpoint
                self.protocol = `protocol`
                self.serviceName = serviceName
                self.sampleRatio = sampleRatio
            }

            package enum CodingKeys: String, CodingKey, CaseIterable { case endpoint, `protocol`, serviceName, sampleRatio }
            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    endpoint: try c.decode(String.self, forKey: .endpoint),
                    protocol: try c.decodeIfPresent(String.self, forKey: .protocol) ?? "http/protobuf",
                    serviceName: try c.decodeIfPresent(String.self, forKey: .serviceName) ?? "mauth",
                    sampleRatio: try c.decodeIfPresent(Double.self, forKey: .sampleRatio) ?? 1)
            }

            func validate() throws {
                guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false else {
                    throw ConfigurationError.invalid("observability.tracing.endpoint must be an http:// or https:// URL, not \(endpoint)")
                }
                guard ["http/protobuf", "http/json"].contains(self.protocol) else {
                    throw ConfigurationError.invalid("observability.tracing.protocol must be http/protobuf or http/json, not \(self.protocol)")
                }
                guard (1...128).contains(serviceName.utf8.count) else {
                    throw ConfigurationError.invalid("observability.tracing.serviceName must be 1...128 bytes")
                }
                guard (0...1).contains(sampleRatio) else {
                    throw ConfigurationError.invalid("observability.tracing.sampleRatio must be 0...1")
                }
            }
        }

        public init(
            metrics: Bool = true, shutdownDrainSeconds: Int = 0, logFormat: LogFormat = .text, auditRetentionDays: Int = 30,
            auditAnonymousEventsPerMinute: Int = 60, auditLogPath: String? = nil, tracing: Tracing? = nil
        ) {
            self.tracing = tracing
            self.metrics = metrics
            self.shutdownDrainSeconds = shutdownDrainSeconds
            self.logFormat = logFormat
            self.auditRetentionDays = auditRetentionDays
            self.auditAnonymousEventsPerMinute = auditAnonymousEventsPerMinute
            self.auditLogPath = auditLogPath
        }

        package enum CodingKeys: String, CodingKey, CaseIterable {
            case metrics, shutdownDrainSeconds, logFormat, auditRetentionDays, auditAnonymousEventsPerMinute, auditLogPath, tracing
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
                auditLogPath: try c.decodeIfPresent(String.self, forKey: .auditLogPath),
                tracing: try c.decodeIfPresent(Tracing.self, forKey: .tracing))
        }

        func validate() throws {
            try tracing?.validate()
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
