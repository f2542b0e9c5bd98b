import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// The database side of the audit trail: every security decision becomes an `audit_events` row, kept for
/// `observability.auditRetentionDays`. Decisions are taken on the request path, which must not wait for the
/// database, so ``record(_:budgetKeys:)`` only queues the event and ``run()`` writes the queue every second in
/// multi-row statements.
///
/// Bounded cost per caller: every caller that is not the relying party's own has a budget of
/// `eventsPerMinute` rows a minute for its address (IPv6: its prefix) and, when it presents a user's credential (a
/// session, a registration token, a device signature, a trusted proxy's user, a redeemed dispatch token, the demo
/// site), another for that principal (``budgetKeys(principal:client:decision:)``); an event is stored while both have
/// room. Past that its events are counted, and when the minute ends one summary row per budget says how many were
/// not stored. With the default 60 that is at most 61 rows (about 16.7 KB on disk) a minute per address and per
/// user's principal, about 24 MB a day, while the `mauth.audit` log stream still carries every event. The relying
/// party's JWT, access keys, admins and verified registrations and logins (`ServerDecision.provesAKey`) are never
/// budgeted. The queue holds at most ``capacity`` events; past it (the database fell behind) events are counted in
/// `mauth_audit_events_not_stored_total{reason="queue_full"}` and logged, never waited for.
package final class AuditTrail: Service, Sendable {
    /// Events waiting for the database at most: about 5 MB at some 250 bytes each.
    package static let capacity = 20_000

    let store: AuditStore
    let retention: TimeInterval
    let eventsPerMinute: Int
    let clock: @Sendable () -> Date
    let metrics: ServerMetrics?
    let logger: Logger
    let interval: Duration

    private struct State {
        var pending: [AuditEvent] = []
        var minute: Int64 = 0
        var counts: [BudgetKey: Int] = [:]
        var dropped = 0
    }
    private let state = NIOLockedValueBox(State())

    package init(
        store: AuditStore, retention: TimeInterval, eventsPerMinute: Int, clock: @escaping @Sendable () -> Date,
        metrics: ServerMetrics?, logger: Logger, interval: Duration = .seconds(1)
    ) {
        self.store = store
        self.retention = retention
        self.eventsPerMinute = eventsPerMinute
        self.clock = clock
        self.metrics = metrics
        self.logger = logger
        self.interval = interval
    }

    /// A budget of rows: one client address (IPv6: prefix), or one principal (``Principal/auditName``).
    package enum BudgetKey: Hashable, Sendable, Comparable {
        case address(String)
        case principal(String)
    }

    /// The budgets an event is counted against: none for the relying party's own callers (its JWT, an access key,
    /// an admin) and for a decision that proves a key; else the client's address, and the principal when the
    /// caller presented a user's credential. Why: any registered user holds a session or a device key, so a
    /// credential alone must not buy unbounded rows; one user from many addresses is held by the principal's
    /// budget, many users from one address by the address's.
    package static func budgetKeys(principal: Principal?, client: String?, decision: ServerDecision) -> [BudgetKey] {
        if decision.provesAKey { return [] }
        if let principal, !principal.isAuditBudgeted { return [] }
        return (client.map { [.address($0)] } ?? []) + (principal.map { [.principal($0.auditName)] } ?? [])
    }

    /// Queues `event`, counted against `budgetKeys` (``budgetKeys(principal:client:decision:)``); with none it is
    /// always kept.
    package func record(_ event: AuditEvent, budgetKeys: [BudgetKey]) {
        let overBudget = state.withLockedValue { state -> Bool in
            rollMinute(&state, now: event.at)
            var over = false
            for key in budgetKeys {
                let count = state.counts[key, default: 0] + 1
                state.counts[key] = count
                if count > eventsPerMinute { over = true }
            }
            if over { return true }
            guard state.pending.count < Self.capacity else {
                state.dropped += 1
                return false
            }
            state.pending.append(event)
            return false
        }
        if overBudget { metrics?.auditNotStored(reason: "over_budget", count: 1) }
    }

    /// A new minute: one summary row for each budget that was exceeded in the last one, and new budgets.
    private func rollMinute(_ state: inout State, now: Date) {
        let minute = Int64(now.timeIntervalSince1970) / 60
        guard minute != state.minute else { return }
        let ended = Date(timeIntervalSince1970: TimeInterval(state.minute * 60 + 60))
        for (key, count) in state.counts.sorted(by: { $0.key < $1.key }) where count > eventsPerMinute && state.pending.count < Self.capacity {
            let (address, principal, noun): (String?, String?, String) =
                switch key {
                case .address(let address): (address, nil, "client address")
                case .principal(let name): (nil, name, "principal")
                }
            state.pending.append(
                AuditEvent(
                    at: ended, requestID: nil, clientAddress: address, principal: principal, operation: "audit budget", username: nil,
                    statusCode: 429,
                    detail:
                        "\(count - eventsPerMinute) further decision(s) for this \(noun) in the minute before were not stored (budget \(eventsPerMinute) a minute); the mauth.audit log has them"
                ))
        }
        state.counts = [:]
        state.minute = minute
    }

    /// Writes the queued events (and the summary rows of a minute that ended); what fails is logged and counted.
    package func flush() async {
        let (events, dropped) = state.withLockedValue { state in
            rollMinute(&state, now: clock())
            defer {
                state.pending = []
                state.dropped = 0
            }
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
