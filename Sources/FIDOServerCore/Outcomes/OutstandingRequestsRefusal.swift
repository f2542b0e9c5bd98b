import Foundation

/// A request refused because its user already has `limits.outstandingRequestsPerUsername` unanswered requests
/// counted against her cap: HTTP 429 with `Retry-After` (at most one request lifetime, when the oldest has expired)
/// and a body that says so, rather than a UAF status code that would suggest a bad or expired message.
package struct OutstandingRequestsRefusal: Error {
    package let limit: Int
    package let retryAfterSeconds: Int
    package var detail: String {
        "\(limit) unanswered requests are outstanding for this user, the most allowed; refused until one is answered or expires"
    }
    /// What the caller is told: HTTP 429 with `Retry-After`, like every other refusal.
    package var refusal: Refusal {
        Refusal(
            .tooManyRequests, "too_many_outstanding_requests",
            "This user has \(limit) unanswered requests, the most allowed; answer one or retry later.", retryAfterSeconds: retryAfterSeconds)
    }
}
