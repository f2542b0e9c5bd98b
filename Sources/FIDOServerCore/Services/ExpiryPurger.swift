import Foundation
import Logging
import ServiceLifecycle

/// Removes expired UAF requests, WebAuthn ceremonies, sessions, status records, dispatch tokens, device request ids and audit events every ``interval``, so
/// they do not accumulate. (Expired rows are already refused when read; this only reclaims the space.)
package struct ExpiryPurger: Service {
    /// How often the purge runs. Every second rather than every minute: on SQLite a purge holds the one writer while
    /// it deletes, so it should delete little at a time; a second's expired rows (about 1,300 sessions and as many
    /// status records at 1,300 logins/s) take milliseconds now that their keys sort by time (``OrderedToken``). With
    /// random keys and a minute's rows, against an hour's sessions, one purge stalled every login for 15 s (measured).
    /// Each statement is also capped (``StoreDatabase/purgeBatch``), for a backlog. On PostgreSQL a purge that finds
    /// nothing is five index probes.
    package static let interval: Duration = .seconds(1)

    /// Every store with rows that expire.
    let stores: Stores
    let clock: @Sendable () -> Date
    let interval: Duration
    let logger: Logger
    /// How long a WebAuthn ceremony is kept past its expiry, for the FIDO2 status service (the status retention).
    let ceremonyRetention: TimeInterval
    package init(stores: Stores, clock: @escaping @Sendable () -> Date, interval: Duration, ceremonyRetention: TimeInterval, logger: Logger) {
        self.stores = stores
        self.ceremonyRetention = ceremonyRetention
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            // The payloads of tokens that expired before this instance started are cleared by its first purge.
            var payloadsCleared = Date(timeIntervalSince1970: 0)
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                payloadsCleared = await purgeOnce(payloadsClearedUntil: payloadsCleared)
            }
        }
    }

    /// One purge. `payloadsClearedUntil` is the expiry up to which dispatch tokens already had their payloads
    /// cleared; returns the new one (unchanged when the purge failed, so the next one covers the same rows again).
    func purgeOnce(payloadsClearedUntil: Date) async -> Date {
        let now = clock()
        do {
            let requests = try await stores.uafCeremonies.purge(expiredBefore: now)
            let sessions = try await stores.sessions.purge(expiredBefore: now)
            let statuses = try await stores.status.purge(expiredBefore: now)
            // A dispatch token is kept an hour past its expiry, so redeeming it late still answers "expired"; what it
            // carried goes at its expiry.
            let emptied = try await stores.dispatchTokens.clearPayloads(expiredFrom: payloadsClearedUntil, before: now)
            let tokens = try await stores.dispatchTokens.purge(expiredBefore: now, retention: Self.tokenRetention)
            let deviceRequests = try await stores.deviceRequests.purge(expiredBefore: now)
            let audit = try await stores.audit.purge(expiredBefore: now)
            let ceremonies = try await stores.passkeyCeremonies.purge(expiredBefore: now.addingTimeInterval(-ceremonyRetention))
            if requests + sessions + statuses + emptied + tokens + deviceRequests + audit + ceremonies > 0 {
                logger.debug(
                    "purged \(requests) UAF request(s), \(ceremonies) WebAuthn ceremony record(s), \(sessions) session(s), \(statuses) status record(s), \(emptied) dispatch token payload(s), \(tokens) dispatch token(s), \(deviceRequests) device request id(s), \(audit) audit event(s)"
                )
            }
            return now
        } catch {
            logger.warning("purging expired rows failed: \(error)")
            return payloadsClearedUntil
        }
    }

    /// How long an expired dispatch token's row (emptied of its payload) is kept, in seconds.
    static let tokenRetention: TimeInterval = 3600
}
