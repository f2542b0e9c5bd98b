import FIDOServerTesting
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// An idle connection is closed by the server after `limits.idleTimeoutSeconds`.
final class IdleTimeoutTests: XCTestCase {
    func testAnIdleTLSConnectionIsClosedByTheServer() async throws {
        var configuration = LoopbackServer.configuration()
        configuration.limits.idleTimeoutSeconds = 1
        try await LoopbackServer.with(configuration) { loopback in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(loopback.server.certificatePEM.utf8)))
            let context = try NIOSSLContext(configuration: tls)
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: "localhost"))
                    }
                }
                .connect(host: "127.0.0.1", port: loopback.server.port).get()
            let started = Date()
            // Send nothing: the server must close the connection by itself, well before this test's own deadline.
            let closed = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await channel.closeFuture.get()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(10))
                    return false
                }
                let first = try await group.next()!
                group.cancelAll()
                return first
            }
            if !closed { try await channel.close() }
            XCTAssertTrue(closed, "the idle connection was still open after 10 s")
            XCTAssertLessThan(Date().timeIntervalSince(started), 9)
        }
    }
}
