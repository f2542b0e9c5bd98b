/// MatchCriteria (uaf-spec §1.5). JSON names are exact, including the singular `aaid`, `vendorID`, `keyIDs`.
public struct MatchCriteria: Codable, Hashable, Sendable {
    public var aaid: [String]?
    public var vendorID: [String]?
    public var keyIDs: [String]?
    public var userVerification: UInt32?
    public var keyProtection: UInt16?
    public var matcherProtection: UInt16?
    public var attachmentHint: UInt32?
    public var tcDisplay: UInt16?
    public var authenticationAlgorithms: [UInt16]?
    public var assertionSchemes: [String]?
    public var attestationTypes: [UInt16]?
    public var authenticatorVersion: UInt16?
    public var exts: [Extension]?

    public init(aaid: [String]? = nil, vendorID: [String]? = nil, keyIDs: [String]? = nil, userVerification: UInt32? = nil,
                keyProtection: UInt16? = nil, matcherProtection: UInt16? = nil, attachmentHint: UInt32? = nil,
                tcDisplay: UInt16? = nil, authenticationAlgorithms: [UInt16]? = nil, assertionSchemes: [String]? = nil,
                attestationTypes: [UInt16]? = nil, authenticatorVersion: UInt16? = nil, exts: [Extension]? = nil) {
        self.aaid = aaid; self.vendorID = vendorID; self.keyIDs = keyIDs; self.userVerification = userVerification
        self.keyProtection = keyProtection; self.matcherProtection = matcherProtection; self.attachmentHint = attachmentHint
        self.tcDisplay = tcDisplay; self.authenticationAlgorithms = authenticationAlgorithms
        self.assertionSchemes = assertionSchemes; self.attestationTypes = attestationTypes
        self.authenticatorVersion = authenticatorVersion; self.exts = exts
    }
}

/// Policy: `accepted` is an OR of AND-combinations; `disallowed` excludes (uaf-spec §1.5).
public struct Policy: Codable, Hashable, Sendable {
    public var accepted: [[MatchCriteria]]
    public var disallowed: [MatchCriteria]?

    public init(accepted: [[MatchCriteria]], disallowed: [MatchCriteria]? = nil) {
        self.accepted = accepted; self.disallowed = disallowed
    }
}
