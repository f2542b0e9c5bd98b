import FIDOSimulation
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import TestSupport
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// QR codes on the open `dispatch/authentication`: data too long for a code is 400, drawing runs on a thread
/// pool with a bounded number at once and waiting, and past that a request is refused at once.
final class HostileClientQRTests: XCTestCase {
    let relyingParty = LocalRelyingParty()

    func testDataTooLongForAQRCodeIsABadRequest() async throws {
        try await RouterTests.withRouter(relyingParty: relyingParty) { client, built in
            struct Body: Encodable {
                var dispatcher = "png-qr-code"
                var dispatchInformation = #"{"data":""# + String(repeating: "d", count: 4000) + #""}"#
                var getUafRequest = GetUAFRequest(op: .authentication, context: nil)
            }
            let tokensBefore = try await Self.tokenCount(built)
            try await client.execute(
                uri: "/nevisfido/token/dispatch/authentication", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(bytes: try JSONEncoder().encode(Body()))
            ) { response in
                XCTAssertEqual(response.status, .badRequest)
            }
            let tokensAfter = try await Self.tokenCount(built)
            XCTAssertEqual(tokensAfter, tokensBefore, "nothing is stored for a refused dispatch")
        }
    }

    static func tokenCount(_ built: FIDOServerApplication.Built) async throws -> Int {
        try await built.stores.database.run { sql in
            try await sql.raw("SELECT count(*) AS n FROM dispatch_tokens").first()?.decode(column: "n", as: Int.self) ?? -1
        }
    }

    func testARenderingPastTheRunningAndWaitingBoundsIsRefusedAtOnce() async throws {
        // A one-thread pool, held by a blocking job: the first drawing takes the one slot and queues in the pool,
        // the second waits for the slot, the third finds no room.
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        let hold = DispatchSemaphore(value: 0)
        let held = pool.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.next()) { hold.wait() }
        let renderer = QRRenderer(moduleSize: 2, limits: .init(atOnce: 1, waiting: 1), pool: pool)
        async let first = renderer.render("first")
        async let second = renderer.render("second")
        let occupied = try await eventually(every: .milliseconds(5)) { renderer.occupancy == (1, 1) }
        XCTAssertTrue(occupied, "one drawing runs, one waits")
        do {
            _ = try await renderer.render("third")
            XCTFail("a third drawing is refused")
        } catch let failure as Refusal {
            XCTAssertEqual(failure.status, .serviceUnavailable)
            XCTAssertEqual(failure.headers[.retryAfter], "1")
        }
        hold.signal()
        try await held.get()
        let images = try await [first, second]
        XCTAssertEqual(images.map { $0.dataURI.hasPrefix("data:image/png;base64,") }, [true, true])
        XCTAssertTrue(renderer.occupancy == (0, 0), "every slot is given back")
        try await pool.shutdownGracefully()
    }

    func testTextTooLongForAQRCodeIsRefusedWithoutTakingASlot() async throws {
        let renderer = QRRenderer(moduleSize: 2, limits: .init(atOnce: 1, waiting: 0))
        do {
            _ = try await renderer.render(String(repeating: "x", count: 2332))
            XCTFail("2332 bytes do not fit in a QR code at level M")
        } catch let failure as ServiceFailure {
            XCTAssertEqual(failure.status, .badRequest)
        }
        XCTAssertTrue(renderer.occupancy == (0, 0))
        let fits = try await renderer.render(String(repeating: "x", count: 2331))
        XCTAssertGreaterThan(fits.side, 0)
    }
}
