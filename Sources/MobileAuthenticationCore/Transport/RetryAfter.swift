import Foundation

/// A 429 answer's `Retry-After`, read where the answers are (the error itself knows no HTTP exchange).
extension RateLimitError {
    /// The wait a 429 answer asks for, from its `Retry-After`: delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    package init(_ exchange: HTTPExchange, now: Date, httpError: HttpError?) {
        let value = exchange.headers.first { $0.0.lowercased() == "retry-after" }?.1.trimmingCharacters(in: .whitespaces)
        self.init(retryAfterSeconds: value.flatMap { Self.seconds($0, now: now) }, httpError: httpError)
    }

    /// The seconds a `Retry-After` value asks for; nil for a value that is neither form.
    static func seconds(_ value: String, now: Date) -> Int? {
        if !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) { return Int(value.prefix(9)) }
        return ServerClock.httpDate(value).map { max(0, Int(($0.timeIntervalSince(now)).rounded(.up))) }
    }
}
