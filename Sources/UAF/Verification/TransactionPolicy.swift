/// What a relying party offers for a transaction: the policy it sends, read against its metadata.
extension Policy {
    /// Every display a transaction can be confirmed on (TRANSACTION_CONFIRMATION_DISPLAY_*, FIDO Registry §3.5).
    public static let anyTransactionDisplay: UInt16 = 0x001F

    /// This policy for a request that carries transactions, asking only for authenticators that can show what the
    /// user confirms (uaf-spec §1.5). A criterion naming AAIDs keeps those whose metadata has a display (`tcDisplay`
    /// may not accompany `aaid`), and an AND-combination that loses a criterion is dropped; any other criterion asks
    /// for a display with `tcDisplay`, unless it names one.
    public func askingForTransactionDisplay(metadata: UAFMetadata) -> Policy {
        var policy = self
        policy.accepted = accepted.compactMap { set in
            var narrowed: [MatchCriteria] = []
            for var criteria in set {
                if let aaids = criteria.aaid {
                    let showing = aaids.filter { (metadata.statement(for: $0)?.tcDisplay ?? 0) != 0 }
                    guard !showing.isEmpty else { return nil }
                    criteria.aaid = showing
                } else if criteria.tcDisplay == nil {
                    criteria.tcDisplay = Self.anyTransactionDisplay
                }
                narrowed.append(criteria)
            }
            return narrowed
        }
        return policy
    }
}
