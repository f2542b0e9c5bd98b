import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// A server's 429 is a `NetworkError` whose cause says when to try again, on every path that can meet one: a UAF
/// operation, the Device Service, a redeem. It is never a protocol violation.
final class RateLimitTests: XCTestCase {
    var directory: URL!
    override func setUp() { directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-ratelimit-\(UUID().uuidString)") }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func registered() async throws -> (any MobileAuthenticationClient, InMemoryRelyingParty) {
        let (client, party, _) = try await makeInMemoryClient(in: directory)
        try await client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#1001")).pinEnroller(ScriptedPinEnroller(pins: ["123456"]))
            .executeAsync()
        return (client, party)
    }

    func testA429ToAUAFRequestIsARateLimitWithItsRetryAfter() async throws {
        let (client, party) = try await registered()
        party.fail("request/authentication", with: [.http(429, [("Retry-After", "53")])])
        do {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
            XCTFail("a 429 must fail the operation")
        } catch {
            guard case .NetworkError(let cause as RateLimitError, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(cause.retryAfterSeconds, 53)
            XCTAssertEqual(error.errorDescription, "The server is busy with too many requests: try again in 53 s.")
            XCTAssertEqual(error.httpError?.statusCode, 429)
        }
        await client.shutdown()
    }

    func testA429ToTheDeviceServiceIsARateLimitToo() async throws {
        let (client, party) = try await registered()
        party.fail("devices/operations", with: [.http(429, [("retry-after", "7")])])
        let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
        guard case .NetworkError(let cause as RateLimitError)? = pending.errors.first else { return XCTFail("\(pending.errors)") }
        XCTAssertEqual(cause.retryAfterSeconds, 7)
        XCTAssertEqual(pending.errors.first?.errorDescription, "The server is busy with too many requests: try again in 7 s.")
        await client.shutdown()
    }

    func testWithoutRetryAfterTheErrorSaysLater() async throws {
        let (client, party) = try await registered()
        party.fail("request/authentication", with: [.http(429, [])])
        let error = await captureFailure {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        }
        XCTAssertEqual((error as? AuthenticationError)?.errorDescription, "The server is busy with too many requests: try again later.")
        await client.shutdown()
    }

    func testRetryAfterIsReadInSecondsOrAsAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        XCTAssertEqual(RateLimitError.seconds("53", now: now), 53)
        XCTAssertEqual(RateLimitError.seconds("0", now: now), 0)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        XCTAssertEqual(RateLimitError.seconds(formatter.string(from: now.addingTimeInterval(120)), now: now), 120)
        XCTAssertEqual(RateLimitError.seconds(formatter.string(from: now.addingTimeInterval(-30)), now: now), 0, "a date past is now")
        XCTAssertNil(RateLimitError.seconds("soon", now: now))
        XCTAssertNil(RateLimitError.seconds("-5", now: now))
        XCTAssertNil(RateLimitError.seconds("", now: now))
    }

    func captureFailure(_ body: () async throws -> Void) async -> (any Error)? {
        do {
            try await body()
            return nil
        } catch { return error }
    }
}
