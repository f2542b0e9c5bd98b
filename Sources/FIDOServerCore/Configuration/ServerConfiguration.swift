import Foundation
import NevisProtocol
import Primitives
import UAF

/// Everything the server needs, from one JSON file plus `MAUTH_*` environment overrides. The defaults give a
/// working local server: loopback, a free port of the caller's choice, a self-signed development certificate,
/// SQLite in the working directory and the default Nevis metadata.
public struct ServerConfiguration: Codable, Sendable, Equatable {
    public struct TLS: Codable, Sendable, Equatable {
        /// PEM certificate chain (leaf first). Both paths or neither must be set. Both files are re-read when
        /// either changes and on SIGHUP; a pair that does not load, does not match, or is not valid now is refused
        /// and the certificate in force stays.
        public var certificatePath: String?
        /// PEM private key.
        public var privateKeyPath: String?
        /// How long, in seconds, after a new certificate is installed a client may still report the replaced one
        /// in its ChannelBinding (it connected before the change). 0 refuses it at once: for a certificate
        /// replaced because its key leaked.
        public var previousCertificateSeconds: Int
        /// A PKCS#12 file (`.p12`, `.pfx`) with the chain and its key, instead of the two PEM files: what a Windows or
        /// Java key store exports. Re-read when it changes and on SIGHUP, as the PEM files are.
        public var pkcs12Path: String?
        /// The PKCS#12 file's password (`${env:NAME}` or `${file:PATH}` keeps it out of this file); empty when none.
        public var pkcs12Password: String?
        public init(
            certificatePath: String? = nil, privateKeyPath: String? = nil, previousCertificateSeconds: Int = 600, pkcs12Path: String? = nil,
            pkcs12Password: String? = nil
        ) {
            self.certificatePath = certificatePath
            self.privateKeyPath = privateKeyPath
            self.previousCertificateSeconds = previousCertificateSeconds
            self.pkcs12Path = pkcs12Path
            self.pkcs12Password = pkcs12Password
        }
        /// Without a certificate: make a new development certificate even if a good one is kept beside the SQLite
        /// file (`mauth server --regenerate-certificate`; not a configuration-file key).
        public var regenerateDevelopmentCertificate = false
        /// Without a certificate: further names (DNS names or IP addresses) the development certificate covers
        /// besides localhost, the loopback addresses and `host`, such as the Mac's LAN address a phone reaches
        /// (`mauth server --certificate-host`; not a configuration-file key).
        public var developmentCertificateHosts: [String] = []
        package enum CodingKeys: String, CodingKey, CaseIterable {
            case certificatePath, privateKeyPath, previousCertificateSeconds, pkcs12Path, pkcs12Password
        }
        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                certificatePath: try c.decodeIfPresent(String.self, forKey: .certificatePath),
                privateKeyPath: try c.decodeIfPresent(String.self, forKey: .privateKeyPath),
                previousCertificateSeconds: try c.decodeIfPresent(Int.self, forKey: .previousCertificateSeconds) ?? TLS().previousCertificateSeconds,
                pkcs12Path: try c.decodeIfPresent(String.self, forKey: .pkcs12Path),
                pkcs12Password: try c.decodeIfPresent(String.self, forKey: .pkcs12Password))
        }
    }

    public enum Database: Codable, Sendable, Equatable {
        /// An SQLite file (the embedded default).
        case sqlite(path: String)
        /// Memory only: for tests; nothing survives a restart and a second instance sees nothing.
        case sqliteInMemory
        /// A PostgreSQL server shared by several instances: `postgres://user:password@host:port/database`, with
        /// at most `poolSize` connections from this instance.
        case postgres(url: String, poolSize: Int)

        /// The configuration-file and environment form: a `postgres://` (or `postgresql://`) URL, `:memory:`, or
        /// an SQLite file path.
        public init(text: String, poolSize: Int = 16) {
            if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
                self = .postgres(url: text, poolSize: poolSize)
            } else if text == ":memory:" {
                self = .sqliteInMemory
            } else {
                self = .sqlite(path: text)
            }
        }

        var text: String {
            switch self {
            case .sqlite(let path): return path
            case .sqliteInMemory: return ":memory:"
            case .postgres(let url, _): return url
            }
        }
    }

    public var host: String
    /// 0 picks a free port.
    public var port: Int
    public var tls: TLS
    /// The appID every FinalChallengeParams must carry; defaults to `https://<host>:<port>/nevisfido/uaf/1.1/facets`.
    public var appID: String?
    /// Trusted facet IDs served at the facets endpoint and checked in every response. None by default: which apps
    /// may use this server is the operator's decision, so a server outside development mode does not start without
    /// them (``checkTrustedFacets()``).
    public var facets: [String]
    /// A facets file (a TrustedFacets document or a JSON array of IDs) that replaces `facets` and is reloaded
    /// when it changes and on SIGHUP.
    public var facetsPath: String?
    /// A metadata file or directory (each file one statement or an array); nil uses `NevisAuthenticatorMetadata`.
    public var metadataPath: String?
    /// Inline metadata: a JSON text holding one statement or an array of them; wins over `metadataPath`.
    public var metadataJSON: String?
    /// The FIDO Metadata Service BLOB, whose statements join these and whose status reports refuse revoked
    /// authenticators; nil reads none.
    public var metadataService: MetadataService?
    public var database: Database
    /// How long an issued UAF request (its challenge) may be answered, in seconds.
    public var requestLifetimeSeconds: Int
    /// Clone detection: reject a sign counter that does not increase.
    public var rejectCounterRegression: Bool
    /// The AAIDs that may send a sign counter of 0 ("no counter"); nil lets every authenticator do so (the spec's
    /// reading). A list makes every other authenticator keep a counter, so a cloned key cannot hide behind 0.
    public var zeroCounterAAIDs: [String]?
    /// The UAF protocol versions the server speaks (`"1.0"`, `"1.1"`, `"1.2"`): every request carries one message
    /// per version, highest first, the facets list their ids under each, and a response of any other version is
    /// refused (1400). Only 1.1 by default: what the SDK speaks.
    public var acceptedVersions: [String] = ["1.1"]
    /// Named UAF policies a request's context chooses by `policy` (``NamedPolicy``); the one named `default` serves
    /// requests that name none. Empty by default: every authenticator the metadata describes.
    public var policies: [String: NamedPolicy] = [:]

    /// ``acceptedVersions`` as versions, highest first.
    public var protocolVersions: [Version] {
        acceptedVersions.compactMap(Version.init).sorted { ($0.major, $0.minor) > ($1.major, $1.minor) }
    }
    /// Check the ChannelBinding clients report against this server's own certificate (1490 on a mismatch). Turn
    /// it off only behind a TLS-terminating proxy, where clients see the proxy's certificate.
    public var checkChannelBinding: Bool
    /// Who may call protected endpoints.
    public var authorization: Authorization
    /// The JWT and session a successful authentication hands out.
    public var tokens: Tokens
    /// Abuse limits, timeouts and retention.
    public var limits: Limits
    /// Who the client of a request is (the peer, or behind trusted proxies the client they name).
    public var clientAddress: ClientAddress = ClientAddress()
    /// Out-of-band dispatch: tokens, payloads, dispatchers.
    public var dispatch: Dispatch
    /// Metrics and graceful shutdown.
    public var observability: Observability
    /// Serve the relying-party web demo at `/demo` (off by default; never in production: its pages enroll any
    /// username and send approvals to any user without a credential).
    public var demoSite: Bool = false
    /// Passkeys beside UAF (nevisFIDO's FIDO2 API); off when absent.
    public var fido2: FIDO2?
    /// The apps whose genuineness the server can check (``AppAttestation``); the policies say when it is asked.
    public var appAttestation: AppAttestation?
    /// The HTTP proxy for the server's calls out (Firebase, the Metadata Service, a JWKS URL); none when absent, or
    /// `HTTPS_PROXY`/`NO_PROXY` from the environment.
    public var outboundProxy: OutboundProxy?

    public init(
        host: String = "127.0.0.1", port: Int = 0, tls: TLS = TLS(), appID: String? = nil,
        facets: [String] = [], metadataPath: String? = nil,
        database: Database = .sqlite(path: "mauth-data/mauth.sqlite"), requestLifetimeSeconds: Int = 300,
        rejectCounterRegression: Bool = true, authorization: Authorization = Authorization(),
        tokens: Tokens = Tokens(), limits: Limits = Limits(), checkChannelBinding: Bool = true, dispatch: Dispatch = Dispatch(),
        observability: Observability = Observability()
    ) {
        self.dispatch = dispatch
        self.observability = observability
        self.checkChannelBinding = checkChannelBinding
        self.host = host
        self.port = port
        self.tls = tls
        self.appID = appID
        self.facets = facets
        self.metadataPath = metadataPath
        self.database = database
        self.requestLifetimeSeconds = requestLifetimeSeconds
        self.rejectCounterRegression = rejectCounterRegression
        self.authorization = authorization
        self.tokens = tokens
        self.limits = limits
    }

    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        case unreadable(String)
        case invalid(String)
        public var description: String {
            switch self {
            case .unreadable(let d): return "cannot read \(d)"
            case .invalid(let d): return "invalid configuration: \(d)"
            }
        }
    }

    /// Loads `path` (if given) and applies environment overrides: `MAUTH_HOST`, `MAUTH_PORT`, `MAUTH_APP_ID`,
    /// `MAUTH_FACETS` (comma-separated), `MAUTH_DATABASE` (an SQLite path or `:memory:`), `MAUTH_TLS_CERT`,
    /// `MAUTH_TLS_KEY`, `MAUTH_METADATA`, `MAUTH_METADATA_BLOB` (with `MAUTH_METADATA_BLOB_ROOT`), `MAUTH_FACETS_FILE`, `MAUTH_DEVELOPMENT_MODE` (`true` only), `MAUTH_JWT_JWKS`, `MAUTH_JWT_ISSUER`,
    /// `MAUTH_JWT_AUDIENCE`, `MAUTH_TOKEN_SIGNING_KEY`, `MAUTH_DEMO_SITE` (`true` or `false`). A wrong value for a known key is
    /// an error (the server does not start), as in nevisFIDO. An unknown key in the file is an error too
    /// (``UnknownConfigurationKey``), but for keys that begin with `_`.
    /// The contents of a file a setting names; refused with the setting, the path and the reason
    /// (``ConfigurationError/unreadable(_:)``: "cannot read authorization.jwt.jwksPath /etc/jwks.json: no such file").
    /// What tells that a file a watcher reloads has changed: the file it resolves to, its inode, modification time and
    /// size (zeros when unreadable).
    package static func fileStamp(_ path: String) -> [String] {
        // Through every symbolic link to the file itself: Kubernetes mounts a secret or ConfigMap as links into a
        // `..data` directory and renews it by swapping one link, which leaves the named path's own stamp as it was.
        // The resolved path and the inode tell a swap even when the new file has the old one's size and time.
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let attributes = try? FileManager.default.attributesOfItem(atPath: resolved)
        return [
            resolved, "\(attributes?[.systemFileNumber] ?? 0)",
            "\((attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)", "\(attributes?[.size] ?? 0)",
        ]
    }

    package static func readFile(_ path: String, setting: String) throws -> Data {
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw ConfigurationError.unreadable("\(setting) \(path): \(SystemErrorText.reason(error))")
        }
    }

    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ServerConfiguration {
        var configuration = ServerConfiguration()
        // MAUTH_CONFIG names the file when no --config does: set once for the server's account, `mauth server` and
        // `mauth admin` then read the same file, so an operator's command finds the server's database.
        if let path = path ?? environment["MAUTH_CONFIG"] {
            let data = try readFile(path, setting: "the configuration file")
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            configuration = try ConfigurationFileDecoding.decode(ServerConfiguration.self, from: data, file: path) {
                try ConfigurationReferences.resolve($0, file: path, environment: environment, directory: directory)
            }
            configuration.resolvePaths(against: URL(fileURLWithPath: path).deletingLastPathComponent().path)
        }
        if let host = environment["MAUTH_HOST"] { configuration.host = host }
        if let port = environment["MAUTH_PORT"] {
            guard let value = Int(port), (0...65535).contains(value) else { throw ConfigurationError.invalid("MAUTH_PORT=\(port)") }
            configuration.port = value
        }
        if let appID = environment["MAUTH_APP_ID"] { configuration.appID = appID }
        if let facets = environment["MAUTH_FACETS"] { configuration.facets = facets.split(separator: ",").map(String.init) }
        if let db = environment["MAUTH_DATABASE"] { configuration.database = Database(text: db) }
        if let cert = environment["MAUTH_TLS_CERT"] { configuration.tls.certificatePath = cert }
        if let key = environment["MAUTH_TLS_KEY"] { configuration.tls.privateKeyPath = key }
        if let pkcs12 = environment["MAUTH_TLS_PKCS12"] { configuration.tls.pkcs12Path = pkcs12 }
        // The file's proxy wins; without one, the proxy every tool on the machine is told of.
        if configuration.outboundProxy == nil { configuration.outboundProxy = OutboundProxy.fromEnvironment(environment) }
        if let password = environment["MAUTH_TLS_PKCS12_PASSWORD"] { configuration.tls.pkcs12Password = password }
        if let metadata = environment["MAUTH_METADATA"] { configuration.metadataPath = metadata }
        if let blob = environment["MAUTH_METADATA_BLOB"] {
            guard let root = environment["MAUTH_METADATA_BLOB_ROOT"] ?? configuration.metadataService?.rootCertificatesPath else {
                throw ConfigurationError.invalid("MAUTH_METADATA_BLOB needs MAUTH_METADATA_BLOB_ROOT (the PEM root its signature must lead to)")
            }
            var service = configuration.metadataService ?? MetadataService(blob: blob, rootCertificatesPath: root)
            service.blob = blob
            service.rootCertificatesPath = root
            configuration.metadataService = service
        }
        if let facetsPath = environment["MAUTH_FACETS_FILE"] { configuration.facetsPath = facetsPath }
        if let development = environment["MAUTH_DEVELOPMENT_MODE"] {
            guard development == "true" || development == "false" else { throw ConfigurationError.invalid("MAUTH_DEVELOPMENT_MODE=\(development)") }
            configuration.authorization.developmentMode = development == "true"
        }
        if let jwks = environment["MAUTH_JWT_JWKS"] {
            guard let issuer = environment["MAUTH_JWT_ISSUER"] ?? configuration.authorization.jwt?.issuer,
                let audience = environment["MAUTH_JWT_AUDIENCE"] ?? configuration.authorization.jwt?.audience
            else {
                throw ConfigurationError.invalid("MAUTH_JWT_JWKS needs MAUTH_JWT_ISSUER and MAUTH_JWT_AUDIENCE")
            }
            var jwt = configuration.authorization.jwt ?? .init(issuer: issuer, audience: audience)
            jwt.jwksPath = jwks
            jwt.issuer = issuer
            jwt.audience = audience
            configuration.authorization.jwt = jwt
        }
        if let key = environment["MAUTH_TOKEN_SIGNING_KEY"] { configuration.tokens.signingKeyPath = key }
        if let format = environment["MAUTH_LOG_FORMAT"] {
            guard let value = Observability.LogFormat(rawValue: format) else {
                throw ConfigurationError.invalid("MAUTH_LOG_FORMAT=\(format): text or json")
            }
            configuration.observability.logFormat = value
        }
        if let path = environment["MAUTH_AUDIT_LOG"] { configuration.observability.auditLogPath = path }
        if let demo = environment["MAUTH_DEMO_SITE"] {
            guard demo == "true" || demo == "false" else { throw ConfigurationError.invalid("MAUTH_DEMO_SITE=\(demo)") }
            configuration.demoSite = demo == "true"
        }
        try configuration.validate()
        return configuration
    }

    /// Makes every relative file path the configuration file names absolute against the file's folder, so that a
    /// file means the same wherever the server starts (systemd starts it in `/`, a container in the image's folder).
    /// Paths from the environment and the command line stay relative to the working directory, as a shell's are;
    /// the database's default (`mauth-data/mauth.sqlite`) too, when the file does not name one.
    mutating func resolvePaths(against folder: String) {
        func resolve(_ path: inout String) {
            guard !path.isEmpty, !path.hasPrefix("/"), !path.hasPrefix("~") else { return }
            path = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: folder, isDirectory: true)).standardizedFileURL.path
        }
        func resolve(_ path: inout String?) {
            guard var value = path else { return }
            resolve(&value)
            path = value
        }
        resolve(&tls.certificatePath)
        resolve(&tls.privateKeyPath)
        resolve(&tls.pkcs12Path)
        resolve(&facetsPath)
        resolve(&metadataPath)
        if case .sqlite(var file) = database, database != ServerConfiguration().database {
            resolve(&file)
            database = .sqlite(path: file)
        }
        if var jwt = authorization.jwt {
            resolve(&jwt.jwksPath)
            resolve(&jwt.jwksTrustedCertificatesPath)
            for index in jwt.publicKeyPaths.indices { resolve(&jwt.publicKeyPaths[index]) }
            authorization.jwt = jwt
        }
        resolve(&tokens.signingKeyPath)
        if var firebase = dispatch.firebase {
            resolve(&firebase.serviceAccountPath)
            resolve(&firebase.trustedCertificatesPath)
            dispatch.firebase = firebase
        }
        if var service = metadataService {
            if !service.blob.lowercased().hasPrefix("https://") { resolve(&service.blob) }
            resolve(&service.rootCertificatesPath)
            resolve(&service.trustedCertificatesPath)
            metadataService = service
        }
        resolve(&observability.auditLogPath)
        if var fido2 {
            resolve(&fido2.attestationRootsPath)
            self.fido2 = fido2
        }
        if var apple = appAttestation?.apple {
            resolve(&apple.rootCertificatesPath)
            appAttestation?.apple = apple
        }
        if var android = appAttestation?.android {
            resolve(&android.decryptionKeyPath)
            resolve(&android.verificationKeyPath)
            appAttestation?.android = android
        }
    }

    /// Refuses a server that would trust no app: without `facets` or `facetsPath` every response fails the facet
    /// check, and a default (once the virtual device's) would trust an app the operator never chose. Development
    /// mode may start without them. Checked when the server is built, after every source of settings applied.
    public func checkTrustedFacets() throws {
        guard facets.isEmpty, facetsPath == nil, !authorization.developmentMode else { return }
        throw ConfigurationError.invalid(
            "no trusted facets: set facets (MAUTH_FACETS) or facetsPath (MAUTH_FACETS_FILE) to the facet IDs of the apps that may use this server; only authorization.developmentMode starts without them"
        )
    }

    public func validate() throws {
        for rule in rules { try rule() }
    }

    /// Every problem ``validate()`` would stop at, not only the first: each rule is checked on its own
    /// (`mauth server --check-config`).
    public func problems() -> [String] {
        rules.compactMap { rule in
            do {
                try rule()
                return nil
            } catch { return "\(error)" }
        }
    }

    /// The rules of ``validate()``, in order, each independent of the others.
    private var rules: [() throws -> Void] {
        [
            { guard (0...65535).contains(port) else { throw ConfigurationError.invalid("port \(port)") } },
            {
                guard (tls.certificatePath == nil) == (tls.privateKeyPath == nil) else {
                    throw ConfigurationError.invalid("tls.certificatePath and tls.privateKeyPath must be set together")
                }
            },
            {
                // Two identities would leave which one is served to the order of the code.
                guard tls.pkcs12Path == nil || tls.certificatePath == nil else {
                    throw ConfigurationError.invalid("tls.pkcs12Path replaces tls.certificatePath and tls.privateKeyPath: set one or the other")
                }
                guard tls.pkcs12Password == nil || tls.pkcs12Path != nil else {
                    throw ConfigurationError.invalid("tls.pkcs12Password is set without tls.pkcs12Path")
                }
            },
            {
                guard (0...86_400).contains(tls.previousCertificateSeconds) else {
                    throw ConfigurationError.invalid("tls.previousCertificateSeconds must be 0...86400")
                }
            },
            {
                guard requestLifetimeSeconds > 0, requestLifetimeSeconds <= 3600 else {
                    throw ConfigurationError.invalid("requestLifetimeSeconds must be 1...3600")
                }
            },
            {
                // A wildcard facet trusts every app of a platform: acceptable on a developer's machine only.
                if facets.contains(where: { $0.hasSuffix("*") }), !authorization.developmentMode {
                    throw ConfigurationError.invalid("wildcard facets (…:*) are allowed only with authorization.developmentMode")
                }
            },
            {
                if let bad = zeroCounterAAIDs?.first(where: { !AAID.isValid($0) }) {
                    throw ConfigurationError.invalid("zeroCounterAAIDs: \"\(bad)\" is not an AAID (VVVV#MMMM)")
                }
            },
            {
                // Only the versions whose messages this server writes and reads; a typo must not silently drop one.
                let known: Set<Version> = [.uaf10, .uaf11, .uaf12]
                let parsed = acceptedVersions.compactMap { Version($0) }
                guard !acceptedVersions.isEmpty, parsed.count == acceptedVersions.count, Set(parsed).count == parsed.count,
                    parsed.allSatisfy(known.contains), acceptedVersions.allSatisfy({ $0 == Version($0)?.description })
                else {
                    throw ConfigurationError.invalid("acceptedVersions must list 1.0, 1.1 or 1.2, each once, not \(acceptedVersions)")
                }
            },
            { if let appID, appID.count > OperationHeader.maximumAppIDLength { throw ConfigurationError.invalid("appID longer than 512") } },
            {
                if case .postgres(_, let poolSize) = database, !(1...200).contains(poolSize) {
                    throw ConfigurationError.invalid("database pool size must be 1...200")
                }
            },
            { try metadataService?.validate() },
            { for (name, policy) in policies.sorted(by: { $0.key < $1.key }) { try policy.validate(name: name) } },
            { try authorization.validate() },
            { try authorization.checkInternalNetworks(against: clientAddress.trustedProxies + (authorization.trustedProxy?.addresses ?? [])) },
            { try tokens.validate() },
            { try limits.validate() },
            { try clientAddress.validate() },
            { try dispatch.validate() },
            { try observability.validate() },
            { try fido2?.validate(developmentMode: authorization.developmentMode) },
            { try appAttestation?.validate() },
            { try outboundProxy?.validate() },
            {
                // A policy that asks for app attestation needs an app to check it against: refused at start, not at
                // the first operation.
                if appAttestation == nil, let name = policies.keys.sorted().first(where: { policies[$0]?.appAttestation?.asksAnything == true }) {
                    throw ConfigurationError.invalid("policies.\(name).appAttestation asks for app attestation, but appAttestation configures no app")
                }
            },
        ]
    }

    package enum CodingKeys: String, CodingKey, CaseIterable {
        case host, port, tls, appID, facets, facetsPath, metadataPath, metadataJSON, database, databasePoolSize, requestLifetimeSeconds,
            rejectCounterRegression
        case zeroCounterAAIDs, metadataService, acceptedVersions, policies
        case authorization, tokens, limits, clientAddress, checkChannelBinding, dispatch, observability, demoSite, fido2, appAttestation
        case outboundProxy
    }

    public init(from decoder: any Decoder) throws {
        try decoder.refuseUnknownKeys(CodingKeys.self)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ServerConfiguration()
        host = try c.decodeIfPresent(String.self, forKey: .host) ?? d.host
        port = try c.decodeIfPresent(Int.self, forKey: .port) ?? d.port
        tls = try c.decodeIfPresent(TLS.self, forKey: .tls) ?? d.tls
        appID = try c.decodeIfPresent(String.self, forKey: .appID)
        facets = try c.decodeIfPresent([String].self, forKey: .facets) ?? d.facets
        facetsPath = try c.decodeIfPresent(String.self, forKey: .facetsPath)
        metadataPath = try c.decodeIfPresent(String.self, forKey: .metadataPath)
        metadataJSON = try c.decodeIfPresent(String.self, forKey: .metadataJSON)
        metadataService = try c.decodeIfPresent(MetadataService.self, forKey: .metadataService)
        if let db = try c.decodeIfPresent(String.self, forKey: .database) {
            database = Database(text: db, poolSize: try c.decodeIfPresent(Int.self, forKey: .databasePoolSize) ?? 16)
        } else {
            database = d.database
        }
        requestLifetimeSeconds = try c.decodeIfPresent(Int.self, forKey: .requestLifetimeSeconds) ?? d.requestLifetimeSeconds
        rejectCounterRegression = try c.decodeIfPresent(Bool.self, forKey: .rejectCounterRegression) ?? d.rejectCounterRegression
        zeroCounterAAIDs = try c.decodeIfPresent([String].self, forKey: .zeroCounterAAIDs)
        acceptedVersions = try c.decodeIfPresent([String].self, forKey: .acceptedVersions) ?? d.acceptedVersions
        policies = try c.decodeIfPresent([String: NamedPolicy].self, forKey: .policies) ?? d.policies
        authorization = try c.decodeIfPresent(Authorization.self, forKey: .authorization) ?? d.authorization
        tokens = try c.decodeIfPresent(Tokens.self, forKey: .tokens) ?? d.tokens
        limits = try c.decodeIfPresent(Limits.self, forKey: .limits) ?? d.limits
        clientAddress = try c.decodeIfPresent(ClientAddress.self, forKey: .clientAddress) ?? d.clientAddress
        checkChannelBinding = try c.decodeIfPresent(Bool.self, forKey: .checkChannelBinding) ?? d.checkChannelBinding
        dispatch = try c.decodeIfPresent(Dispatch.self, forKey: .dispatch) ?? d.dispatch
        observability = try c.decodeIfPresent(Observability.self, forKey: .observability) ?? d.observability
        demoSite = try c.decodeIfPresent(Bool.self, forKey: .demoSite) ?? d.demoSite
        fido2 = try c.decodeIfPresent(FIDO2.self, forKey: .fido2)
        appAttestation = try c.decodeIfPresent(AppAttestation.self, forKey: .appAttestation)
        outboundProxy = try c.decodeIfPresent(OutboundProxy.self, forKey: .outboundProxy)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(host, forKey: .host)
        try c.encode(port, forKey: .port)
        try c.encode(tls, forKey: .tls)
        try c.encodeIfPresent(appID, forKey: .appID)
        try c.encode(facets, forKey: .facets)
        try c.encodeIfPresent(facetsPath, forKey: .facetsPath)
        try c.encodeIfPresent(metadataPath, forKey: .metadataPath)
        try c.encodeIfPresent(metadataJSON, forKey: .metadataJSON)
        try c.encodeIfPresent(metadataService, forKey: .metadataService)
        try c.encode(database.text, forKey: .database)
        if case .postgres(_, let poolSize) = database { try c.encode(poolSize, forKey: .databasePoolSize) }
        try c.encode(requestLifetimeSeconds, forKey: .requestLifetimeSeconds)
        try c.encode(rejectCounterRegression, forKey: .rejectCounterRegression)
        try c.encodeIfPresent(zeroCounterAAIDs, forKey: .zeroCounterAAIDs)
        try c.encode(acceptedVersions, forKey: .acceptedVersions)
        if !policies.isEmpty { try c.encode(policies, forKey: .policies) }
        try c.encode(authorization, forKey: .authorization)
        try c.encode(tokens, forKey: .tokens)
        try c.encode(limits, forKey: .limits)
        try c.encode(clientAddress, forKey: .clientAddress)
        try c.encode(checkChannelBinding, forKey: .checkChannelBinding)
        try c.encode(dispatch, forKey: .dispatch)
        try c.encode(observability, forKey: .observability)
        try c.encode(demoSite, forKey: .demoSite)
        try c.encodeIfPresent(fido2, forKey: .fido2)
        try c.encodeIfPresent(appAttestation, forKey: .appAttestation)
        try c.encodeIfPresent(outboundProxy, forKey: .outboundProxy)
    }

    /// Loads the metadata this configuration names: inline JSON (`metadataJSON`, which wins, as in nevisFIDO), a
    /// file or a directory (`metadataPath`, every file one statement or an array), or `NevisAuthenticatorMetadata`. Both the
    /// numeric and the MDS3 form are read; statements of other protocol families are skipped and reported to `skipped`.
    public func loadMetadata(skipped: (String) -> Void = { _ in }) throws -> UAFMetadata {
        var documents: [(name: String, data: Data)] = []
        if let metadataJSON {
            documents = [("metadataJSON", Data(metadataJSON.utf8))]
        } else if let metadataPath {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: metadataPath, isDirectory: &isDirectory) else {
                throw ConfigurationError.unreadable("metadataPath \(metadataPath): no such file or directory")
            }
            let files =
                isDirectory.boolValue
                ? try FileManager.default.contentsOfDirectory(atPath: metadataPath).filter { !$0.hasPrefix(".") }.sorted().map {
                    "\(metadataPath)/\($0)"
                }
                : [metadataPath]
            for file in files {
                documents.append((file, try Self.readFile(file, setting: "metadataPath")))
            }
        } else {
            documents = [("default metadata", NevisAuthenticatorMetadata.json)]
        }
        var statements: [MetadataStatement] = []
        for document in documents {
            do {
                let parsed = try UAFMetadata.parse(json: document.data)
                statements += parsed.statements
                for name in parsed.skipped { skipped("\(document.name): skipped \(name) (not UAF)") }
            } catch {
                throw ConfigurationError.invalid("\(document.name): \(error)")
            }
        }
        do { return try UAFMetadata(statements) } catch { throw ConfigurationError.invalid("\(error)") }
    }
}
