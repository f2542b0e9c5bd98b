import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// The HTTP side of one closed loop: its keep-alive TLS connections (one per server it talks to), on one event
/// loop, and the loop's code runs on that same event loop.
///
/// Why not AsyncHTTPClient: the load generator shares the two cores with the server it measures, so every
/// microsecond it spends is taken from the server. A general client's pool, request state machines and streamed
/// bodies, and above all the hops between the event loop and Swift concurrency's threads on every request, cost the
/// generator about as much CPU as the server's own work per request. Here a loop is an actor whose executor is its
/// connections' event loop: a request is written and its answer resumes the loop on the same thread, and the loop
/// signs the next message there. One request is outstanding per connection at a time, as in a closed loop.
actor LoadClient {
    nonisolated let eventLoop: any EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { eventLoop.executor.asUnownedSerialExecutor() }
    private let settings: LoadHTTP
    private var connections: [String: Connection] = [:]

    /// A connection and the handler that hands its answers back.
    private struct Connection {
        let channel: any Channel
        let exchange: NIOLoopBound<HTTPExchange>
    }

    init(eventLoop: any EventLoop, settings: LoadHTTP) {
        self.eventLoop = eventLoop
        self.settings = settings
    }

    /// Runs `work` on this client's event loop.
    func perform<T: Sendable>(_ work: @Sendable (isolated LoadClient) async -> T) async -> T { await work(self) }

    /// POSTs `body` to `target` and returns the status and body; failures before an answer are
    /// ``LoadFailure/transport``. A connection that failed is dropped; the next request opens a new one.
    func post(
        _ target: LoadTarget, path: String, endpoint: String, body: ByteBuffer,
        headers: [(String, String)]
    ) async throws(LoadFailure) -> (Int, ByteBuffer) {
        try await send(.POST, target, path: path, endpoint: endpoint, body: body, headers: headers)
    }

    /// Sends a request with `method` and `body` (nil: no body and no content headers), as ``post(_:path:endpoint:body:headers:)``.
    func send(
        _ method: HTTPMethod, _ target: LoadTarget, path: String, endpoint: String, body: ByteBuffer?,
        headers: [(String, String)]
    ) async throws(LoadFailure) -> (Int, ByteBuffer) {
        do {
            let connection = try await connection(to: target)
            var head = HTTPRequestHead(version: .http1_1, method: method, uri: path)
            head.headers.add(name: "Host", value: target.hostHeader)
            // The UAF media types unless `headers` name their own (the FIDO2 API's JSON).
            let json = headers.contains { $0.0 == "Content-Type" && $0.1 == "application/json" }
            if let body {
                if !json { head.headers.add(name: "Content-Type", value: "application/fido+uaf;charset=UTF-8") }
                head.headers.add(name: "Accept", value: json ? "application/json" : "application/fido+uaf")
                head.headers.add(name: "Content-Length", value: String(body.readableBytes))
            }
            for (name, value) in headers { head.headers.add(name: name, value: value) }
            let promise = eventLoop.makePromise(of: (Int, ByteBuffer).self)
            connection.exchange.value.expect(promise)
            let channel = connection.channel
            let exchange = connection.exchange
            let timeout = eventLoop.scheduleTask(in: settings.timeout) {
                // Through the exchange, so the promise is completed once even if an answer or a close follows.
                exchange.value.fail(LoadClientError.timedOut)
                channel.close(promise: nil)
            }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            defer { timeout.cancel() }
            return try await withCheckedThrowingContinuation(isolation: self) { continuation in
                promise.futureResult.whenComplete { continuation.resume(with: $0) }
            }
        } catch {
            if let connection = connections.removeValue(forKey: target.base) { connection.channel.close(promise: nil) }
            throw .transport(endpoint: endpoint, detail: LoadHTTP.short(error))
        }
    }

    /// Closes every connection.
    func close() async {
        for connection in connections.values { try? await connection.channel.close() }
        connections = [:]
    }

    private func connection(to target: LoadTarget) async throws -> Connection {
        if let connection = connections[target.base], connection.channel.isActive { return connection }
        connections[target.base] = nil
        let exchange = NIOLoopBound(HTTPExchange(), eventLoop: eventLoop)
        let context = settings.tls
        // SNI takes a name, never an address; the certificate is still checked against the address.
        let hostname = target.host.isIPAddress ? nil : target.host
        let channel = try await withCheckedThrowingContinuation(isolation: self) { (continuation: CheckedContinuation<any Channel, any Error>) in
            ClientBootstrap(group: eventLoop)
                .connectTimeout(.seconds(5))
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: hostname))
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(exchange.value)
                    }
                }
                .connect(host: target.host, port: target.port)
                .whenComplete { continuation.resume(with: $0) }
        }
        let connection = Connection(channel: channel, exchange: exchange)
        connections[target.base] = connection
        return connection
    }
}

enum LoadClientError: Error, CustomStringConvertible {
    case timedOut, closed
    var description: String {
        switch self {
        case .timedOut: "no answer within the request timeout"
        case .closed: "the server closed the connection"
        }
    }
}

/// Collects one HTTP answer at a time (head, body parts, end) and fulfils the promise of the request it answers.
final class HTTPExchange: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    private var pending: EventLoopPromise<(Int, ByteBuffer)>?
    /// What ended the connection, once something has. A TLS handshake fails between the connect and the first
    /// request, with no request to fail yet; kept here, it fails that request at once instead of leaving it to the
    /// request timeout, and names the real cause (an untrusted certificate, not "no answer").
    private var ended: (any Error)?
    private var status = 0
    private var body = ByteBuffer()

    func expect(_ promise: EventLoopPromise<(Int, ByteBuffer)>) {
        if let ended { promise.fail(ended) } else { pending = promise }
    }

    /// Ends the connection's exchange with `error` (the first cause is kept) and fails the request under way, if
    /// any (each promise is completed exactly once).
    func fail(_ error: any Error) {
        if ended == nil { ended = error }
        let promise = pending
        pending = nil
        promise?.fail(error)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            body = context.channel.allocator.buffer(capacity: 1024)
        case .body(var part):
            body.writeBuffer(&part)
        case .end:
            guard let promise = pending else {
                context.close(promise: nil)
                return
            }
            pending = nil
            promise.succeed((status, body))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(LoadClientError.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.close(promise: nil)
    }
}

extension String {
    /// An IPv4 or IPv6 literal (what SNI must not carry).
    var isIPAddress: Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, self, &v4) == 1 || inet_pton(AF_INET6, self, &v6) == 1
    }
}
