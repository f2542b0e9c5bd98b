import Foundation
import Primitives
import SQLKit
import UAF
import WireJSON

/// A UAF ceremony awaiting its answer: an issued UAF request (registration, authentication or transaction
/// confirmation), until its response consumes it. Its id travels as `serverData`. The server's one name for a pending
/// challenge in either protocol is a ceremony (``PasskeyCeremony`` is WebAuthn's), and `CeremonyCap` bounds how many
/// of a user's may wait. Stored in `uaf_requests` (table names stay as they shipped).
public struct UAFCeremony: Sendable, Equatable {
    public var id: String
    public var operation: UAFOperation
    public var challenge: String
    public var username: String?
    /// The Policy sent.
    public var policy: Policy
    public var transactions: [Transaction]
    public var expiresAt: Date
    /// The configured policy set the policy came from (``ServerConfiguration/NamedPolicy``); nil for the built-in
    /// policy. A login names it in its token (`policy`), so the relying party knows what the login was held to.
    public var policyName: String?
    /// What the request asked of the app (App attestation): `report` or `require`, as its header's extension said;
    /// nil when it asked nothing. The response is held to what was asked, whatever the configuration says by then.
    public var appAttestation: String?

    public init(
        id: String, operation: UAFOperation, challenge: String, username: String?, policy: Policy, transactions: [Transaction], expiresAt: Date,
        policyName: String? = nil, appAttestation: String? = nil
    ) {
        self.id = id
        self.operation = operation
        self.challenge = challenge
        self.username = username
        self.policy = policy
        self.transactions = transactions
        self.expiresAt = expiresAt
        self.policyName = policyName
        self.appAttestation = appAttestation
    }
}
