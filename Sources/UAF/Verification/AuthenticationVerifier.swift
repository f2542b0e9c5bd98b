import Crypto
import Foundation
import Primitives

/// What the server issued for an authentication.
public struct IssuedAuthentication: Sendable {
    public var challenge: String
    public var policy: Policy
    /// The transactions sent for confirmation, if any.
    public var transactions: [Transaction]
    /// The user the request was limited to (step-up), or nil for a usernameless request.
    public var username: String?

    public init(challenge: String, policy: Policy, transactions: [Transaction] = [], username: String? = nil) {
        self.challenge = challenge
        self.policy = policy
        self.transactions = transactions
        self.username = username
    }
}

/// A stored registration, as the verifier needs it.
public struct RegisteredKey: Sendable, Hashable {
    public var aaid: String
    public var keyID: String
    public var username: String
    public var publicKey: [UInt8]
    public var publicKeyEncoding: PublicKeyEncoding
    public var signCounter: UInt32

    public init(aaid: String, keyID: String, username: String, publicKey: [UInt8], publicKeyEncoding: PublicKeyEncoding, signCounter: UInt32) {
        self.aaid = aaid
        self.keyID = keyID
        self.username = username
        self.publicKey = publicKey
        self.publicKeyEncoding = publicKeyEncoding
        self.signCounter = signCounter
    }
}

/// An authentication assertion that passed verification.
public struct VerifiedAuthentication: Sendable, Hashable {
    public var aaid: String
    public var keyID: String
    public var username: String
    /// The counter to store (Authentication step 7).
    public var signCounter: UInt32
    /// The stored counter this assertion was compared against: the value a compare-and-set update must still
    /// find, so two concurrent responses cannot both advance it.
    public var previousSignCounter: UInt32
    public var mode: AuthenticationMode
    /// The confirmed transaction's content hash (empty without a transaction).
    public var transactionContentHash: [UInt8]

    public init(
        aaid: String, keyID: String, username: String, signCounter: UInt32, previousSignCounter: UInt32,
        mode: AuthenticationMode, transactionContentHash: [UInt8]
    ) {
        self.aaid = aaid
        self.keyID = keyID
        self.username = username
        self.signCounter = signCounter
        self.previousSignCounter = previousSignCounter
        self.mode = mode
        self.transactionContentHash = transactionContentHash
    }
}

/// Verifies AuthenticationResponses (uaf-spec §5 "Both operations" and "Authentication").
public struct AuthenticationVerifier: Sendable {
    public var configuration: RelyingPartyConfiguration
    public var metadata: UAFMetadata

    public init(configuration: RelyingPartyConfiguration, metadata: UAFMetadata) {
        self.configuration = configuration
        self.metadata = metadata
    }

