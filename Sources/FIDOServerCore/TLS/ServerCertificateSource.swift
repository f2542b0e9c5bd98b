import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL
import Primitives
import ServiceLifecycle
import UAF
import X509

/// The certificate the server presents, and what a client that saw it reports in its ChannelBinding.
///
/// From `tls.certificatePath` and `tls.privateKeyPath` it is replaced without a restart: the files are re-read when
/// either changes and on SIGHUP (`ServerCertificateWatcher`), and new connections get the new certificate while
/// open ones keep theirs. A pair that does not load, whose key is not the certificate's, or whose certificate is not
/// valid now is refused and the certificate in force stays: a renewal written half-way (the certificate before its
/// key) must never leave the server unable to complete a handshake. The replaced certificate is still accepted in
/// ChannelBindings for `tls.previousCertificateSeconds`, since a client that connected before the change reports it.
public final class ServerCertificateSource: Sendable {
    /// A certificate chain and its key, checked to belong together.
    package struct Identity: Sendable {
        package let chain: [NIOSSLCertificate]
        package let key: NIOSSLPrivateKey
        package let notBefore: Date
        package let notAfter: Date
        /// What a client that saw this certificate reports (RFC 5929).
        package let binding: ExpectedChannelBinding
        /// The files' bytes, to tell a real change from a touch.
        package let fileBytes: [Data]
    }

    private struct State {
        var current: Identity
        /// Whether `current` is not the identity the TLS context was built with (handshakes then override it).
        var replaced = false
        var previous: [(binding: ExpectedChannelBinding, until: Date)] = []
    }

    private let state: NIOLockedValueBox<State>
    /// The files, or nil for a development certificate (fixed for the process).
    package let paths: (certificate: String, key: String)?
    let previousCertificateSeconds: Int
    let metrics: ServerMetrics?

    /// A certificate that never changes (the development certificate).
    package init(fixed identity: Identity, metrics: ServerMetrics? = nil) {
        state = NIOLockedValueBox(State(current: identity))
        paths = nil
        previousCertificateSeconds = 0
        self.metrics = metrics
        metrics?.tlsCertificateInForce(notAfter: identity.notAfter)
    }

    /// Loads the configured files; at start a pair that does not load or does not match stops the server.
    package init(certificatePath: String, keyPath: String, previousCertificateSeconds: Int, metrics: ServerMetrics? = nil) throws {
        let identity = try Self.load(certificatePath: certificatePath, keyPath: keyPath)
        state = NIOLockedValueBox(State(current: identity))
        paths = (certificatePath, keyPath)
        self.previousCertificateSeconds = previousCertificateSeconds
        self.metrics = metrics
        metrics?.tlsCertificateInForce(notAfter: identity.notAfter)
    }

    /// The identity in force.
    package var current: Identity { state.withLockedValue { $0.current } }

    /// The certificates a client may report now: the one in force, and those replaced less than
    /// `tls.previousCertificateSeconds` ago.
    package func channelBinding(now: Date) -> ExpectedChannelBinding {
        state.withLockedValue { state in
            var binding = state.current.binding
            binding.previous = state.previous.filter { $0.until > now }.map(\.binding)
            return binding
        }
    }

