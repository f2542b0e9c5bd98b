import Crypto
import Foundation
import Primitives
import UAF
import _CryptoExtras

/// The stored verifier of a PIN or password: never the secret, only a salted scrypt hash, plus the attempt
/// counter of the cool-down policy.
package struct KnowledgeRecord: Codable, Sendable {
    var salt: [UInt8]
    var hash: [UInt8]
    var cost: Int
    var failures: Int
    var lastFailure: Date?
}

/// The PIN and password authenticators' user verification: one salted, memory-hard verifier per user and factor,
/// one cool-down table and one lockout (``CoolDownPolicy``).
package struct KnowledgeVerifierStore: Sendable {
    package enum Factor: String, Sendable { case pin, password }

    /// scrypt N. 2^14 with r = 8 takes 16 MiB and tens of milliseconds: slow for a brute-forcer with the file, quick
    /// enough for a user.
    static let hashCost = 1 << 14
    let state: LocalState
    let factor: Factor

    package func entry(_ username: Username) -> String { "\(factor.rawValue)/\(username)" }

    static func hash(_ secret: String, salt: [UInt8], cost: Int) throws -> [UInt8] {
        try KDF.Scrypt.deriveKey(from: Array(secret.utf8), salt: salt, outputByteCount: 32, rounds: cost, blockSize: 8, parallelism: 1)
            .withUnsafeBytes { Array($0) }
    }

    /// A fresh verifier for `secret` (stored by the caller, in the same commit as what it protects).
    package static func record(for secret: String) throws -> KnowledgeRecord {
        let salt = SecureRandom.bytes(16)
        return KnowledgeRecord(salt: salt, hash: try hash(secret, salt: salt, cost: hashCost), cost: hashCost, failures: 0, lastFailure: nil)
    }

    func record(_ username: Username) async throws -> KnowledgeRecord? { try await state.secret(KnowledgeRecord.self, entry(username)) }

    package func state(username: Username, now: Date) async throws -> ProtectionState? {
        guard let record = try await record(username) else { return nil }
        return CoolDownPolicy.state(failures: record.failures, lastFailure: record.lastFailure, now: now)
    }

    package enum Outcome: Equatable {
        case verified
        /// A wrong secret (counted), with the new state.
        case rejected(ProtectionState)
        /// An attempt during a cool-down: ignored, not checked and not counted.
        case coolingDown(ProtectionState)
        case lockedOut
        case notEnrolled
    }

    /// Checks `secret`. An attempt during a cool-down is refused without being checked or counted; a wrong secret
    /// is counted durably before the answer is given, so killing the app cannot reset the counter.
    package func verify(username: Username, secret: String, now: Date) async throws -> Outcome {
        // Read, checked and counted as one step: parallel attempts are counted one after another, and one that
        // meets the cool-down another attempt started is refused uncounted.
        try await state.updateSecret(KnowledgeRecord.self, entry(username)) { stored in
            guard var record = stored else { return (nil, .notEnrolled) }
            let current = CoolDownPolicy.state(failures: record.failures, lastFailure: record.lastFailure, now: now)
            switch current {
            case .lockedOut: return (nil, .lockedOut)
            case .lastAttemptFailed(_, let coolDown) where coolDown > 0: return (nil, .coolingDown(current))
            default: break
            }
            let candidate = try Self.hash(secret, salt: record.salt, cost: record.cost)
            let matches = ConstantTime.equal(candidate, record.hash)
            if matches {
                guard record.failures != 0 else { return (nil, .verified) }
                record.failures = 0
                record.lastFailure = nil
                return (record, .verified)
            }
            record.failures += 1
            record.lastFailure = now
            let newState = CoolDownPolicy.state(failures: record.failures, lastFailure: now, now: now)
            return (record, newState == .lockedOut ? .lockedOut : .rejected(newState))
        }
    }
}
