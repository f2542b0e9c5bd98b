import Dispatch
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO

/// The event loops an instance opens its PostgreSQL connections on: each new connection on the next loop in turn.
///
/// Why: PostgresNIO's pool opens a connection on `eventLoopGroup.any()`, which is the caller's own loop when the
/// caller runs on one, and the pool's task runs on one. So every connection of an instance was on the same event
/// loop, and so was every request after its first statement (a task resumes where its statement's answer arrived):
/// under two instances on PostgreSQL one loop of each did about four fifths of the instance's work while the other
/// idled (perf, samples per thread). Spread over the loops, a run finds an idle connection on its own loop
/// (`PostgresConnections`' first rule) and the instance's work stays spread too.
final class EventLoopsInTurn: EventLoopGroup, Sendable {
    private let base: any EventLoopGroup

    init(_ base: any EventLoopGroup) { self.base = base }

    func next() -> any EventLoop { base.next() }
    /// `next()`: the loops in turn, wherever the caller runs.
    func any() -> any EventLoop { base.next() }
    func makeIterator() -> EventLoopIterator { base.makeIterator() }

    @preconcurrency func shutdownGracefully(queue: DispatchQueue, _ callback: @Sendable @escaping ((any Error)?) -> Void) {
        base.shutdownGracefully(queue: queue, callback)
    }
}