    /// The server's TLS configuration (TLS 1.2 at least). With certificate files, each handshake asks which
    /// identity is in force, so a reload reaches the next connection.
    package func tlsConfiguration() -> TLSConfiguration {
        let identity = current
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.chain.map { .certificate($0) }, privateKey: .privateKey(identity.key))
        tls.minimumTLSVersion = .tlsv12
        if paths != nil {
            let state = state
            tls.sslContextCallback = { _, promise in
                let (replaced, identity) = state.withLockedValue { ($0.replaced, $0.current) }
                // Until the first reload the context's own certificate is the right one: nothing to apply.
                guard replaced else {
                    promise.succeed(.noChanges)
                    return
                }
                var override = NIOSSLContextConfigurationOverride()
                override.certificateChain = identity.chain.map { .certificate($0) }
                override.privateKey = .privateKey(identity.key)
                promise.succeed(override)
            }
        }
        return tls
    }

    package enum ReloadOutcome: Equatable, Sendable { case installed, unchanged, refused }

    /// Re-reads the files; installs the pair when it changed, loads, matches and is valid at `now`.
    @discardableResult
    package func reload(now: Date, logger: Logger) -> ReloadOutcome {
        guard let paths else { return .unchanged }
        let fresh: Identity
        do {
            let files = try Self.read(certificatePath: paths.certificate, keyPath: paths.key)
            if files == current.fileBytes { return .unchanged }
            fresh = try Self.identity(files: files, certificatePath: paths.certificate, keyPath: paths.key)
            // An expired certificate (or one not valid yet) would fail every client's handshake: keep the one in force.
            guard fresh.notBefore <= now, now <= fresh.notAfter else {
                throw ServerConfiguration.ConfigurationError.invalid(
                    "tls.certificatePath \(paths.certificate) is valid from \(fresh.notBefore) to \(fresh.notAfter), not now")
            }
        } catch {
            metrics?.tlsReloaded(outcome: "refused")
            logger.error("TLS certificate not reloaded, the certificate in force stays: \(error)")
            return .refused
        }
        let grace = TimeInterval(previousCertificateSeconds)
        state.withLockedValue { state in
            state.previous.removeAll { $0.until <= now }
            if grace > 0, state.current.binding != fresh.binding { state.previous.append((state.current.binding, now.addingTimeInterval(grace))) }
            state.current = fresh
            state.replaced = true
        }
        metrics?.tlsReloaded(outcome: "installed")
        metrics?.tlsCertificateInForce(notAfter: fresh.notAfter)
        logger.notice(
            "TLS certificate replaced: new connections get the one valid until \(fresh.notAfter); the previous one stays accepted in channel bindings for \(previousCertificateSeconds) s"
        )
        return .installed
    }

    static func read(certificatePath: String, keyPath: String) throws -> [Data] {
        [
            try ServerConfiguration.readFile(certificatePath, setting: "tls.certificatePath"),
            try ServerConfiguration.readFile(keyPath, setting: "tls.privateKeyPath"),
        ]
    }

    /// Loads and checks a certificate chain and its key.
    package static func load(certificatePath: String, keyPath: String) throws -> Identity {
        try identity(files: try read(certificatePath: certificatePath, keyPath: keyPath), certificatePath: certificatePath, keyPath: keyPath)
    }

    static func identity(files: [Data], certificatePath: String, keyPath: String) throws -> Identity {
        // NIOSSL's errors name neither the file nor the setting ("failedToLoadCertificate").
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMBytes(Array(files[0])) } catch {
            throw ServerConfiguration.ConfigurationError.invalid(
                "tls.certificatePath \(certificatePath) is not a PEM certificate chain (BEGIN CERTIFICATE blocks, the server's first)")
        }
        guard !chain.isEmpty else {
            throw ServerConfiguration.ConfigurationError.invalid("tls.certificatePath \(certificatePath) holds no certificate")
        }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(bytes: Array(files[1]), format: .pem) } catch {
            let text = String(decoding: files[1], as: UTF8.self)
            let reason =
                text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED")
                ? "is encrypted: the server reads its key without a passphrase (openssl pkey -in it -out a new file)"
                : text.contains("-----BEGIN CERTIFICATE-----")
                    ? "holds a certificate, not a private key: name the key's PEM file"
                    : "is not a PEM private key (a BEGIN PRIVATE KEY or BEGIN EC PRIVATE KEY block)"
            throw ServerConfiguration.ConfigurationError.invalid("tls.privateKeyPath \(keyPath) \(reason)")
        }
        // BoringSSL refuses a key that is not the leaf's when both go into one context: the same check every
        // handshake would otherwise fail on.
        do {
            _ = try NIOSSLContext(
                configuration: .makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)))
        } catch {
            throw ServerConfiguration.ConfigurationError.invalid(
                "tls.privateKeyPath \(keyPath) is not the key of the certificate in tls.certificatePath \(certificatePath)")
        }
        return try identity(chain: chain, key: key, files: files)
    }

    /// A generated (development) identity.
    package static func identity(chainPEM: String, keyPEM: String) throws -> Identity {
        try identity(
            chain: try NIOSSLCertificate.fromPEMBytes(Array(chainPEM.utf8)), key: try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem),
            files: [Data(chainPEM.utf8), Data(keyPEM.utf8)])
    }

    /// The leaf's validity and channel binding, read once for the identity's lifetime.
    private static func identity(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey, files: [Data]) throws -> Identity {
        let der = try chain[0].toDERBytes()
        let certificate = try Certificate(derEncoded: der)
        return Identity(
            chain: chain, key: key, notBefore: certificate.notValidBefore, notAfter: certificate.notValidAfter,
            binding: channelBinding(leafDER: der, certificate: certificate), fileBytes: files)
    }

    /// RFC 5929 tls-server-end-point and the certificate itself, as a client would report them.
    static func channelBinding(leafDER: [UInt8], certificate: Certificate) -> ExpectedChannelBinding {
        let hash: [UInt8]
        switch certificate.signatureAlgorithm {
        case .ecdsaWithSHA384, .sha384WithRSAEncryption: hash = Array(SHA384.hash(data: leafDER))
        case .ecdsaWithSHA512, .sha512WithRSAEncryption: hash = Array(SHA512.hash(data: leafDER))
        default: hash = Array(SHA256.hash(data: leafDER))  // SHA-256, and the RFC's rule for MD5 and SHA-1
        }
        return ExpectedChannelBinding(serverEndPoint: Base64URL.encode(hash), tlsServerCertificate: Base64URL.encode(leafDER))
    }
}

/// Reloads the certificate files when either changes (checked every `interval`) and on SIGHUP. Runs only with
/// certificate files (a service group treats a service that returns early as failed).
package struct ServerCertificateWatcher: Service {
    let source: ServerCertificateSource
    let interval: Duration
    let handleSignals: Bool
    let clock: @Sendable () -> Date
    let logger: Logger

    package init(
        source: ServerCertificateSource, interval: Duration = .seconds(2), handleSignals: Bool, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.source = source
        self.interval = interval
        self.handleSignals = handleSignals
        self.clock = clock
        self.logger = logger
    }

    package func run() async throws {
        guard let paths = source.paths else { return }
        let source = source
        let clock = clock
        let logger = logger
        // Ends when the service is cancelled at graceful shutdown.
        await cancelWhenGracefulShutdown {
            await FileChangeTriggers.run(paths: [paths.certificate, paths.key], interval: interval, handleSignals: handleSignals) {
                source.reload(now: clock(), logger: logger)
            }
        }
    }
}
