import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import XCTest

/// A real server's rate limit, met by the SDK over TLS: the operation fails as a `NetworkError` that says when to
/// try again, taken from the server's `Retry-After`.
final class RateLimitFlowTests: XCTestCase {
    func testTheServersRateLimitReachesTheAppWithWhenToTryAgain() async throws {
        let env = try await Environment(limits: ServerConfiguration.Limits(requestsPerMinutePerAddress: 8))
        do {
            let client = try await env.client()
            try await client.register("alice")
            // At most 8 requests a minute: within ten logins (two requests each) the limit answers. Bounded loop.
            var limited: RateLimitError?
            var description: String?
            for _ in 0..<10 where limited == nil {
                do throws(AuthenticationError) {
                    _ = try await client.authenticate("alice", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
                } catch {
                    guard case .NetworkError(let cause as RateLimitError, _) = error else { throw error }
                    limited = cause
                    description = error.errorDescription
                }
            }
            let cause = try XCTUnwrap(limited, "ten logins under a limit of 8 requests a minute were all let through")
            let seconds = try XCTUnwrap(cause.retryAfterSeconds)
            XCTAssertTrue((1...60).contains(seconds), "Retry-After \(seconds)")
            XCTAssertEqual(description, "The server is busy with too many requests: try again in \(seconds) s.")
        } catch {
            try await env.shutdown()
            throw error
        }
        try await env.shutdown()
    }
}
