import NIOConcurrencyHelpers
import PostgresNIO

/// One pooled PostgreSQL connection for the statements of one HTTP request (its unit of work, see
/// ``StoreDatabase/unitOfWork(_:)``).
///
/// Why: a login runs eight statements. Leasing a connection from the pool for each one cost a pool round trip and a
/// hop between event loops per statement; two instances on one PostgreSQL went from 505 / 495 / 447 to 540 / 615 / 543
/// login flows/s with one lease per request (runs alternated), and p99 from 142 to 164 ms to 107 to 111 ms.
///
/// The rules that keep it as safe as a lease per statement:
/// - **Lazy**: nothing is leased until the request runs its first statement, so a request that needs no database
///   (liveness, metrics) never waits for the pool, and readiness still pings on a connection of its own.
/// - **One user at a time**: while one run uses the connection, a second run of the same request (a task it started)
///   leases its own, exactly as before, so a connection never carries two statements at once and nobody waits on
///   the lease (no deadlock however the pool is sized).
/// - **Handed back once the request is over**: after ``end()`` no run joins; the connection goes back to the pool
///   as soon as the run using it, if any, finishes. A task that outlives the request leases its own.
/// - A connection that breaks fails the statements that use it, as before; the pool replaces it.
final class PostgresLease: Sendable {
    private let client: PostgresClient
    private let state = NIOLockedValueBox(State())

    private struct State {
        var connection: PostgresConnection?
        /// Resumed to hand the connection back (ends the task holding it in `withConnection`).
        var handBack: CheckedContinuation<Void, Never>?
        /// A run holds the connection, or is waiting for the first lease.
        var busy = false
        var ended = false
        /// The run waiting for the first lease; taken (once) by whichever comes first: the connection, the pool's
        /// failure, or the run's cancellation.
        var waiting: CheckedContinuation<PostgresConnection, any Error>?

        /// The waiting run's continuation, once: nil if nobody waits or it was taken already.
        mutating func takeWaiting() -> CheckedContinuation<PostgresConnection, any Error>? {
            defer { waiting = nil }
            return waiting
        }

        /// The hand-back continuation, once: nil if there is none or it was taken already.
        mutating func takeHandBack() -> CheckedContinuation<Void, Never>? {
            defer { handBack = nil; connection = nil }
            return handBack
        }
    }

    init(client: PostgresClient) { self.client = client }

    /// The request's connection, leased on first use; nil when another run is using it or the request is over (the
    /// caller then leases its own). Every non-nil answer is followed by exactly one ``release()``.
    func acquire() async throws -> PostgresConnection? {
        let (connection, mustLease): (PostgresConnection?, Bool) = state.withLockedValue { state in
            guard !state.ended, !state.busy else { return (nil, false) }
            if let connection = state.connection {
                state.busy = true
                return (connection, false)
            }
            state.busy = true
            return (nil, true)
        }
        if let connection { return connection }
        guard mustLease else { return nil }
        do {
            return try await lease()
        } catch {
            state.withLockedValue { $0.busy = false }
            throw error
        }
    }

    /// The run that ``acquire()`` answered is done with the connection.
    func release() {
        let handBack = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.busy = false
            return state.ended ? state.takeHandBack() : nil
        }
        handBack?.resume()
    }

    /// The request is over: no run joins any more, and the connection goes back to the pool once unused.
    func end() {
        let handBack = state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            state.ended = true
            return state.busy ? nil : state.takeHandBack()
        }
        handBack?.resume()
    }

    /// Leases a connection in a task that holds it (inside the pool's `withConnection`) until it is handed back.
    /// Cancelling the waiting run gives up the wait, as a cancelled pool lease does; a connection that arrives after
    /// that goes straight back to the pool.
    private func lease() async throws -> PostgresConnection {
        let client = self.client, state = self.state
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (leased: CheckedContinuation<PostgresConnection, any Error>) in
                state.withLockedValue { $0.waiting = leased }
                // Cancelled before the wait was registered: the handler above already ran and found nothing to cancel.
                if Task.isCancelled {
                    state.withLockedValue { $0.takeWaiting() }?.resume(throwing: CancellationError())
                    return
                }
                Task {
                    do {
                        try await client.withConnection { connection in
                            await withCheckedContinuation { (handBack: CheckedContinuation<Void, Never>) in
                                let waiting = state.withLockedValue { state -> CheckedContinuation<PostgresConnection, any Error>? in
                                    defer { state.waiting = nil }
                                    if state.waiting != nil {
                                        state.connection = connection
                                        state.handBack = handBack
                                    }
                                    return state.waiting
                                }
                                // Nobody waits any more (cancelled): hand the connection straight back.
                                guard let waiting else { return handBack.resume() }
                                waiting.resume(returning: connection)
                            }
                        }
                    } catch {
                        state.withLockedValue { $0.takeWaiting() }?.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            state.withLockedValue { $0.takeWaiting() }?.resume(throwing: CancellationError())
        }
    }
}
