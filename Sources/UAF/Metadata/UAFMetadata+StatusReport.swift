import FIDOAttestation
import Foundation

extension UAFMetadata {
    /// The report in force that refuses registering a key of `aaid` attested by `attestationCertificates` (the
    /// full attestation's chain; empty for surrogate attestation), or nil. A report naming a certificate refuses
    /// only attestations that carry that certificate.
    public func registrationRefusal(aaid: String, attestationCertificates: [[UInt8]], at now: Date) -> StatusReport? {
        StatusReport.registrationRefusal(in: statusReports(for: aaid), attestationCertificates: attestationCertificates, at: now)
    }

    /// The report in force that refuses authenticating with a registered key of `aaid`, or nil.
    public func authenticationRefusal(aaid: String, at now: Date) -> StatusReport? {
        StatusReport.authenticationRefusal(in: statusReports(for: aaid), at: now)
    }
}
