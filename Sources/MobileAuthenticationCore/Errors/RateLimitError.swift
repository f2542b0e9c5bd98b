import Foundation

/// The server refused a request because too many came (HTTP 429): its rate limit per caller, its cap of unanswered
/// requests for the user, or its limit of dispatches to one device. Nothing is wrong with the device, the user or the
/// protocol; the request may be sent again after ``retryAfterSeconds``. The operation reports it as a `NetworkError`
/// whose `cause` is this error (the Nevis SDK has no case of its own for it):
/// ```swift
/// if case .NetworkError(let cause as RateLimitError) = error { retry(after: cause.retryAfterSeconds ?? 60) }
/// ```
public struct RateLimitError: Error, Sendable, Equatable, CustomStringConvertible, HttpErrorCarrying {
    /// When to try again, from the answer's `Retry-After` (seconds, or an HTTP date counted from the device clock);
    /// nil if the server did not say.
    public let retryAfterSeconds: Int?
    /// The refused request and the answer.
    public let httpError: HttpError?

    package init(retryAfterSeconds: Int?, httpError: HttpError?) {
        self.retryAfterSeconds = retryAfterSeconds
        self.httpError = httpError
    }

    package var carriedHttpError: HttpError? { httpError }

    public var description: String {
        "the server is refusing requests for now (HTTP 429, too many requests)"
            + (retryAfterSeconds.map { "; try again in \($0) s" } ?? "; try again later")
    }

    /// Equal waits; the captured request is diagnostics, not identity.
    public static func == (a: RateLimitError, b: RateLimitError) -> Bool { a.retryAfterSeconds == b.retryAfterSeconds }
}
