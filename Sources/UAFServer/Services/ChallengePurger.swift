import Foundation
import Logging
import ServiceLifecycle

/// Removes expired UAF requests from the repository once a minute, so unanswered requests do not accumulate.
/// (Consuming an expired request is already refused with 1491; this only reclaims the space.)
struct ChallengePurger: Service {
    let repository: any Repository
    let clock: @Sendable () -> Date
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                do {
                    let removed = try await repository.purgeChallenges(expiredBefore: clock())
                    if removed > 0 { logger.debug("purged \(removed) expired UAF request(s)") }
                } catch {
                    logger.warning("purging expired UAF requests failed: \(error)")
                }
            }
        }
    }
}
