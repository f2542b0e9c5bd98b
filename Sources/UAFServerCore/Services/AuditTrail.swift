import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// The database side of the audit trail: every security decision becomes an `audit_events` row, kept for
/// `observability.auditRetentionDays`. Decisions are taken on the request path, which must not wait for the
/// database, so ``record(_:budgetKey:)`` only queues the event and ``run()`` writes the queue every second in
/// multi-row statements.
///
/// Bounded cost per caller: a caller without credentials (``record(_:budgetKey:)`` with its address as
/// `budgetKey`; a verified registration or authentication is exempt, see `ServerDecision.provesAKey`) gets at most
/// `anonymousEventsPerMinute` rows a minute; past that its events are counted, and when
/// the minute ends one summary row says how many were not stored. With the default 60 that is at most 61 rows
/// (about 16.7 KB on disk) per address a minute, while the `mauth.audit` log stream still carries every event. The
/// queue holds at most ``capacity`` events; past it (the database fell behind) events are counted in
/// `mauth_audit_events_not_stored_total{reason="queue_full"}` and logged, never waited for.
package final class AuditTrail: Service, Sendable {
    /// Events waiting for the database at most: about 5 MB at some 250 bytes each.
    package static let capacity = 20_000

    let store: AuditStore
    let retention: TimeInterval
    let anonymousEventsPerMinute: Int
    let clock: @Sendable () -> Date
    let metrics: ServerMetrics?
    let logger: Logger
    let interval: Duration

    private struct State {
        var pending: [AuditEvent] = []
        var minute: Int64 = 0
        var anonymous: [String: Int] = [:]
        var dropped = 0
    }
    private let state = NIOLockedValueBox(State())

    package init(store: AuditStore, retention: TimeInterval, anonymousEventsPerMinute: Int, clock: @escaping @Sendable () -> Date,
                 metrics: ServerMetrics?, logger: Logger, interval: Duration = .seconds(1)) {
        self.store = store; self.retention = retention; self.anonymousEventsPerMinute = anonymousEventsPerMinute
        self.clock = clock; self.metrics = metrics; self.logger = logger; self.interval = interval
    }

    /// Queues `event`. `budgetKey` is the address (IPv6: prefix) of a caller without credentials, nil for one with
    /// credentials, whose events are always kept.
    package func record(_ event: AuditEvent, budgetKey: String?) {
        let overBudget = state.withLockedValue { state -> Bool in
            rollMinute(&state, now: event.at)
            if let budgetKey {
                let count = state.anonymous[budgetKey, default: 0] + 1
                state.anonymous[budgetKey] = count
                if count > anonymousEventsPerMinute { return true }
            }
            guard state.pending.count < Self.capacity else { state.dropped += 1; return false }
            state.pending.append(event)
            return false
        }
        if overBudget { metrics?.auditNotStored(reason: "over_budget", count: 1) }
    }

    /// A new minute: one summary row for each address that went over its budget in the last one, and new budgets.
    private func rollMinute(_ state: inout State, now: Date) {
        let minute = Int64(now.timeIntervalSince1970) / 60
        guard minute != state.minute else { return }
        let ended = Date(timeIntervalSince1970: TimeInterval(state.minute * 60 + 60))
        for (address, count) in state.anonymous.sorted(by: { $0.key < $1.key }) where count > anonymousEventsPerMinute
        && state.pending.count < Self.capacity {
            state.pending.append(AuditEvent(
                at: ended, requestID: nil, clientAddress: address, principal: nil, operation: "audit budget", username: nil, statusCode: 429,
                detail: "\(count - anonymousEventsPerMinute) further decision(s) for this client without credentials in the minute before were not stored (budget \(anonymousEventsPerMinute) a minute); the mauth.audit log has them"))
        }
        state.anonymous = [:]
        state.minute = minute
    }

    /// Writes the queued events (and the summary rows of a minute that ended); what fails is logged and counted.
    package func flush() async {
        let (events, dropped) = state.withLockedValue { state in
            rollMinute(&state, now: clock())
            defer { state.pending = []; state.dropped = 0 }
            return (state.pending, state.dropped)
        }
        if dropped > 0 {
            metrics?.auditNotStored(reason: "queue_full", count: dropped)
            logger.warning("audit: \(dropped) event(s) not stored: the database fell behind (the mauth.audit log has them)")
        }
        guard !events.isEmpty else { return }
        do {
            try await store.insert(events, retention: retention)
        } catch {
            metrics?.auditNotStored(reason: "database_error", count: events.count)
            logger.warning("audit: \(events.count) event(s) not stored: \(error) (the mauth.audit log has them)")
        }
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: self.interval) } catch { break }
                await self.flush()
            }
        }
        // What was decided before the shutdown is still written.
        await flush()
    }
}
