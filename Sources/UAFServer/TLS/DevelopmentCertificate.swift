import Primitives
import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A development certificate, generated at start-up when no certificate is configured, so that the server never
/// speaks plain HTTP. The server's certificate is a leaf that is **not** a CA. It is issued by a one-off CA whose
/// private key is discarded as soon as the leaf is signed: clients that trust the CA (the SDK's debug flavor with
/// `trustedCertificatesPEM`) therefore trust exactly this leaf and nothing else, ever. (TLS libraries do not accept
/// a non-CA certificate as a trust anchor, hence the two certificates.) The release flavor refuses both.
public struct DevelopmentCertificate: Sendable {
    /// The leaf the server presents (not a CA).
    public let certificatePEM: String
    /// The leaf's private key.
    public let privateKeyPEM: String
    /// The one-off CA that issued the leaf: what clients trust. Its key no longer exists.
    public let trustAnchorPEM: String

    /// Generates a P-256 leaf for `hosts` (DNS names or IP addresses) and its one-off issuer, valid for 30 days.
    public static func generate(hosts: [String] = ["localhost", "127.0.0.1", "::1"], now: Date = Date()) throws -> DevelopmentCertificate {
        let notBefore = now.addingTimeInterval(-300), notAfter = now.addingTimeInterval(30 * 24 * 3600)
        let anchorKey = P256.Signing.PrivateKey()
        // A name of its own: a client trusting several development servers at once (the load tool, tests) looks the
        // issuer up by name, so two anchors with one name would shadow each other and fail the handshake.
        let anchorID = Base64URL.encode(SecureRandom.bytes(6))
        let anchorName = try DistinguishedName {
            CommonName("mauth development trust anchor \(anchorID) (key discarded)"); OrganizationName("mauth")
        }
        let anchor = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(anchorKey.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: anchorName, subject: anchorName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                // It may issue end-entity certificates only (path length 0), and it issues exactly one.
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: Certificate.PrivateKey(anchorKey))

        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("mauth development server"); OrganizationName("mauth") }
        let names: [GeneralName] = hosts.map { host in
            if let v4 = IPv4Address(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(v4.bytes))) }
            if let v6 = IPv6Address(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(v6.bytes))) }
            return .dnsName(host)
        }
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: anchorName, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: Certificate.PrivateKey(anchorKey))
        return DevelopmentCertificate(certificatePEM: try leaf.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
                                      trustAnchorPEM: try anchor.serializeAsPEM().pemString)
    }

    /// Writes the leaf and its key (mode 0600).
    public func write(certificateTo certificatePath: String, keyTo keyPath: String) throws {
        try Data((certificatePEM + "\n" + trustAnchorPEM + "\n").utf8).write(to: URL(fileURLWithPath: certificatePath))
        guard FileManager.default.createFile(atPath: keyPath, contents: Data(privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ServerConfiguration.ConfigurationError.invalid("cannot write the private key to \(keyPath)")
        }
    }
}

/// Minimal textual IP address parsing for SubjectAlternativeNames.
struct IPv4Address {
    let bytes: [UInt8]
    init?(_ s: String) {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts { guard let v = UInt8(p) else { return nil }; out.append(v) }
        bytes = out
    }
}

struct IPv6Address {
    let bytes: [UInt8]
    init?(_ s: String) {
        guard s.contains(":") else { return nil }
        var addr = in6_addr()
        guard inet_pton(AF_INET6, s, &addr) == 1 else { return nil }
        bytes = withUnsafeBytes(of: &addr) { Array($0) }
    }
}
