import Foundation
import NIOConcurrencyHelpers
import UAF

/// The UAF policy a request offers: the configured policy its context names in `policy`
/// (``ServerConfiguration/NamedPolicy``), or the built-in one. Every criterion the server writes is one the spec
/// allows (uaf-spec §1.5: nothing but `keyIDs`, `attachmentHint`, `authenticatorVersion` and `exts` beside `aaid`).
struct PolicyChoice: Sendable {
    let named: [String: ServerConfiguration.NamedPolicy]

    enum Operation { case registration, authentication, transaction }

    /// The configured policy for `operation` in the set `name` names (nil: the `default` set), falling back to the
    /// `default` set's and, for a transaction, to the authentication policy; nil when none is configured and the
    /// built-in policy applies. A name that is not configured is the caller's error, refused rather than served with
    /// the default: a relying party that asks for a strict policy must never silently get a looser one.
    func configured(_ operation: Operation, name: String?) throws -> Policy? {
        try configuredSet(operation, name: name)?.policy
    }

    /// ``configured(_:name:)`` with the name of the set it came from (`name`, or `default` when it fell back).
    func configuredSet(_ operation: Operation, name: String?) throws -> (name: String, policy: Policy)? {
        var sets: [(String, ServerConfiguration.NamedPolicy)] = []
        if let name {
            guard let set = named[name] else {
                throw ServiceFailure(.badRequest, "context.policy names no configured policy")
            }
            sets.append((name, set))
        }
        if let fallback = named["default"] { sets.append(("default", fallback)) }
        for (name, set) in sets {
            switch operation {
            case .registration: if let policy = set.registration { return (name, policy) }
            case .authentication: if let policy = set.authentication { return (name, policy) }
            case .transaction: if let policy = set.transaction ?? set.authentication { return (name, policy) }
            }
        }
        return nil
    }

    /// Whether any policy is configured: without one, step-up requests keep their one-statement path.
    var isEmpty: Bool { named.isEmpty }

    /// The built-in policy: every authenticator the metadata describes. One whose metadata accepts ECDSA P-256 DER,
    /// the algorithm the SDK and UAF clients sign with by default (server-api E.2: "the default and recommended"), is
    /// named by its AAID alone; the verifier holds the client's choice to the metadata's algorithms. One that does
    /// not (nevisFIDO's own Android statements name RSA only) must tell the client which algorithm to use, and the
    /// spec allows `authenticationAlgorithms` only without `aaid`: it is described by its vendor, its user
    /// verification and its algorithms instead.
    static func everyAuthenticator(_ metadata: UAFMetadata) -> Policy {
        Policy(accepted: metadata.all.map { [criteria(for: $0)] })
    }

    /// ``everyAuthenticator(_:)`` of the last metadata store asked about, kept until a reload brings another store.
    final class EveryAuthenticatorMemo: Sendable {
        private let last = NIOLockedValueBox<(store: Int, policy: Policy)?>(nil)

        func policy(for store: MetadataStore) -> Policy {
            if let last = last.withLockedValue({ $0 }), last.store == store.identity { return last.policy }
            let policy = PolicyChoice.everyAuthenticator(store.uaf)
            last.withLockedValue { $0 = (store.identity, policy) }
            return policy
        }
    }

    static func criteria(for statement: MetadataStatement) -> MatchCriteria {
        let algorithms = statement.supportedAlgorithms
        if algorithms.contains(.secp256r1ECDSASHA256DER) { return MatchCriteria(aaid: [statement.aaid]) }
        return MatchCriteria(
            vendorID: [String(statement.aaid.prefix(4))], userVerification: statement.userVerificationMethods.rawValue,
            authenticationAlgorithms: algorithms.map(\.rawValue).sorted())
    }

    /// A registration policy: `policy`'s accepted authenticators, with the user's registered keys added to
    /// `disallowed` (as in the spec's example) so a device does not register the same authenticator twice.
    static func registration(_ policy: Policy, existing: [RegistrationRecord]) -> Policy {
        let keys = Dictionary(grouping: existing, by: \.aaid).map { aaid, records in
            MatchCriteria(aaid: [aaid], keyIDs: records.map(\.keyID))
        }.sorted { ($0.aaid?.first ?? "") < ($1.aaid?.first ?? "") }
        let disallowed = (policy.disallowed ?? []) + keys
        return Policy(accepted: policy.accepted, disallowed: disallowed.isEmpty ? nil : disallowed)
    }

    /// A step-up policy under a configured `policy`: each criterion keeps the user's keys whose authenticator it
    /// matches (by the metadata and the key's own algorithm) and names them in `keyIDs`, so only this user's keys
    /// can answer. A combination with a criterion no key matches is dropped; nil when nothing is left.
    static func stepUp(_ policy: Policy, keys: [RegistrationRecord], metadata: UAFMetadata) -> Policy? {
        let accepted: [[MatchCriteria]] = policy.accepted.compactMap { combination in
            var narrowed: [MatchCriteria] = []
            for var criteria in combination {
                let matching = keys.filter { key in
                    guard var capabilities = metadata.statement(for: key.aaid)?.capabilities else { return false }
                    capabilities.authenticationAlgorithms = [key.signatureAlgorithm]
                    capabilities.keyIDs = [key.keyID]
                    return criteria.matches(capabilities)
                }
                guard !matching.isEmpty else { return nil }
                var seen = Set<String>()
                criteria.keyIDs = matching.map(\.keyID).filter { seen.insert($0).inserted }
                narrowed.append(criteria)
            }
            return narrowed
        }
        return accepted.isEmpty ? nil : Policy(accepted: accepted, disallowed: policy.disallowed)
    }
}
