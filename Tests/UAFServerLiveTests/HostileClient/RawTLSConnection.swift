import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

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

    init(port: Int, trusting pem: String) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        let context = try NIOSSLContext(configuration: tls)
        let received = Received()
        self.received = received
        channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    try channel.pipeline.syncOperations.addHandler(received)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text)).get()
    }

    /// What the server sent so far, as text.
    var text: String { String(decoding: received.bytes.withLockedValue { $0 }, as: UTF8.self) }

    /// Waits up to `seconds` for an HTTP status line; nil if none came.
    func statusLine(within seconds: Double) async -> String? {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let line = text.split(separator: "\r\n").first, line.hasPrefix("HTTP/1.1 ") { return String(line) }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// Whether the server closed the connection within `seconds`.
    func closed(within seconds: Double) async -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if !channel.isActive { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return !channel.isActive
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
