import FIDOServerCore
import Foundation
import Hummingbird
import NIOConcurrencyHelpers

/// A per-client limit on every request but those to health, metrics and the facets (`exempt`): at most `limit`
/// requests per minute window, then 429 with `Retry-After` until the window ends. It runs before every rule that may
/// answer a request (406, 405, 404, authorization's 401 and 403), so each of those counts too: an anonymous caller
/// cannot try credentials, or make the server parse headers, faster than anyone else may call. A client is what
/// ``ClientAddressResolver`` makes of the peer (an IPv6 client by prefix, behind a trusted proxy the client it names).
/// The counts live in this instance's memory, one entry per client seen in the current minute: a limit guards one
/// process's capacity, so it need not be shared (several instances behind a balancer each enforce their own).
/// Requests without a peer address (in-process tests) are not limited.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let limiter: RateLimiter
    let clients: ClientAddressResolver
    /// Paths never limited, whatever the method (each answers from memory).
    let exempt: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The client is worked out only when a limit is on (load tests turn it off).
        if limiter.limit > 0, !exempt.contains(request.uri.path), let client = clients.clientKey(peer: context.peerIP, headers: request.headers),
            let retryAfter = limiter.admit(client, now: limiter.clock())
        {
            return ErrorBody.response(
                .tooManyRequests, error: "rate_limited", message: "Too many requests from this client; retry later.",
                headers: [.retryAfter: String(retryAfter)])
        }
        return try await next(request, context)
    }
}

final class RateLimiter: Sendable {
    let limit: Int
    let clock: @Sendable () -> Date
    private struct Window {
        var start: Int64
        var counts: [String: Int]
    }
    private let state = NIOLockedValueBox(Window(start: 0, counts: [:]))

    init(limit: Int, clock: @escaping @Sendable () -> Date) {
        self.limit = limit
        self.clock = clock
    }

    /// nil when admitted, else the seconds until the window ends.
    func admit(_ address: String, now: Date) -> Int? {
        guard limit > 0 else { return nil }
        let second = Int64(now.timeIntervalSince1970)
        let windowStart = second - second % 60
        return state.withLockedValue { window in
            if window.start != windowStart { window = Window(start: windowStart, counts: [:]) }  // memory stays bounded
            let count = window.counts[address, default: 0] + 1
            window.counts[address] = count
            return count > limit ? Int(windowStart + 60 - second) : nil
        }
    }
}
