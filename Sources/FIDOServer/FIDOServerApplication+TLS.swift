import Foundation
import NIOSSL
import Primitives

extension FIDOServerApplication {
    /// The TLS set-up: the certificate the server presents, the PEM clients trust, and whether it was generated.
    struct TLSMaterial {
        var certificate: ServerCertificateSource
        var trustPEM: String
        var generated: Bool
    }

    static func makeTLS(
        _ configuration: FIDOServerCore.ServerConfiguration, metrics: ServerMetrics? = nil, note: (String) -> Void = { _ in }
    ) throws -> TLSMaterial {
        if let files = configuration.tls.files {
            let source = try ServerCertificateSource(
                files: files, previousCertificateSeconds: configuration.tls.previousCertificateSeconds, metrics: metrics)
            return TLSMaterial(certificate: source, trustPEM: try source.current.chainPEM(), generated: false)
        }
        for host in configuration.tls.developmentCertificateHosts where !DevelopmentCertificate.isHostName(host) {
            throw FIDOServerCore.ServerConfiguration.ConfigurationError.invalid(
                "development certificate host \(UntrustedText.quoted(host, limit: 64)) is not a DNS name or an IP address")
        }
        let hosts = Array(Set(["localhost", "127.0.0.1", "::1", configuration.host] + configuration.tls.developmentCertificateHosts)).sorted()
        // Kept beside an SQLite file, so devices that trusted it keep trusting a restarted development server; an
        // in-memory or PostgreSQL server has no file beside it and makes a new one each start.
        let development: DevelopmentCertificate
        if case .sqlite(let path) = configuration.database {
            try StoreDatabase.createDirectory(containing: path)
            development = try DevelopmentCertificate.kept(
                at: path + "-development-tls", hosts: hosts,
                regenerate: configuration.tls.regenerateDevelopmentCertificate, note: note)
        } else {
            development = try DevelopmentCertificate.generate(hosts: hosts)
        }
        let identity = try ServerCertificateSource.identity(
            chainPEM: development.certificatePEM + "\n" + development.trustAnchorPEM,
            keyPEM: development.privateKeyPEM)
        return TLSMaterial(
            certificate: ServerCertificateSource(fixed: identity, metrics: metrics), trustPEM: development.trustAnchorPEM, generated: true)
    }

    /// The authorities of the relying party's client certificates (`authorization.clientCertificates`), for the
    /// handshake; none when client certificates are not configured. Each is read as the check-config reads it.
    static func clientCertificateAuthorities(_ configuration: FIDOServerCore.ServerConfiguration) throws -> [NIOSSLCertificate] {
        guard let settings = configuration.authorization.clientCertificates else { return [] }
        let setting = "authorization.clientCertificates.certificateAuthoritiesPath"
        _ = try FIDOServerCore.ServerConfiguration.readCertificates(settings.certificateAuthoritiesPath, setting: setting)
        do {
            return try NIOSSLCertificate.fromPEMBytes(
                Array(FIDOServerCore.ServerConfiguration.readFile(settings.certificateAuthoritiesPath, setting: setting)))
        } catch let error as FIDOServerCore.ServerConfiguration.ConfigurationError {
            throw error
        } catch {
            throw FIDOServerCore.ServerConfiguration.ConfigurationError.invalid("\(setting) \(settings.certificateAuthoritiesPath): \(error)")
        }
    }
}
