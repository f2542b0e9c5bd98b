import Foundation
import UAF

/// An issued UAF request awaiting its response. Its id travels as `serverData`.
public struct ChallengeRecord: Sendable, Equatable {
    public var id: String
    public var operation: UAFOperation
    public var challenge: String
    public var username: String?
    /// JSON of the Policy sent.
    public var policy: Policy
    public var transactions: [Transaction]
    public var expiresAt: Date

    public init(id: String, operation: UAFOperation, challenge: String, username: String?, policy: Policy, transactions: [Transaction], expiresAt: Date) {
        self.id = id; self.operation = operation; self.challenge = challenge; self.username = username
        self.policy = policy; self.transactions = transactions; self.expiresAt = expiresAt
    }
}

/// A stored registration (uaf-spec §5, Registration step 4).
public struct RegistrationRecord: Sendable, Equatable {
    public var username: String
    public var aaid: String
    public var keyID: String
    public var publicKey: [UInt8]
    public var publicKeyEncoding: PublicKeyEncoding
    public var signatureAlgorithm: SignatureAlgorithm
    public var signCounter: UInt32
    public var registrationCounter: UInt32
    public var authenticatorVersion: UInt16
    public var attestationType: AttestationType
    public var createdAt: Date

    public init(_ verified: VerifiedRegistration, createdAt: Date) {
        username = verified.username; aaid = AAID.normalized(verified.aaid); keyID = verified.keyID
        publicKey = verified.publicKey; publicKeyEncoding = verified.publicKeyEncoding
        signatureAlgorithm = verified.signatureAlgorithm; signCounter = verified.signCounter
        registrationCounter = verified.registrationCounter; authenticatorVersion = verified.authenticatorVersion
        attestationType = verified.attestationType; self.createdAt = createdAt
    }

    public init(username: String, aaid: String, keyID: String, publicKey: [UInt8], publicKeyEncoding: PublicKeyEncoding,
                signatureAlgorithm: SignatureAlgorithm, signCounter: UInt32, registrationCounter: UInt32,
                authenticatorVersion: UInt16, attestationType: AttestationType, createdAt: Date) {
        self.username = username; self.aaid = aaid; self.keyID = keyID; self.publicKey = publicKey
        self.publicKeyEncoding = publicKeyEncoding; self.signatureAlgorithm = signatureAlgorithm
        self.signCounter = signCounter; self.registrationCounter = registrationCounter
        self.authenticatorVersion = authenticatorVersion; self.attestationType = attestationType; self.createdAt = createdAt
    }

    var registeredKey: RegisteredKey {
        RegisteredKey(aaid: aaid, keyID: keyID, username: username, publicKey: publicKey, publicKeyEncoding: publicKeyEncoding, signCounter: signCounter)
    }
}

public enum RepositoryError: Error, Equatable, CustomStringConvertible {
    /// (AAID, KeyID) is already registered.
    case duplicateRegistration
    /// The store failed; the message says how.
    case storage(String)

    public var description: String {
        switch self {
        case .duplicateRegistration: return "this (AAID, KeyID) is already registered"
        case .storage(let detail): return "storage failure: \(detail)"
        }
    }
}

/// All state a second server instance must see. Every implementation makes ``consumeChallenge(id:)`` and
/// ``updateSignCounter(aaid:keyID:from:to:)`` atomic, so two instances can never both accept one response.
public protocol Repository: Sendable {
    func insertChallenge(_ record: ChallengeRecord) async throws
    /// Removes and returns the challenge with `id` (once only), whether or not it has expired.
    func consumeChallenge(id: String) async throws -> ChallengeRecord?
    /// Removes challenges that expired before `date`; returns how many.
    func purgeChallenges(expiredBefore date: Date) async throws -> Int

    /// Inserts registrations all-or-nothing; throws ``RepositoryError/duplicateRegistration``.
    func insertRegistrations(_ records: [RegistrationRecord]) async throws
    func registration(aaid: String, keyID: String) async throws -> RegistrationRecord?
    func registrations(username: String) async throws -> [RegistrationRecord]
    /// Sets the counter only if it still is `from`; returns false if another request changed it first.
    func updateSignCounter(aaid: String, keyID: String, from: UInt32, to: UInt32) async throws -> Bool

    func close() async throws
}
