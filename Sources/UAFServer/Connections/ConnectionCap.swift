import NIOConcurrencyHelpers
import NIOCore
import UAFServerCore

/// The cap on connections open at once (``ConnectionBudget/maximumConnections``). A connection past the cap is
/// closed as soon as it is accepted, before its TLS handshake: the caller learns at once, and the descriptor is back
/// within the same event-loop turn, while every connection the server already holds goes on being served.
final class ConnectionCap: Sendable {
    let maximum: Int
    private let open = NIOLockedValueBox(0)
    private let onRefusal: @Sendable () -> Void

    init(maximum: Int, onRefusal: @escaping @Sendable () -> Void = {}) {
        self.maximum = maximum
        self.onRefusal = onRefusal
    }

    /// A place for one more connection, or false at the cap.
    func admit() -> Bool {
        let admitted = open.withLockedValue { count in
            guard count < maximum else { return false }
            count += 1
            return true
        }
        if !admitted { onRefusal() }
        return admitted
    }

    func release() { open.withLockedValue { $0 -= 1 } }

    /// The handler that holds a place for its connection while the connection lives.
    func handler() -> any RemovableChannelHandler { Place(cap: self) }

    final class Place: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny
        private let cap: ConnectionCap
        private var held = false

        init(cap: ConnectionCap) { self.cap = cap }

        func handlerAdded(context: ChannelHandlerContext) {
            held = cap.admit()
            if !held { context.close(promise: nil) }
        }

        func channelInactive(context: ChannelHandlerContext) {
            leave()
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) { leave() }

        private func leave() {
            if held { held = false; cap.release() }
        }
    }
}
