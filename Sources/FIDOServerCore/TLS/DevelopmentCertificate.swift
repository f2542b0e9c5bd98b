import Crypto
import Foundation
import NIOSSL
import Primitives
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

    /// A pair made before, as ``generate(hosts:now:)`` made it.
    package init(certificatePEM: String, privateKeyPEM: String, trustAnchorPEM: String) {
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.trustAnchorPEM = trustAnchorPEM
    }

    /// Whether `host` can be a name of the certificate: an IPv4 or IPv6 address, or a DNS name of letters, digits and
    /// hyphens in dot-separated labels (no wildcard: a development certificate names the machines it runs on).
    public static func isHostName(_ host: String) -> Bool {
        if IPv4Address(host) != nil || IPv6Address(host) != nil { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard host.utf8.count <= 253, !labels.isEmpty else { return false }
        return labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.unicodeScalars.allSatisfy { ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) || $0 == "-" }
        }
    }

    /// The subject alternative names of a leaf for `hosts`.
    static func names(_ hosts: [String]) -> [GeneralName] {
        hosts.map { host in
            if let v4 = IPv4Address(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(v4.bytes))) }
            if let v6 = IPv6Address(host) { return .ipAddress(ASN1OctetString(contentBytes: ArraySlice(v6.bytes))) }
            return .dnsName(host)
        }
    }

    /// Generates a P-256 leaf for `hosts` (DNS names or IP addresses) and its one-off issuer, valid for 30 days.
    public static func generate(hosts: [String] = ["localhost", "127.0.0.1", "::1"], now: Date = Date()) throws -> DevelopmentCertificate {
        let notBefore = now.addingTimeInterval(-300)
        let notAfter = now.addingTimeInterval(30 * 24 * 3600)
        let anchorKey = P256.Signing.PrivateKey()
        // A name of its own: a client trusting several development servers at once (the load tool, tests) looks the
        // issuer up by name, so two anchors with one name would shadow each other and fail the handshake.
        let anchorID = Base64URL.encode(SecureRandom.bytes(6))
        let anchorName = try DistinguishedName {
            CommonName("mauth development trust anchor \(anchorID) (key discarded)")
            OrganizationName("mauth")
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
        let name = try DistinguishedName {
            CommonName("mauth development server")
            OrganizationName("mauth")
        }
        let names = Self.names(hosts)
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
        return DevelopmentCertificate(
            certificatePEM: try leaf.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
            trustAnchorPEM: try anchor.serializeAsPEM().pemString)
    }

    /// A TLS server configuration presenting the leaf (TLS 1.2 at least): what the development stand-ins and test
    /// hosts on loopback serve with.
    package func serverTLSConfiguration() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(certificatePEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)))
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    /// Writes the leaf and its issuer (one file) and the leaf's key (mode 0600), each through a temporary file
    /// renamed into place, so a crash leaves the old pair or the new one, never half of one.
    public func write(certificateTo certificatePath: String, keyTo keyPath: String) throws {
        let keyTemporary = keyPath + ".tmp"
        guard FileManager.default.createFile(atPath: keyTemporary, contents: Data(privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ServerConfiguration.ConfigurationError.invalid("cannot write the development certificate's private key to \(keyTemporary)")
        }
        try Data((certificatePEM + "\n" + trustAnchorPEM + "\n").utf8).write(to: URL(fileURLWithPath: certificatePath), options: .atomic)
        guard rename(keyTemporary, keyPath) == 0 else {
            throw ServerConfiguration.ConfigurationError.invalid("cannot write the development certificate's private key to \(keyPath)")
        }
    }

    /// The pair ``write(certificateTo:keyTo:)`` wrote, if it is still good for `hosts` at `now`: both files parse,
    /// the key is the leaf's, the leaf names exactly `hosts` and is valid for at least another day. Nil with the
    /// reason otherwise.
    static func read(certificatePath: String, keyPath: String, hosts: [String], now: Date) -> (DevelopmentCertificate?, String) {
        guard let chainText = try? String(contentsOfFile: certificatePath, encoding: .utf8),
            let keyText = try? String(contentsOfFile: keyPath, encoding: .utf8)
        else { return (nil, "none kept yet") }
        guard let documents = try? PEMDocument.parseMultiple(pemString: chainText), documents.count == 2,
            let leaf = try? Certificate(pemDocument: documents[0]), (try? Certificate(pemDocument: documents[1])) != nil,
            let key = try? P256.Signing.PrivateKey(pemRepresentation: keyText)
        else { return (nil, "the kept files do not parse") }
        guard leaf.publicKey == Certificate.PublicKey(key.publicKey) else { return (nil, "the kept key is not the certificate's") }
        guard leaf.notValidAfter > now.addingTimeInterval(24 * 3600) else { return (nil, "the kept certificate expires within a day") }
        let named = (try? leaf.extensions.subjectAlternativeNames).flatMap { $0 }.map { Set($0) } ?? []
        guard named == Set(Self.names(hosts)) else { return (nil, "the kept certificate names other hosts") }
        return (
            DevelopmentCertificate(certificatePEM: documents[0].pemString, privateKeyPEM: keyText, trustAnchorPEM: documents[1].pemString),
            "kept"
        )
    }

    /// The development certificate kept at `base` (`<base>.pem`, `<base>.key`), reused while it is good (see
    /// ``read(certificatePath:keyPath:hosts:now:)``), else generated and kept there; `regenerate` always makes a new
    /// one. Devices that trusted the server's development trust anchor keep trusting it across restarts.
    package static func kept(
        at base: String, hosts: [String], regenerate: Bool, now: Date = Date(),
        note: (String) -> Void
    ) throws -> DevelopmentCertificate {
        let (certificatePath, keyPath) = (base + ".pem", base + ".key")
        if !regenerate {
            let (kept, reason) = read(certificatePath: certificatePath, keyPath: keyPath, hosts: hosts, now: now)
            if let kept { return kept }
            note("development certificate: generating a new one (\(reason)); kept at \(certificatePath)")
        } else {
            note("development certificate: generating a new one (asked to regenerate); kept at \(certificatePath)")
        }
        let fresh = try generate(hosts: hosts, now: now)
        try fresh.write(certificateTo: certificatePath, keyTo: keyPath)
        return fresh
    }
}

/// Minimal textual IP address parsing for SubjectAlternativeNames.
struct IPv4Address {
    let bytes: [UInt8]
    init?(_ s: String) {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard let v = UInt8(p) else { return nil }
            out.append(v)
        }
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
