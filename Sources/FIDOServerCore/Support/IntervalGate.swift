import Foundation
import NIOConcurrencyHelpers

/// Lets something through at most once per `interval` (on the caller's clock): the bound on work any caller can
/// trigger, such as re-reading keys for a token that names an unknown key id.
final class IntervalGate: Sendable {
    private let interval: TimeInterval
    private let last = NIOLockedValueBox(Date.distantPast)

    init(interval: TimeInterval) { self.interval = interval }

    /// Whether the gate opens at `now`; when it does, it stays shut for `interval`.
    func opens(at now: Date) -> Bool {
        last.withLockedValue { last in
            guard now.timeIntervalSince(last) >= interval else { return false }
            last = now
            return true
        }
    }
}
