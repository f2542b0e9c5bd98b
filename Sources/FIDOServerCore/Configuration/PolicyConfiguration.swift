import Foundation
import UAF

extension ServerConfiguration {
    /// A named set of UAF policies (nevisFIDO's "dynamic policy"): a request whose context names it in `policy` offers
    /// the client its policy for the operation. The set named `default` serves requests that name none. An operation
    /// the set leaves out falls back to the `default` set's, then to the built-in policy (every authenticator the
    /// metadata describes; for a step-up, the user's keys). A transaction falls back to the set's `authentication`
    /// policy first, and is always narrowed to authenticators with a display.
    ///
    /// Criteria are written as the spec allows them (uaf-spec §1.5): beside `aaid` only `attachmentHint`,
    /// `authenticatorVersion` and `exts`; `keyIDs` are the server's to add (the user's own keys for a step-up, the user's
    /// registered keys to `disallowed` at registration).
    public struct NamedPolicy: Codable, Sendable, Equatable {
        public var registration: Policy?
        public var authentication: Policy?
        public var transaction: Policy?
        /// What the set asks of the app (``AppAttestationModes``); an operation it leaves out follows the `default`
        /// set's, then `off`.
        public var appAttestation: AppAttestationModes?

        public init(
            registration: Policy? = nil, authentication: Policy? = nil, transaction: Policy? = nil, appAttestation: AppAttestationModes? = nil
        ) {
            self.registration = registration
            self.authentication = authentication
            self.transaction = transaction
            self.appAttestation = appAttestation
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case registration, authentication, transaction, appAttestation }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            registration = try c.decodeIfPresent(ConfiguredPolicy.self, forKey: .registration)?.policy
            authentication = try c.decodeIfPresent(ConfiguredPolicy.self, forKey: .authentication)?.policy
            transaction = try c.decodeIfPresent(ConfiguredPolicy.self, forKey: .transaction)?.policy
            appAttestation = try c.decodeIfPresent(AppAttestationModes.self, forKey: .appAttestation)
        }

        /// Names are what a context carries: short, printable, unambiguous in a log line.
        static func isValidName(_ name: String) -> Bool {
            (1...64).contains(name.utf8.count)
                && name.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
        }

        func validate(name: String) throws {
            guard Self.isValidName(name) else {
                throw ConfigurationError.invalid("policies: \"\(name)\" is not a policy name (1...64 of A-Z a-z 0-9 . _ -)")
            }
            guard registration != nil || authentication != nil || transaction != nil || appAttestation != nil else {
                throw ConfigurationError.invalid("policies.\(name) sets none of registration, authentication, transaction, appAttestation")
            }
            for (operation, policy) in [("registration", registration), ("authentication", authentication), ("transaction", transaction)] {
                guard let policy else { continue }
                try Self.validate(policy, at: "policies.\(name).\(operation)")
            }
        }

        /// A configured policy must be one a conforming client reads as meant: a criterion the spec does not allow
        /// could be matched differently by every client, and an empty one matches every authenticator.
        static func validate(_ policy: Policy, at path: String) throws {
            guard !policy.accepted.isEmpty else { throw ConfigurationError.invalid("\(path).accepted is empty: it accepts no authenticator") }
            for (i, combination) in policy.accepted.enumerated() {
                guard !combination.isEmpty else { throw ConfigurationError.invalid("\(path).accepted[\(i)] is empty") }
                for (j, criteria) in combination.enumerated() { try validate(criteria, at: "\(path).accepted[\(i)][\(j)]") }
            }
            for (j, criteria) in (policy.disallowed ?? []).enumerated() { try validate(criteria, at: "\(path).disallowed[\(j)]") }
        }

        static func validate(_ criteria: MatchCriteria, at path: String) throws {
            guard criteria != MatchCriteria() else { throw ConfigurationError.invalid("\(path) is empty: it matches every authenticator") }
            let besideAAID = criteria.fieldsNotAllowedBesideAAID
            guard besideAAID.isEmpty else {
                throw ConfigurationError.invalid(
                    "\(path): \(besideAAID.joined(separator: ", ")) may not accompany aaid (uaf-spec §1.5); name the AAIDs alone, or describe the authenticators without aaid"
                )
            }
            guard criteria.keyIDs == nil else {
                throw ConfigurationError.invalid("\(path): keyIDs are added by the server (the user's own keys), not configured")
            }
            if let aaid = criteria.aaid {
                guard !aaid.isEmpty else { throw ConfigurationError.invalid("\(path).aaid is empty") }
                if let bad = aaid.first(where: { !AAID.isValid($0) }) {
                    throw ConfigurationError.invalid("\(path).aaid: \"\(bad)\" is not an AAID (VVVV#MMMM)")
                }
            }
            if let vendorID = criteria.vendorID {
                guard !vendorID.isEmpty else { throw ConfigurationError.invalid("\(path).vendorID is empty") }
                if let bad = vendorID.first(where: { $0.utf8.count != 4 || !$0.utf8.allSatisfy(\.isASCIIHexDigit) }) {
                    throw ConfigurationError.invalid("\(path).vendorID: \"\(bad)\" is not 4 hexadecimal digits")
                }
            }
            for (name, list) in [
                ("authenticationAlgorithms", criteria.authenticationAlgorithms.map { $0.map(String.init) }),
                ("assertionSchemes", criteria.assertionSchemes), ("attestationTypes", criteria.attestationTypes.map { $0.map(String.init) }),
            ] {
                if let list, list.isEmpty { throw ConfigurationError.invalid("\(path).\(name) is empty: it matches no authenticator") }
            }
        }
    }
}

/// A configured policy, read refusing any key UAF does not define, at every level: a misspelt `userVerfication`
/// would otherwise drop its constraint and widen the policy without a word.
private struct ConfiguredPolicy: Decodable {
    let policy: Policy

    enum CodingKeys: String, CodingKey, CaseIterable { case accepted, disallowed }

    init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let accepted = try c.decode([[ConfiguredCriteria]].self, forKey: .accepted)
        let disallowed = try c.decodeIfPresent([ConfiguredCriteria].self, forKey: .disallowed)
        policy = Policy(accepted: accepted.map { $0.map(\.criteria) }, disallowed: disallowed?.map(\.criteria))
    }
}

private struct ConfiguredCriteria: Decodable {
    let criteria: MatchCriteria

    init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(MatchCriteria.CodingKeys.self)
        criteria = try MatchCriteria(from: decoder)
    }
}

private extension UInt8 {
    var isASCIIAlphanumeric: Bool { (48...57).contains(self) || (65...90).contains(self) || (97...122).contains(self) }
    var isASCIIHexDigit: Bool { (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self) }
}
