import Crypto
import _CryptoExtras
import Foundation
import UAF

/// The stored PIN verifier: never the PIN, only a salted scrypt hash, plus the attempt counter.
struct PinRecord: Codable, Sendable {
    var salt: [UInt8]
    var hash: [UInt8]
    var cost: Int
    var failures: Int
    var lastFailure: Date?
}

/// What the SDK knows about one of its authenticators: its metadata-level capabilities.
struct AuthenticatorDescriptor: Sendable {
    let aaid: String
    let signatureAlgorithm: SignatureAlgorithm
    let publicKeyEncoding: PublicKeyEncoding
    let capabilities: AuthenticatorCapabilities

    /// F1D0#1001, the PIN authenticator: ECDSA P-256 DER, X9.62 DER keys, surrogate attestation (seed 000 §4.3.2).
    static let pin = AuthenticatorDescriptor(
        aaid: AuthenticatorAaid.Pin.rawValue, signatureAlgorithm: .secp256r1ECDSASHA256DER, publicKeyEncoding: .eccX962DER,
        capabilities: AuthenticatorCapabilities(
            aaid: AuthenticatorAaid.Pin.rawValue, authenticatorVersion: 1, userVerification: .passcode, keyProtection: .software,
            matcherProtection: .software, attachmentHint: .internal, tcDisplay: .any,
            authenticationAlgorithms: [.secp256r1ECDSASHA256DER], assertionScheme: AssertionScheme.uafV1TLV,
            attestationTypes: [AttestationType.basicSurrogate.rawValue]))
}

/// The PIN authenticator's user verification (the ASM part; key use is in ``UAFAuthenticatorEngine``).
struct PinVerifierStore: Sendable {
    static let hashCost = 1 << 14
    let state: LocalState

    static func entry(_ username: Username) -> String { "pin/\(username)" }

    static func hash(_ pin: String, salt: [UInt8], cost: Int) throws -> [UInt8] {
        try KDF.Scrypt.deriveKey(from: Array(pin.utf8), salt: salt, outputByteCount: 32, rounds: cost, blockSize: 8, parallelism: 1)
            .withUnsafeBytes { Array($0) }
    }

    func enroll(username: Username, pin: String) async throws {
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let record = PinRecord(salt: salt, hash: try Self.hash(pin, salt: salt, cost: Self.hashCost), cost: Self.hashCost, failures: 0, lastFailure: nil)
        try await state.setSecret(record, Self.entry(username))
    }

    func isEnrolled(_ username: Username) async throws -> Bool { try await state.secret(PinRecord.self, Self.entry(username)) != nil }

    func remove(username: Username) async throws { try await state.removeSecret(Self.entry(username)) }

    func status(username: Username, now: Date) async throws -> PinAuthenticatorProtectionStatus {
        guard let record = try await state.secret(PinRecord.self, Self.entry(username)) else { return .Unlocked }
        return CoolDownPolicy.status(failures: record.failures, lastFailure: record.lastFailure, now: now)
    }

    enum Outcome: Equatable {
        case verified
        /// Wrong PIN, or an attempt during a cool-down (not counted), with the new status.
        case rejected(PinAuthenticatorProtectionStatus)
        case lockedOut
        case notEnrolled
    }

    /// Checks `pin`. An attempt during a cool-down is refused without being checked or counted; a wrong PIN is
    /// counted durably before the answer is given, so killing the app cannot reset the counter.
    func verify(username: Username, pin: String, now: Date) async throws -> Outcome {
        guard var record = try await state.secret(PinRecord.self, Self.entry(username)) else { return .notEnrolled }
        let status = CoolDownPolicy.status(failures: record.failures, lastFailure: record.lastFailure, now: now)
        switch status {
        case .LockedOut: return .lockedOut
        case .LastAttemptFailed(_, let coolDown) where coolDown > 0: return .rejected(status)
        default: break
        }
        let candidate = try Self.hash(pin, salt: record.salt, cost: record.cost)
        // Constant-time comparison.
        let matches = candidate.count == record.hash.count && zip(candidate, record.hash).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
        if matches {
            if record.failures != 0 {
                record.failures = 0; record.lastFailure = nil
                try await state.setSecret(record, Self.entry(username))
            }
            return .verified
        }
        record.failures += 1
        record.lastFailure = now
        try await state.setSecret(record, Self.entry(username))
        let newStatus = CoolDownPolicy.status(failures: record.failures, lastFailure: now, now: now)
        return newStatus == .LockedOut ? .lockedOut : .rejected(newStatus)
    }
}
