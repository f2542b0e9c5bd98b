import FIDOServer

extension ServerMetrics {
    /// The value of one series in a Prometheus text exposition, or nil when it is absent. `series` is the series as
    /// the exposition writes it: its name, and its labels in their order (`mauth_tls_reloads_total{outcome="refused"}`).
    public static func value(of series: String, in exposition: String) -> Double? {
        for line in exposition.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// The value of one series now: what a test waits on when the server's own count is the signal that
    /// it has seen what the test did (connections admitted, a request under way).
    public func value(of series: String) -> Double? {
        Self.value(of: series, in: String(decoding: exposition(), as: UTF8.self))
    }
}
