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

    public init(
        aaid: [String]? = nil, vendorID: [String]? = nil, keyIDs: [String]? = nil, userVerification: UInt32? = nil,
        keyProtection: UInt16? = nil, matcherProtection: UInt16? = nil, attachmentHint: UInt32? = nil,
        tcDisplay: UInt16? = nil, authenticationAlgorithms: [UInt16]? = nil, assertionSchemes: [String]? = nil,
        attestationTypes: [UInt16]? = nil, authenticatorVersion: UInt16? = nil, exts: [Extension]? = nil
    ) {
        self.aaid = aaid
        self.vendorID = vendorID
        self.keyIDs = keyIDs
        self.userVerification = userVerification
        self.keyProtection = keyProtection
        self.matcherProtection = matcherProtection
        self.attachmentHint = attachmentHint
        self.tcDisplay = tcDisplay
        self.authenticationAlgorithms = authenticationAlgorithms
        self.assertionSchemes = assertionSchemes
        self.attestationTypes = attestationTypes
        self.authenticatorVersion = authenticatorVersion
        self.exts = exts
    }
}

extension MatchCriteria {
    package enum CodingKeys: String, CodingKey, CaseIterable {
        case aaid, vendorID, keyIDs, userVerification, keyProtection, matcherProtection, attachmentHint, tcDisplay,
            authenticationAlgorithms, assertionSchemes, attestationTypes, authenticatorVersion, exts
    }

    /// The same JSON as the synthesized conformance (absent or `null` is nil; unknown keys are ignored), but only the
    /// keys present are visited. A criteria set usually names two of its thirteen fields (a metadata-wide policy names
    /// each authenticator's AAID and algorithm), and the synthesized code made a generic container call for every one
    /// of the thirteen: with ten authenticators that was a good part of every request the server issued and every
    /// request a client read.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        for key in container.allKeys {
            switch key {
            case .aaid: aaid = try container.decodeIfPresent([String].self, forKey: key)
            case .vendorID: vendorID = try container.decodeIfPresent([String].self, forKey: key)
            case .keyIDs: keyIDs = try container.decodeIfPresent([String].self, forKey: key)
            case .userVerification: userVerification = try container.decodeIfPresent(UInt32.self, forKey: key)
            case .keyProtection: keyProtection = try container.decodeIfPresent(UInt16.self, forKey: key)
            case .matcherProtection: matcherProtection = try container.decodeIfPresent(UInt16.self, forKey: key)
            case .attachmentHint: attachmentHint = try container.decodeIfPresent(UInt32.self, forKey: key)
            case .tcDisplay: tcDisplay = try container.decodeIfPresent(UInt16.self, forKey: key)
            case .authenticationAlgorithms: authenticationAlgorithms = try container.decodeIfPresent([UInt16].self, forKey: key)
            case .assertionSchemes: assertionSchemes = try container.decodeIfPresent([String].self, forKey: key)
            case .attestationTypes: attestationTypes = try container.decodeIfPresent([UInt16].self, forKey: key)
            case .authenticatorVersion: authenticatorVersion = try container.decodeIfPresent(UInt16.self, forKey: key)
            case .exts: exts = try container.decodeIfPresent([Extension].self, forKey: key)
            }
        }
    }

    /// Writes the fields that are set, as the synthesized conformance does, without a call for each absent one.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let aaid { try container.encode(aaid, forKey: .aaid) }
        if let vendorID { try container.encode(vendorID, forKey: .vendorID) }
        if let keyIDs { try container.encode(keyIDs, forKey: .keyIDs) }
        if let userVerification { try container.encode(userVerification, forKey: .userVerification) }
        if let keyProtection { try container.encode(keyProtection, forKey: .keyProtection) }
        if let matcherProtection { try container.encode(matcherProtection, forKey: .matcherProtection) }
        if let attachmentHint { try container.encode(attachmentHint, forKey: .attachmentHint) }
        if let tcDisplay { try container.encode(tcDisplay, forKey: .tcDisplay) }
        if let authenticationAlgorithms { try container.encode(authenticationAlgorithms, forKey: .authenticationAlgorithms) }
        if let assertionSchemes { try container.encode(assertionSchemes, forKey: .assertionSchemes) }
        if let attestationTypes { try container.encode(attestationTypes, forKey: .attestationTypes) }
        if let authenticatorVersion { try container.encode(authenticatorVersion, forKey: .authenticatorVersion) }
        if let exts { try container.encode(exts, forKey: .exts) }
    }
}

extension MatchCriteria {
    /// The fields set beside `aaid` that the spec does not allow there (uaf-spec §1.5: only `keyIDs`,
    /// `attachmentHint`, `authenticatorVersion` and `exts` may accompany it), by JSON name; empty when the criterion
    /// is valid. A server writes only valid criteria; a client reads any (some servers bend the rule).
    public var fieldsNotAllowedBesideAAID: [String] {
        guard aaid != nil else { return [] }
        let present: [(String, Bool)] = [
            ("vendorID", vendorID != nil), ("userVerification", userVerification != nil), ("keyProtection", keyProtection != nil),
            ("matcherProtection", matcherProtection != nil), ("tcDisplay", tcDisplay != nil),
            ("authenticationAlgorithms", authenticationAlgorithms != nil), ("assertionSchemes", assertionSchemes != nil),
            ("attestationTypes", attestationTypes != nil),
        ]
        return present.filter(\.1).map(\.0)
    }
}

/// Policy: `accepted` is an OR of AND-combinations; `disallowed` excludes (uaf-spec §1.5).
public struct Policy: Codable, Hashable, Sendable {
    public var accepted: [[MatchCriteria]]
    public var disallowed: [MatchCriteria]?

    public init(accepted: [[MatchCriteria]], disallowed: [MatchCriteria]? = nil) {
        self.accepted = accepted
        self.disallowed = disallowed
    }
}
