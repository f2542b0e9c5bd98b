import Foundation

/// A settable clock for expiry tests: the server under test reads its time from it.
public final class TestClock: @unchecked Sendable {
    // @unchecked: `offset` is only read and written under `lock`.
    private let lock = NSLock()
    private var offset: TimeInterval = 0

    public init() {}

    /// Moves the clock forward.
    public func advance(_ seconds: TimeInterval) { lock.withLock { offset += seconds } }
    public var now: Date { lock.withLock { Date().addingTimeInterval(offset) } }
}
