import Foundation

/// The server's clock as its answer's `Date` header shows it: a device-signed request (a `Device-Signature`) is
/// refused when the clocks differ by more than the server's skew, and the refusal says nothing else. The SDK
/// reads the header to tell the user to fix the device's date (`ClockSkewTooBig`) rather than report an unknown
/// device or a network error.
package enum ServerClock {
    /// What the server's signature check allows (its default skew) before a refusal is called a clock problem.
    package static let assumedSkew: TimeInterval = 300

    /// By how many seconds the device clock (`now`) is ahead of the server's, if more than the skew; nil when the
    /// answer has no readable `Date` or the clocks agree within the skew.
    package static func excessOffset(of exchange: HTTPExchange, now: Date) -> TimeInterval? {
        guard let value = exchange.headers.first(where: { $0.0.lowercased() == "date" })?.1, let serverTime = httpDate(value) else { return nil }
        let difference = now.timeIntervalSince(serverTime)
        return abs(difference) > assumedSkew ? difference : nil
    }

    /// An IMF-fixdate (RFC 9110 §5.6.7), the form servers send.
    package static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
