import FIDOAttestation
import NIOConcurrencyHelpers
import UAF

/// What the server knows about authenticators of either protocol at one time: UAF's statements and status reports by
/// AAID (``uaf``, the lookup UAF's verifiers take) and the Metadata Service's FIDO2 entries by AAGUID and U2F entries
/// by attestation certificate key identifier (what WebAuthn's ceremonies look up through `AttestationTrust`). Each
/// protocol core takes only its own part; a Metadata Service reload swaps the whole store (``MetadataSource``).
public struct MetadataStore: Sendable {
    /// The UAF statements and status reports, by AAID.
    public let uaf: UAFMetadata
    /// This store among all made in the process (a reload makes a new one): what values derived from a store are
    /// remembered by.
    package let identity: Int = MetadataStore.nextIdentity.withLockedValue { next in
        defer { next += 1 }
        return next
    }
    private static let nextIdentity = NIOLockedValueBox(0)
    /// The FIDO2 entries by AAGUID (16 bytes).
    private var fido2: [[UInt8]: FIDO2Metadata] = [:]
    /// The U2F entries (no AAGUID) by attestation certificate key identifier (lower-case hex).
    private var u2f: [String: FIDO2Metadata] = [:]

    /// A store of UAF's lookup and the Metadata Service's FIDO2 entries (the first entry for an AAGUID, or for a U2F
    /// key identifier, is kept).
    public init(uaf: UAFMetadata, fido2: [FIDO2Metadata] = []) {
        self.uaf = uaf
        for entry in fido2 {
            if entry.attestationCertificateKeyIdentifiers.isEmpty {
                if self.fido2[entry.aaguid] == nil { self.fido2[entry.aaguid] = entry }
            } else {
                for key in entry.attestationCertificateKeyIdentifiers where u2f[key] == nil { u2f[key] = entry }
            }
        }
    }

    /// The Metadata Service's entry for a FIDO2 authenticator model, by its AAGUID (16 bytes).
    public func fido2Metadata(aaguid: [UInt8]) -> FIDO2Metadata? { fido2[aaguid] }
    /// The Metadata Service's entry for a U2F model, by an attestation certificate key identifier (hex, either case).
    public func fido2Metadata(attestationCertificateKeyIdentifier identifier: String) -> FIDO2Metadata? { u2f[identifier.lowercased()] }
}
