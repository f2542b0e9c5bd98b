import Foundation

/// Brute-force protection of the PIN and password authenticators (seed 000, "PIN/password brute-force
/// protection"): after failed attempts 1–4 the user waits 0, 0, 60 and 180 seconds before the next attempt; the
/// 5th failure locks the authenticator for good. The counters live in SecureStorage, so they survive restarts.
public enum CoolDownPolicy {
    /// Failed attempts that lock the authenticator.
    public static let maximumAttempts = 5
    /// Cool-down after failure n (index n-1), in seconds.
    public static let coolDownSeconds = [0, 0, 60, 180]

    /// The cool-down that follows `failures` consecutive failures.
    public static func coolDown(afterFailures failures: Int) -> Int {
        guard failures >= 1 else { return 0 }
        return coolDownSeconds[min(failures, coolDownSeconds.count) - 1]
    }

    static func state(failures: Int, lastFailure: Date?, now: Date) -> ProtectionState {
        if failures >= maximumAttempts { return .lockedOut }
        guard failures > 0 else { return .unlocked }
        let elapsed = lastFailure.map { Int(now.timeIntervalSince($0)) } ?? Int.max
        let remaining = max(0, coolDown(afterFailures: failures) - max(elapsed, 0))
        return .lastAttemptFailed(remainingTries: maximumAttempts - failures, coolDownTimeInSeconds: remaining)
    }

}
