import NIOConcurrencyHelpers

/// When a phase ends: after a number of flows, or at a deadline (a flow under way then still completes).
enum Budget: Sendable {
    case flows(Int)
    case deadline(ContinuousClock.Instant)
}

/// The budget and the progress counters all loops share; one lock per flow.
final class SharedBudget: Sendable {
    private struct State {
        var remaining: Int?
        var flows = 0
        var failed = 0
    }
    private let deadline: ContinuousClock.Instant?
    private let state: NIOLockedValueBox<State>

    init(_ budget: Budget) {
        switch budget {
        case .flows(let count):
            state = NIOLockedValueBox(State(remaining: count))
            deadline = nil
        case .deadline(let instant):
            state = NIOLockedValueBox(State(remaining: nil))
            deadline = instant
        }
    }

    /// Whether the caller may start one more flow.
    func claim() -> Bool {
        if let deadline, ContinuousClock.now >= deadline { return false }
        return state.withLockedValue { state in
            guard let remaining = state.remaining else { return true }
            guard remaining > 0 else { return false }
            state.remaining = remaining - 1
            return true
        }
    }

    func finished(success: Bool) {
        state.withLockedValue { state in
            if success { state.flows += 1 } else { state.failed += 1 }
        }
    }
    var progress: (Int, Int) { state.withLockedValue { ($0.flows, $0.failed) } }
}
