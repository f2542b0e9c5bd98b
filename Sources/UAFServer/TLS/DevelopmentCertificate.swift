import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A self-signed development certificate, generated at start-up when no certificate is configured, so that
/// the server never speaks plain HTTP. Clients trust it explicitly (the SDK's debug flavor with
/// `trustedCertificatePEM`); the release flavor refuses it.
public struct DevelopmentCertificate: Sendable {
    public let certificatePEM: String
    public let privateKeyPEM: String

    /// Generates a P-256 certificate for `hosts` (DNS names or IP addresses), valid for 30 days.
    public static func generate(hosts: [String] = ["localhost", "127.0.0.1", "::1"], now: Date = Date()) throws -> DevelopmentCertificate {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("mauth development server"); OrganizationName("mauth") }
        let names: [GeneralName] = hosts.map { host in
            if let v4 = IPv4Address(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(v4.bytes))) }
            if let v6 = IPv6Address(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(v6.bytes))) }
            return .dnsName(host)
        }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-300), notValidAfter: now.addingTimeInterval(30 * 24 * 3600),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names)
            },
            issuerPrivateKey: Certificate.PrivateKey(key))
        return DevelopmentCertificate(certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }

    /// Writes both PEM files (the key with mode 0600).
    public func write(certificateTo certificatePath: String, keyTo keyPath: String) throws {
        try Data(certificatePEM.utf8).write(to: URL(fileURLWithPath: certificatePath))
        FileManager.default.createFile(atPath: keyPath, contents: Data(privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
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
