import NIOCore
import NIOEmbedded
import XCTest

@testable import LoadGenerator

/// The handler that hands one connection's answers back to `mauth load`'s loop.
final class HTTPExchangeTests: XCTestCase {
    struct HandshakeRefused: Error {}

    /// A TLS handshake can fail between the connect and the first request: the request must fail at once with that
    /// error, not wait for the request timeout.
    func testARequestOnAConnectionThatAlreadyFailedFailsAtOnceWithItsError() throws {
        let exchange = HTTPExchange()
        let channel = EmbeddedChannel(handler: exchange)
        channel.pipeline.fireErrorCaught(HandshakeRefused())
        let promise = channel.eventLoop.makePromise(of: (Int, ByteBuffer).self)
        exchange.expect(promise)
        var outcome: Result<(Int, ByteBuffer), any Error>?
        promise.futureResult.whenComplete { outcome = $0 }
        channel.embeddedEventLoop.run()
        guard case .failure(let error)? = outcome else { return XCTFail("the request is still waiting: \(String(describing: outcome))") }
        XCTAssertTrue(error is HandshakeRefused, "\(error)")
        promise.fail(LoadClientError.timedOut)  // what the request timeout would do; a completed promise ignores it
    }

    func testARequestOnAConnectionTheServerClosedFailsAtOnce() throws {
        let exchange = HTTPExchange()
        let channel = EmbeddedChannel(handler: exchange)
        channel.pipeline.fireChannelInactive()
        let promise = channel.eventLoop.makePromise(of: (Int, ByteBuffer).self)
        exchange.expect(promise)
        var outcome: Result<(Int, ByteBuffer), any Error>?
        promise.futureResult.whenComplete { outcome = $0 }
        channel.embeddedEventLoop.run()
        guard case .failure(let error)? = outcome else { return XCTFail("the request is still waiting: \(String(describing: outcome))") }
        XCTAssertEqual("\(error)", "the server closed the connection")
        promise.fail(LoadClientError.timedOut)
    }
}