    /// Verifies `response`.
    /// - Parameters:
    ///   - response: the device's AuthenticationResponse.
    ///   - issued: what the server issued: the challenge, the policy, the transactions and the username.
    ///   - now: the time the Metadata Service's status reports are read at.
    ///   - lookup: the stored registration for (AAID, base64url KeyID), whoever it belongs to. Errors it throws
    ///     (storage failures) are passed through; every rejection is a ``UAFVerificationError``.
    public func verify(
        _ response: AuthenticationResponse, issued: IssuedAuthentication, now: Date = Date(),
        lookup: (String, String) async throws -> RegisteredKey?
    ) async throws -> [VerifiedAuthentication] {
        // Steps 1 and 3.
        let expectedHash = try CommonChecks.checkHeaderAndFinalChallenge(
            header: response.header, expectedOp: .authentication, fcParams: response.fcParams,
            assertionCount: response.assertions.count, issuedChallenge: issued.challenge, configuration: configuration)

        var results: [VerifiedAuthentication] = []
        var used: [AuthenticatorCapabilities] = []
        var username: String?
        for item in response.assertions {
            // Step 4. Scheme and strict TLV parsing.
            try CommonChecks.checkExtensions(item.exts, configuration: configuration)
            let bytes = try CommonChecks.assertionBytes(scheme: item.assertionScheme, assertion: item.assertion)
            let assertion: AuthenticationAssertion
            do { assertion = try AuthenticationAssertion(bytes: bytes) } catch { throw UAFVerificationError.malformedAssertion(error) }
            let signed = assertion.signedData
            // Steps 5 and 6. Metadata, algorithm, version, final challenge hash.
            let entry = try CommonChecks.checkAuthenticator(
                aaid: signed.aaid, algorithm: signed.signatureAlgorithm, version: signed.authenticatorVersion,
                finalChallengeHash: signed.finalChallengeHash, expectedHash: expectedHash, metadata: metadata, configuration: configuration)
            // A revoked authenticator, or one whose user keys are compromised, authenticates no one (1493). Its
            // status is public (the Metadata Service's), so deciding it before the key's lookup tells a caller nothing.
            if let report = metadata.authenticationRefusal(aaid: signed.aaid, at: now) {
                throw UAFVerificationError.authenticatorRevoked(aaid: signed.aaid, status: report.status)
            }
            // Authentication step 1. The key must be registered (1481).
            let keyID = Base64URL.encode(signed.keyID)
            guard let registered = try await lookup(signed.aaid, keyID) else { throw UAFVerificationError.unknownKeyID }
            // Authentication step 2. Signature over the whole SIGNED_DATA TLV with the stored key. It comes before
            // the owner check of step 1, so that only the key's holder learns the key belongs to someone else: a
            // caller replaying or guessing KeyIDs gets 1498 for each, never 1401 as a sign that the key exists.
            guard let key = UAFPublicKey(bytes: registered.publicKey, encoding: registered.publicKeyEncoding),
                SignatureSuite.isCompatible(signed.signatureAlgorithm, with: key),
                SignatureSuite.verify(signature: assertion.signature, over: assertion.signedBytes, algorithm: signed.signatureAlgorithm, key: key)
            else {
                throw UAFVerificationError.signatureInvalid
            }
            // Authentication step 1, the owner: the user the request was for, and one user across assertions (1401).
            if let expected = issued.username ?? username, registered.username != expected {
                throw UAFVerificationError.keyIDBelongsToAnotherUser
            }
            username = registered.username
            // Authentication step 3. Counter check: 0 means "no counter" where the relying party allows it for this
            // authenticator; otherwise it must increase.
            if signed.signCounter == 0, !configuration.zeroCounters.allows(aaid: signed.aaid) {
                throw UAFVerificationError.counterNotKept
            }
            if configuration.counterPolicy == .reject, signed.signCounter != 0 || registered.signCounter != 0,
                signed.signCounter <= registered.signCounter
            {
                throw UAFVerificationError.counterRegression(stored: registered.signCounter, received: signed.signCounter)
            }
            // Authentication step 4. Nonce length.
            guard signed.authenticatorNonce.count >= configuration.minimumNonceLength else {
                throw UAFVerificationError.nonceTooShort(signed.authenticatorNonce.count)
            }
            // Authentication step 5. Transaction: mode 0x02 with the hash of one transaction sent, else mode 0x01
            // with an empty hash.
            let mode = try checkTransaction(signed, issued: issued)
            // A confirmation must come from an authenticator that can show the transaction: its metadata names a
            // display (tcDisplay), whatever policy the client was sent.
            if mode == .transactionConfirmed, entry.statement.tcDisplay == 0 {
                throw UAFVerificationError.transactionNotDisplayable(signed.aaid)
            }
            guard !results.contains(where: { AAID.equal($0.aaid, signed.aaid) }) else {
                throw UAFVerificationError.duplicateAssertion
            }
            var capabilities = entry.capabilities
            capabilities.keyIDs = [keyID]
            used.append(capabilities)
            results.append(
                VerifiedAuthentication(
                    aaid: signed.aaid, keyID: keyID, username: registered.username,
                    signCounter: signed.signCounter, previousSignCounter: registered.signCounter,
                    mode: mode, transactionContentHash: signed.transactionContentHash))
        }
        // Authentication step 6. The authenticators used satisfy the policy sent.
        guard PolicyMatcher.isSatisfied(issued.policy, by: used) else { throw UAFVerificationError.policyNotSatisfied }
        return results
    }

    private func checkTransaction(_ signed: SignedData, issued: IssuedAuthentication) throws(UAFVerificationError) -> AuthenticationMode {
        if issued.transactions.isEmpty {
            guard signed.authenticationMode == AuthenticationMode.userVerified.rawValue else {
                throw UAFVerificationError.transactionMismatch("mode \(signed.authenticationMode) without a transaction")
            }
            guard signed.transactionContentHash.isEmpty else {
                throw UAFVerificationError.transactionMismatch("a content hash without a transaction")
            }
            return .userVerified
        }
        guard signed.authenticationMode == AuthenticationMode.transactionConfirmed.rawValue else {
            throw UAFVerificationError.transactionMismatch("a transaction was sent but mode is \(signed.authenticationMode)")
        }
        // TransactionContentHash = SHA-256 over the base64url-decoded content (uaf-spec §1.3).
        let hashes = issued.transactions.compactMap(\.contentHash)
        guard hashes.contains(signed.transactionContentHash) else {
            throw UAFVerificationError.transactionMismatch("the content hash matches no transaction sent")
        }
        return .transactionConfirmed
    }
}
