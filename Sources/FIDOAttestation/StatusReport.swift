import Foundation

/// An authenticator status of the FIDO Metadata Service (MDS3 §3.1.4, `AuthenticatorStatus`), kept as the string the
/// service writes, so a status added to the registry later loads and is ignored rather than refused.
public struct AuthenticatorStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let notFIDOCertified = AuthenticatorStatus(rawValue: "NOT_FIDO_CERTIFIED")
    public static let fidoCertified = AuthenticatorStatus(rawValue: "FIDO_CERTIFIED")
    public static let userVerificationBypass = AuthenticatorStatus(rawValue: "USER_VERIFICATION_BYPASS")
    public static let attestationKeyCompromise = AuthenticatorStatus(rawValue: "ATTESTATION_KEY_COMPROMISE")
    public static let userKeyRemoteCompromise = AuthenticatorStatus(rawValue: "USER_KEY_REMOTE_COMPROMISE")
    public static let userKeyPhysicalCompromise = AuthenticatorStatus(rawValue: "USER_KEY_PHYSICAL_COMPROMISE")
    public static let updateAvailable = AuthenticatorStatus(rawValue: "UPDATE_AVAILABLE")
    public static let revoked = AuthenticatorStatus(rawValue: "REVOKED")

    /// Whether a report of this status in force refuses new registrations (1493). Each of these says the
    /// authenticator's promises no longer hold: its attestation can be forged, its user verification bypassed, or
    /// its keys used by someone else.
    public var refusesRegistration: Bool {
        self == .revoked || self == .userVerificationBypass || self == .attestationKeyCompromise
            || self == .userKeyRemoteCompromise || self == .userKeyPhysicalCompromise
    }

    /// Whether a report of this status in force refuses authentication with keys already registered (1493). A
    /// compromised attestation key does not: it lets someone forge new registrations, but the keys registered
    /// before stay the users' own.
    public var refusesAuthentication: Bool { refusesRegistration && self != .attestationKeyCompromise }

    public var description: String { rawValue }
}

/// One entry of an MDS3 metadata entry's `statusReports` (MDS3 §3.1.3): what the relying party acts on.
public struct StatusReport: Hashable, Sendable {
    public var status: AuthenticatorStatus
    /// When the status took effect; a report without one has always been in force.
    public var effectiveDate: Date?
    /// The DER attestation certificate the report concerns (for ATTESTATION_KEY_COMPROMISE: the compromised one);
    /// nil when the report concerns every attestation key of the authenticator.
    public var certificate: [UInt8]?

    public init(status: AuthenticatorStatus, effectiveDate: Date? = nil, certificate: [UInt8]? = nil) {
        self.status = status
        self.effectiveDate = effectiveDate
        self.certificate = certificate
    }

    /// Whether the report is in force at `now`.
    public func isInForce(at now: Date) -> Bool { effectiveDate.map { $0 <= now } ?? true }
}

extension StatusReport {
    /// The model's status at `now` as its dated reports tell it: of the reports that concern every key of the model
    /// (no certificate), the one in force with the latest effective date, whatever order the service listed them
    /// in (of one date, the last listed). So a refusal a newer report superseded (a model certified again after a
    /// fix) no longer refuses, and a report not in force yet does not count yet. Nil when no dated report is in force.
    public static func current(in reports: [StatusReport], at now: Date) -> StatusReport? {
        // One pass, no intermediate array: this runs on every sign-in.
        var latest: StatusReport?
        for report in reports where report.certificate == nil && report.isInForce(at: now) {
            guard let date = report.effectiveDate else { continue }
            if let found = latest?.effectiveDate, date < found { continue }
            latest = report
        }
        return latest
    }

    /// A model-wide report without a date (or with one that could not be read) that refuses by `refuses`: in force
    /// from the start, at a time nothing can be ordered against, so no later report supersedes it (a doubt falls
    /// closed).
    static func undatedRefusal(in reports: [StatusReport], _ refuses: (AuthenticatorStatus) -> Bool) -> StatusReport? {
        reports.first { $0.certificate == nil && $0.effectiveDate == nil && refuses($0.status) }
    }

    /// The report among `reports` that refuses registering a key attested by `attestationCertificates` (the
    /// attestation's chain; empty without one), or nil: an undated model-wide refusal, the model's current status
    /// (``current(in:at:)``) when it refuses, or a report in force naming a certificate the attestation carries. A
    /// compromise of one attestation key is never superseded by the model's later status: that key stays compromised.
    public static func registrationRefusal(in reports: [StatusReport], attestationCertificates: [[UInt8]], at now: Date) -> StatusReport? {
        if let undated = undatedRefusal(in: reports, \.refusesRegistration) { return undated }
        if let current = current(in: reports, at: now), current.status.refusesRegistration { return current }
        return reports.first { report in
            report.status.refusesRegistration && report.isInForce(at: now)
                && report.certificate.map { attestationCertificates.contains($0) } ?? false
        }
    }

    /// The report that refuses authenticating with a key already registered, or nil: an undated model-wide refusal,
    /// or the model's current status when it refuses.
    public static func authenticationRefusal(in reports: [StatusReport], at now: Date) -> StatusReport? {
        if let undated = undatedRefusal(in: reports, \.refusesAuthentication) { return undated }
        return current(in: reports, at: now).flatMap { $0.status.refusesAuthentication ? $0 : nil }
    }
}
