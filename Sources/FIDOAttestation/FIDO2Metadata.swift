import Foundation

/// What the FIDO Metadata Service says about one FIDO2 authenticator model (an MDS3 BLOB entry with an `aaguid`):
/// the part a WebAuthn relying party acts on at registration.
public struct FIDO2Metadata: Sendable, Equatable {
    /// The model's AAGUID, 16 bytes; zero for a U2F model, which the service names by
    /// ``attestationCertificateKeyIdentifiers`` instead.
    public var aaguid: [UInt8]
    /// A U2F model's attestation certificates, by key identifier (lower-case hex SHA-1 of the subjectPublicKey bits).
    public var attestationCertificateKeyIdentifiers: [String]
    public var description: String
    /// The statement's `attestationTypes` as MDS3 writes them (`basic_full`, `basic_surrogate`, `attca`, `anonca`, `none`).
    public var attestationTypes: [String]
    /// The roots an attestation of this model must chain to (DER; MDS3 writes them in standard base64).
    public var attestationRootCertificates: [[UInt8]]
    /// The service's status reports for the model, in its order; they apply even without a statement.
    public var statusReports: [StatusReport]

    public init(
        aaguid: [UInt8], description: String, attestationTypes: [String] = [], attestationRootCertificates: [[UInt8]] = [],
        statusReports: [StatusReport] = [], attestationCertificateKeyIdentifiers: [String] = []
    ) {
        self.aaguid = aaguid
        self.description = description
        self.attestationTypes = attestationTypes
        self.attestationCertificateKeyIdentifiers = attestationCertificateKeyIdentifiers.map { $0.lowercased() }
        self.attestationRootCertificates = attestationRootCertificates
        self.statusReports = statusReports
    }
}

/// AAGUIDs (WebAuthn §6.5.1): 16 bytes, written as a UUID (`0132d110-bf4e-4208-a403-ab4f5f12efe5`) in metadata.
public enum AAGUID {
    /// The 16 bytes of `text` in the UUID form (either case), or nil.
    public static func bytes(_ text: String) -> [UInt8]? {
        guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else { return nil }
        return withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    /// The UUID form of 16 bytes, lower case.
    public static func text(_ bytes: [UInt8]) -> String {
        precondition(bytes.count == 16, "an AAGUID is 16 bytes")
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.joined(separator: "-")
    }

    /// The all-zero AAGUID an authenticator sends when it names no model (U2F, many synced passkeys).
    public static let zero = [UInt8](repeating: 0, count: 16)
}
