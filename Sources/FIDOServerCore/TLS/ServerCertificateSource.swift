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

extension ServerConfiguration.TLS {
    /// The configured identity's files, nil for a development certificate.
    package var files: ServerCertificateSource.Files? {
        if let pkcs12Path { return .pkcs12(path: pkcs12Path, password: pkcs12Password ?? "") }
        if let certificatePath, let privateKeyPath { return .pem(certificate: certificatePath, key: privateKeyPath) }
        return nil
    }
}

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

        /// The chain as PEM blocks, leaf first, whatever file form it came from: what a client is told to trust.
        package func chainPEM() throws -> String {
            try chain.map { try Certificate(derEncoded: try $0.toDERBytes()).serializeAsPEM().pemString }.joined(separator: "\n") + "\n"
        }
    }

    private struct State {
        var current: Identity
        /// Whether `current` is not the identity the TLS context was built with (handshakes then override it).
        var replaced = false
        var previous: [(binding: ExpectedChannelBinding, until: Date)] = []
    }

    private let state: NIOLockedValueBox<State>
    /// Where a configured identity is read from (and re-read when it changes).
    package enum Files: Sendable {
        /// A PEM chain (leaf first) and its PEM key (`tls.certificatePath`, `tls.privateKeyPath`).
        case pem(certificate: String, key: String)
        /// One PKCS#12 file with the chain and the key (`tls.pkcs12Path`), opened with `tls.pkcs12Password`.
        case pkcs12(path: String, password: String)

        /// The files a change of which reloads the identity.
        package var watched: [String] {
            switch self {
            case .pem(let certificate, let key): return [certificate, key]
            case .pkcs12(let path, _): return [path]
            }
        }

        /// The setting and path a certificate problem names.
        var certificateSetting: String {
            switch self {
            case .pem(let certificate, _): return "tls.certificatePath \(certificate)"
            case .pkcs12(let path, _): return "tls.pkcs12Path \(path)"
            }
        }

        func read() throws -> [Data] {
            switch self {
            case .pem(let certificate, let key):
                return [
                    try ServerConfiguration.readFile(certificate, setting: "tls.certificatePath"),
                    try ServerConfiguration.readFile(key, setting: "tls.privateKeyPath"),
                ]
            case .pkcs12(let path, _): return [try ServerConfiguration.readFile(path, setting: "tls.pkcs12Path")]
            }
        }

        func identity(_ files: [Data]) throws -> Identity {
            switch self {
            case .pem(let certificate, let key): return try ServerCertificateSource.identity(files: files, certificatePath: certificate, keyPath: key)
            case .pkcs12(let path, let password): return try ServerCertificateSource.identity(pkcs12: files[0], path: path, password: password)
            }
        }
    }

    /// The files, or nil for a development certificate (fixed for the process).
    package let files: Files?
    let previousCertificateSeconds: Int
    let metrics: ServerMetrics?

    /// A certificate that never changes (the development certificate).
    package init(fixed identity: Identity, metrics: ServerMetrics? = nil) {
        state = NIOLockedValueBox(State(current: identity))
        files = nil
        previousCertificateSeconds = 0
        self.metrics = metrics
        metrics?.tlsCertificateInForce(notAfter: identity.notAfter)
    }

    /// Loads the configured files; at start a pair that does not load or does not match stops the server.
    package convenience init(certificatePath: String, keyPath: String, previousCertificateSeconds: Int, metrics: ServerMetrics? = nil) throws {
        try self.init(
            files: .pem(certificate: certificatePath, key: keyPath), previousCertificateSeconds: previousCertificateSeconds, metrics: metrics)
    }

    /// Loads `files`; at start an identity that does not load or whose key is not the leaf's stops the server.
    package init(files: Files, previousCertificateSeconds: Int, metrics: ServerMetrics? = nil) throws {
        let identity = try files.identity(try files.read())
        state = NIOLockedValueBox(State(current: identity))
        self.files = files
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
    ///
    /// With `clientAuthorities` (`authorization.clientCertificates`), every client is asked for a certificate of
    /// one of them, and only they are named in the request (so a browser or a phone, which holds none, is not asked
    /// to pick one and goes on without). A client may present none; one that presents a certificate must chain to
    /// one of them, be valid now and allow client authentication (BoringSSL's "ssl client" purpose), or the
    /// handshake fails: a bad certificate is never taken as no certificate.
    package func tlsConfiguration(clientAuthorities: [NIOSSLCertificate] = []) -> TLSConfiguration {
        let identity = current
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: identity.chain.map { .certificate($0) }, privateKey: .privateKey(identity.key))
        tls.minimumTLSVersion = .tlsv12
        if !clientAuthorities.isEmpty {
            tls.certificateVerification = .optionalVerification
            tls.trustRoots = .certificates(clientAuthorities)
            tls.sendCANameList = true
        }
        if files != nil {
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
        guard let files else { return .unchanged }
        let fresh: Identity
        do {
            let bytes = try files.read()
            if bytes == current.fileBytes { return .unchanged }
            fresh = try files.identity(bytes)
            // An expired certificate (or one not valid yet) would fail every client's handshake: keep the one in force.
            guard fresh.notBefore <= now, now <= fresh.notAfter else {
                throw ServerConfiguration.ConfigurationError.invalid(
                    "\(files.certificateSetting) is valid from \(fresh.notBefore) to \(fresh.notAfter), not now")
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

    /// Loads and checks a PEM certificate chain and its key.
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
        try requireLeafKey(
            chain: chain, key: key, "tls.privateKeyPath \(keyPath) is not the key of the certificate in tls.certificatePath \(certificatePath)")
        return try identity(chain: chain, key: key, files: files)
    }

    /// The chain and key of a PKCS#12 file (BoringSSL reads PBES2 with AES and PBKDF2, OpenSSL 3's default, and
    /// the older 3DES form), checked as a PEM pair is.
    static func identity(pkcs12: Data, path: String, password: String) throws -> Identity {
        let bundle: NIOSSLPKCS12Bundle
        // NIOSSL's error names neither the file nor the setting, and cannot tell a wrong password from a damaged file.
        do { bundle = try NIOSSLPKCS12Bundle(buffer: Array(pkcs12), passphrase: Array(password.utf8)) } catch {
            throw ServerConfiguration.ConfigurationError.invalid(
                "tls.pkcs12Path \(path) does not open with tls.pkcs12Password: a wrong password, or not a PKCS#12 file (openssl pkcs12 -info -in it)")
        }
        guard !bundle.certificateChain.isEmpty else {
            throw ServerConfiguration.ConfigurationError.invalid("tls.pkcs12Path \(path) holds no certificate")
        }
        try requireLeafKey(
            chain: bundle.certificateChain, key: bundle.privateKey, "tls.pkcs12Path \(path): its key is not the key of its first certificate")
        return try identity(chain: bundle.certificateChain, key: bundle.privateKey, files: [pkcs12])
    }

    /// Refuses with `problem` a `key` that is not the leaf's: BoringSSL refuses such a pair when both go into one
    /// context, the check every handshake would otherwise fail on.
    private static func requireLeafKey(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey, _ problem: @autoclosure () -> String) throws {
        do {
            _ = try NIOSSLContext(
                configuration: .makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)))
        } catch {
            throw ServerConfiguration.ConfigurationError.invalid(problem())
        }
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
        guard let files = source.files else { return }
        let source = source
        let clock = clock
        let logger = logger
        // Ends when the service is cancelled at graceful shutdown.
        await cancelWhenGracefulShutdown {
            await FileChangeTriggers.run(paths: files.watched, interval: interval, handleSignals: handleSignals) {
                source.reload(now: clock(), logger: logger)
            }
        }
    }
}
