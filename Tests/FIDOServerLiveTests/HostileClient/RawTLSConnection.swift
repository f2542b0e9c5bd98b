import FIDOServerTesting
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import TestSupport

/// A TLS connection that writes raw bytes and reads raw bytes, for callers that misbehave on purpose (a body sent a
/// byte at a time, a connection that never sends). Only ever pointed at a server the test started on loopback.
final class RawTLSConnection: @unchecked Sendable {
    let channel: any Channel
    private let received: Received

    private final class Received: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let bytes = NIOLockedValueBox([UInt8]())
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let buffer = unwrapInboundIn(data)
            bytes.withLockedValue { $0 += buffer.readableBytesView }
        }
    }

    /// A connection from `source` (any address of 127.0.0.0/8: each is another client to the server) to the server
    /// on 127.0.0.1; with `pem` nil a bare TCP connection that never starts TLS.
    init(port: Int, trusting pem: String?, from source: String = "127.0.0.1") async throws {
        let context = try pem.map { pem in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            return try NIOSSLContext(configuration: tls)
        }
        let received = Received()
        self.received = received
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(to: try SocketAddress(ipAddress: source, port: 0))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let context {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    }
                    try channel.pipeline.syncOperations.addHandler(received)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    /// The status codes of the answers received so far, in order.
    var statuses: [Int] {
        text.components(separatedBy: "\r\n").compactMap { line in
            line.hasPrefix("HTTP/1.1 ") ? Int(line.dropFirst(9).prefix(3)) : nil
        }
    }

    /// Sends `request` and waits up to `seconds` for its answer: the status of the `count`-th answer on this
    /// connection, nil if it did not come.
    func answer(_ request: String, count: Int, within seconds: Double = 5) async throws -> Int? {
        try await send(request)
        guard try await eventually(within: .seconds(seconds), every: .milliseconds(10), { statuses.count >= count }) else { return nil }
        return statuses[count - 1]
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// What the server sent so far.
    var bytes: [UInt8] { received.bytes.withLockedValue { $0 } }

    /// What the server sent so far, as text.
    var text: String { String(decoding: received.bytes.withLockedValue { $0 }, as: UTF8.self) }

    /// Waits up to `seconds` for an HTTP status line; nil if none came.
    func statusLine(within seconds: Double) async -> String? {
        var line: String?
        _ = try? await eventually(within: .seconds(seconds)) {
            line = text.split(separator: "\r\n").first.map(String.init).flatMap { $0.hasPrefix("HTTP/1.1 ") ? $0 : nil }
            return line != nil
        }
        return line
    }

    /// Whether the server closed the connection within `seconds`.
    func closed(within seconds: Double) async -> Bool {
        (try? await eventually(within: .seconds(seconds)) { !channel.isActive }) ?? !channel.isActive
    }

    /// Sends `piece(n)` every 300 ms, at most `rounds` times, and says whether the server closed the connection
    /// meanwhile (a caller that trickles its request).
    func isCut(trickling piece: (Int) -> String, rounds: Int = 30) async -> Bool {
        for index in 0..<rounds {
            try? await send(piece(index))
            if await closed(within: 0.3) { return true }
        }
        return false
    }

    func close() async { try? await channel.close() }
}
