import FIDOServerCore
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import NIOTLS

/// A deadline for receiving a whole request: from its first byte on the wire (the TLS handshake's, for a new
/// connection) to the end of its body, at most `deadline`; past it the connection is closed.
///
/// Why: an idle timeout alone restarts on every byte or body part, so a caller who sends one byte every few seconds
/// holds a connection, and a descriptor, for ever; enough of them exhaust the process's descriptors. A deadline on
/// the whole request bounds how long any anonymous caller holds a connection before the server has its request:
/// at most `deadline` per request, after which the idle timeout governs the wait for the next one.
///
/// A connection must also finish its TLS handshake within `handshakeDeadline` of being accepted, whether or not
/// it sent a byte: a TCP connection that never sends one would otherwise live until the idle timeout.
///
/// Two handlers share one state on the connection's event loop: ``RequestPartsWatcher`` sits after the HTTP codec
/// (it sees when a request's body ends and when its response ends); on being added it puts a ``WireWatcher`` at the
/// very front of the pipeline, which sees the first raw byte of each request.
enum RequestDeadline {
    /// The handler to add after the HTTP codec (`HTTP1Channel.Configuration.additionalChannelHandlers`).
    static func handler(deadline: TimeAmount, handshakeDeadline: TimeAmount) -> any RemovableChannelHandler {
        RequestPartsWatcher(deadline: deadline, handshakeDeadline: handshakeDeadline)
    }

    /// Where the connection is in its request/response cycle.
    enum Phase {
        /// No byte of a next request has arrived since the last response ended (or since the connection opened):
        /// the idle timeout governs this wait.
        case waiting
        /// Bytes of a request are arriving: the deadline runs.
        case receiving
        /// The request is complete; the server is answering it (its time is not the caller's).
        case answering
    }

    final class RequestPartsWatcher: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart
        typealias OutboundIn = HTTPResponsePart
        typealias OutboundOut = HTTPResponsePart

        let deadline: TimeAmount
        let handshakeDeadline: TimeAmount
        private(set) var phase = Phase.waiting
        private var timer: Scheduled<Void>?
        private var handshakeTimer: Scheduled<Void>?

        init(deadline: TimeAmount, handshakeDeadline: TimeAmount) {
            self.deadline = deadline
            self.handshakeDeadline = handshakeDeadline
        }

        func handlerAdded(context: ChannelHandlerContext) {
            // At the front, before TLS: the first byte of the handshake starts the first request's deadline.
            try? context.pipeline.syncOperations.addHandler(WireWatcher(owner: self), position: .first)
            // Added when the connection is accepted: the handshake's deadline runs from now.
            let channel = context.channel
            handshakeTimer = context.eventLoop.scheduleTask(in: handshakeDeadline) { channel.close(promise: nil) }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            stopTimer()
            stopHandshakeTimer()
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls { stopHandshakeTimer() }
            context.fireUserInboundEventTriggered(event)
        }

        private func stopHandshakeTimer() {
            handshakeTimer?.cancel()
            handshakeTimer = nil
        }

        /// A byte arrived on the wire.
        func bytesArrived(context: ChannelHandlerContext) {
            guard phase == .waiting else { return }
            phase = .receiving
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .end = unwrapInboundIn(data) {
                stopTimer()
                phase = .answering
            }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) {
                // An answer given before the request was read to its end (413, say) ends that request's deadline too.
                stopTimer()
                phase = .waiting
            }
            context.write(data, promise: promise)
        }

        func channelInactive(context: ChannelHandlerContext) {
            stopTimer()
            stopHandshakeTimer()
            context.fireChannelInactive()
        }

        private func stopTimer() {
            timer?.cancel()
            timer = nil
        }
    }

    /// Tells its owner when raw bytes arrive; passes everything on unchanged.
    final class WireWatcher: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        private let owner: RequestPartsWatcher

        init(owner: RequestPartsWatcher) { self.owner = owner }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            owner.bytesArrived(context: context)
            context.fireChannelRead(data)
        }
    }
}
