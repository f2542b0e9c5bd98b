/// What policy matching knows about one authenticator (from its metadata, plus the keys it holds).
public struct AuthenticatorCapabilities: Hashable, Sendable {
    public var aaid: String
    public var authenticatorVersion: UInt16
    public var userVerification: UserVerificationMethods
    public var keyProtection: KeyProtection
    public var matcherProtection: MatcherProtection
    public var attachmentHint: AttachmentHint
    public var tcDisplay: TransactionConfirmationDisplay
    public var authenticationAlgorithms: Set<SignatureAlgorithm>
    public var assertionScheme: String
    public var attestationTypes: Set<UInt16>
    /// base64url KeyIDs this authenticator holds (for Auth/Dereg matching).
    public var keyIDs: Set<String>

    public init(
        aaid: String, authenticatorVersion: UInt16, userVerification: UserVerificationMethods, keyProtection: KeyProtection,
        matcherProtection: MatcherProtection, attachmentHint: AttachmentHint, tcDisplay: TransactionConfirmationDisplay,
        authenticationAlgorithms: Set<SignatureAlgorithm>, assertionScheme: String, attestationTypes: Set<UInt16>,
        keyIDs: Set<String> = []
    ) {
        self.aaid = aaid
        self.authenticatorVersion = authenticatorVersion
        self.userVerification = userVerification
        self.keyProtection = keyProtection
        self.matcherProtection = matcherProtection
        self.attachmentHint = attachmentHint
        self.tcDisplay = tcDisplay
        self.authenticationAlgorithms = authenticationAlgorithms
        self.assertionScheme = assertionScheme
        self.attestationTypes = attestationTypes
        self.keyIDs = keyIDs
    }
}

extension MatchCriteria {
    /// Whether one authenticator satisfies this criterion (uaf-spec §1.5 matching rules): list fields match
    /// "any of", bit fields match when they share a bit, `authenticatorVersion` is a minimum.
    public func matches(_ a: AuthenticatorCapabilities) -> Bool {
        if let aaid, !aaid.contains(where: { AAID.equal($0, a.aaid) }) { return false }
        if let vendorID, !vendorID.contains(where: { AAID.equal($0, String(a.aaid.prefix(4))) }) { return false }
        if let keyIDs, a.keyIDs.isDisjoint(with: keyIDs) { return false }
        if let userVerification {
            let wanted = UserVerificationMethods(rawValue: userVerification)
            if wanted.contains(.all) {
                // USER_VERIFY_ALL: the authenticator must support every listed method.
                let methods = wanted.subtracting(.all)
                if !a.userVerification.isSuperset(of: methods) { return false }
            } else if a.userVerification.isDisjoint(with: wanted) {
                return false
            }
        }
        if let keyProtection, a.keyProtection.rawValue & keyProtection == 0 { return false }
        if let matcherProtection, a.matcherProtection.rawValue & matcherProtection == 0 { return false }
        if let attachmentHint, a.attachmentHint.rawValue & attachmentHint == 0 { return false }
        if let tcDisplay, a.tcDisplay.rawValue & tcDisplay == 0 { return false }
        if let authenticationAlgorithms,
            a.authenticationAlgorithms.isDisjoint(with: authenticationAlgorithms.map(SignatureAlgorithm.init(rawValue:)))
        {
            return false
        }
        if let assertionSchemes, !assertionSchemes.contains(a.assertionScheme) { return false }
        if let attestationTypes, a.attestationTypes.isDisjoint(with: attestationTypes) { return false }
        if let authenticatorVersion, a.authenticatorVersion < authenticatorVersion { return false }
        return true
    }
}

/// Policy evaluation (uaf-spec §1.5): `accepted` is an OR over AND-combinations in which each criterion must be
/// met by a different authenticator; any authenticator matching a `disallowed` entry is excluded.
public enum PolicyMatcher {
    /// Whether `authenticator` is excluded by the policy's `disallowed` list.
    public static func isDisallowed(_ authenticator: AuthenticatorCapabilities, by policy: Policy) -> Bool {
        (policy.disallowed ?? []).contains { $0.matches(authenticator) }
    }

    /// The combinations of `available` authenticators that satisfy the policy, one per satisfiable `accepted`
    /// entry, in the policy's order. Each combination lists one distinct authenticator per criterion.
    public static func matchingCombinations(_ policy: Policy, available: [AuthenticatorCapabilities]) -> [[AuthenticatorCapabilities]] {
        let allowed = available.filter { !isDisallowed($0, by: policy) }
        return policy.accepted.compactMap { combination in assign(combination[...], from: allowed, used: []) }
    }

    /// Whether exactly the authenticators `used` (one assertion each) satisfy one accepted combination, and none
    /// of them is disallowed. This is the server-side check of uaf-spec §5 ("check against the policy sent"), and
    /// with a single authenticator it is what a client offers for an operation that sends one assertion.
    public static func isSatisfied(_ policy: Policy, by used: [AuthenticatorCapabilities]) -> Bool {
        guard !used.contains(where: { isDisallowed($0, by: policy) }) else { return false }
        return policy.accepted.contains { combination in
            combination.count == used.count && assign(combination[...], from: used, used: []) != nil
        }
    }

    private static func assign(
        _ criteria: ArraySlice<MatchCriteria>, from candidates: [AuthenticatorCapabilities],
        used: Set<Int>
    ) -> [AuthenticatorCapabilities]? {
        guard let first = criteria.first else { return [] }
        for (index, candidate) in candidates.enumerated() where !used.contains(index) && first.matches(candidate) {
            if let rest = assign(criteria.dropFirst(), from: candidates, used: used.union([index])) {
                return [candidate] + rest
            }
        }
        return nil
    }
}
