import Primitives
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
@_exported import UAFServerCore
import UAF

/// A server that is running; ``stop()`` shuts it down gracefully.
public final class RunningUAFServer: Sendable {
    public let port: Int
    public let host: String
    public let appID: String
    /// The PEM a debug-flavor client trusts explicitly: the configured certificate, or the development certificate's
    /// one-off trust anchor (see `DevelopmentCertificate`).
    public let certificatePEM: String
    /// Whether the certificate was generated at start-up (no certificate configured).
    public let usesDevelopmentCertificate: Bool
    /// The stores, for tests and the admin command.
    public let stores: Stores
    /// The trusted facets in force (reloaded from `facetsPath` when configured).
    public let facets: TrustedFacetsSource
    /// The key id and JWKS of issued tokens.
    public let tokenIssuer: TokenIssuer
    /// The certificate the server presents (replaced without a restart when it comes from files).
    public let certificate: ServerCertificateSource
    /// This instance's metrics (what `/metrics` serves).
    public let metrics: ServerMetrics
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    init(port: Int, host: String, appID: String, certificatePEM: String, usesDevelopmentCertificate: Bool, stores: Stores,
         tokenIssuer: TokenIssuer, certificate: ServerCertificateSource, facets: TrustedFacetsSource, metrics: ServerMetrics,
         group: ServiceGroup, task: Task<Void, any Error>) {
        self.facets = facets
        self.metrics = metrics
        self.certificate = certificate
        self.port = port; self.host = host; self.appID = appID; self.certificatePEM = certificatePEM
        self.usesDevelopmentCertificate = usesDevelopmentCertificate; self.stores = stores; self.tokenIssuer = tokenIssuer
        self.group = group; self.task = task
    }

    /// `https://host:port`
    public var baseURL: URL { URL(string: "https://\(UAFServerApplication.displayHost(host)):\(port)")! }

    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
        try await stores.database.close()
    }

    /// Waits until the server stops (e.g. SIGINT/SIGTERM for `mauth server`).
    public func wait() async throws {
        try await task.value
        try await stores.database.close()
    }
}

/// What the server needs besides its configuration; tests substitute the clock.
public struct ServerDependencies: Sendable {
    public var logger: Logger
    /// The audit stream: one info line per security decision, with who, from where and the outcome as metadata.
    public var auditLogger: Logger
    public var clock: @Sendable () -> Date
    public var onDecision: @Sendable (ServerDecision) -> Void
    public init(logger: Logger = Logger(label: "mauth.server"), auditLogger: Logger = Logger(label: "mauth.audit"),
                clock: @escaping @Sendable () -> Date = { Date() }, onDecision: @escaping @Sendable (ServerDecision) -> Void = { _ in }) {
        self.logger = logger; self.auditLogger = auditLogger; self.clock = clock; self.onDecision = onDecision
    }
}

/// Builds and starts the server from one configuration value.
public enum UAFServerApplication {
    static func displayHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// The router with every route and middleware (used by ``start(configuration:dependencies:handleSignals:)``
    /// and by in-process router tests).
    static func buildRouter(configuration: UAFServerCore.ServerConfiguration, stores: Stores, metadata: MetadataSource, facets: TrustedFacetsSource, identity: AppIdentity,
                            issuer: TokenIssuer, relyingPartyTokens: RelyingPartyTokenVerifier?, channelBinding: ServerCertificateSource?,
                            firebase: FirebaseDispatcher? = nil, metrics: ServerMetrics, readiness: Readiness,
                            dependencies: ServerDependencies, audit: AuditTrail? = nil, demoPages: DemoPages? = nil,
                            passkeys: PasskeySettings? = nil) -> Router<ServerRequestContext> {
        let logger = dependencies.logger
        let router = Router(context: ServerRequestContext.self)
        let clients = ClientAddressResolver(configuration.clientAddress, ipv6PrefixLength: configuration.limits.ipv6PrefixLength)
        // First, so every request (unmatched ones and errors too) gets an id and is counted.
        router.add(middleware: RequestObservationMiddleware(metrics: metrics, logger: logger, clients: clients))
        // Second, before every rule that may answer (406, 405, 404, 401), so every request a caller makes is counted;
        // only a balancer's probes, the scraper and the facets, which answer from memory, are never refused.
        let limiter = RateLimiter(limit: configuration.limits.requestsPerMinutePerAddress, clock: dependencies.clock)
        router.add(middleware: RateLimitMiddleware(limiter: limiter, clients: clients,
                                                   exempt: HealthController.paths.union([UAFController.facetsPath])))
        let routeTable = RouteTable()
        router.add(middleware: RouteRulesMiddleware(routes: routeTable))
        router.add(middleware: UnitOfWorkMiddleware(database: stores.database))
        HealthController(readiness: readiness, database: stores.database, metrics: configuration.observability.metrics ? metrics : nil)
            .add(to: router)
        UAFController.addFacets(to: router, versions: configuration.protocolVersions, facets: { facets.facets })
        let services = DomainServices(
            configuration: configuration, stores: stores, metadata: metadata, facets: facets, identity: identity, issuer: issuer,
            channelBinding: channelBinding, firebase: firebase, passkeys: passkeys, clock: dependencies.clock,
            onDecision: { decision in
                // Every security decision, with who took it and from where, goes to the audit stream and trail.
                let caller = RequestCaller.current
                let client = caller.flatMap { clients.client(peer: $0.peer, hops: $0.forwarded) }
                let principal = caller?.principal
                let event = AuditEvent(at: dependencies.clock(), requestID: RequestID.current, clientAddress: client?.address,
                                       principal: principal?.auditName, operation: decision.operation.rawValue, username: decision.username,
                                       statusCode: decision.statusCode, detail: decision.detail)
                // The event's escaped fields, never the decision's raw text: a detail may carry a caller's text.
                dependencies.auditLogger.info("\(event.message)", metadata: event.logMetadataValues)
                metrics.decided(decision)
                audit?.record(event, budgetKeys: AuditTrail.budgetKeys(
                    principal: principal, client: client?.clientKey(ipv6PrefixLength: configuration.limits.ipv6PrefixLength), decision: decision))
                dependencies.onDecision(decision)
            })
        let onRejection: @Sendable (OperationName, ServiceFailure) -> Void = { name, failure in
            services.environment.decide(name, failure.username, failure.status.rawValue, "rejected: \(failure.detail)")
        }
        let authorizer = Authorizer(configuration: configuration.authorization, relyingParty: relyingPartyTokens, issuer: issuer,
                                    sessions: stores.sessions, cookieName: configuration.tokens.cookieName, deviceSignatures: services.signatures,
                                    internalNetworks: configuration.authorization.internalDispatchNetworks.compactMap(IPNetwork.init),
                                    clock: dependencies.clock, logger: logger)
        let open = router.group()
        let refused: @Sendable (String) -> Void = { detail in services.environment.decide("authorization", nil, 401, "credentials refused: \(detail)") }
        let protected = router.group().add(middleware: AuthorizationMiddleware(authorizer: authorizer, onRefusal: refused))
        // Open to anyone, but a caller who presents a credential gets the limits of an authorized caller.
        let identified = router.group().add(middleware: AuthorizationMiddleware(authorizer: authorizer, required: false, onRefusal: refused))
        UAFController(registration: services.registration, authentication: services.authentication, deregistration: services.deregistration,
                      onRejection: onRejection).add(open: open, identified: identified, protected: protected)
        let dispatchController = DispatchController(dispatch: services.dispatch, targets: services.targets, devices: services.devices,
                                                    onRejection: onRejection)
        dispatchController.add(open: open, identified: identified, protected: protected)
        dispatchController.addDeviceService(open: open)
        AuthCloudController(service: services.authCloud, accessKeys: stores.accessKeys, onRejection: onRejection).add(router: router, open: open)
        if let demoPages {
            DemoSiteController(service: services.authCloud, issuer: issuer, pages: demoPages, passkeys: services.passkeys, onRejection: onRejection)
                .add(open: open)
        }
        AdminController(admin: services.admin, onRejection: onRejection).add(protected: protected)
        if let passkeys = services.passkeys {
            FIDO2Controller(passkeys: passkeys, relatedOrigins: passkeys.settings.configuration.relatedOrigins, onRejection: onRejection)
                .add(router: router, open: open, identified: identified, protected: protected)
        }
        ServerController(status: services.status, issuer: issuer, sessions: stores.sessions,
                         clock: dependencies.clock, onRejection: onRejection).add(open: open, protected: protected, router: router)
        routeTable.fill(routes: router.routes.map { ($0.method, $0.path.description) },
                        documented: RouteTable.documentedMediaTypes(PackageResources.openapi_json))
        return router
    }

    /// Everything one server instance is made of, built by ``buildApplication(configuration:dependencies:onServerRunning:)``:
    /// the Hummingbird application (router, middleware, TLS server) and the resources it shares.
    public struct Built: Sendable {
        public let application: Application<AppPathResponder<RouterResponder<ServerRequestContext>>>
        public let stores: Stores
        public let tokenIssuer: TokenIssuer
        public let facets: TrustedFacetsSource
        /// The metadata in force (reloaded from the Metadata Service when one is configured).
        public let metadata: MetadataSource
        /// The certificate the server presents.
        public let certificate: ServerCertificateSource
        /// The PEM clients trust (see ``RunningUAFServer/certificatePEM``).
        public let trustPEM: String
        public let usesDevelopmentCertificate: Bool
        let identity: AppIdentity
        /// This instance's metrics (served at `/metrics`).
        public let metrics: ServerMetrics
        /// Turns false when graceful shutdown begins (`/health/ready`).
        public let readiness: Readiness
        let shutdownDrain: Duration
        /// The push dispatcher (its HTTP client lives as long as the service group).
        let firebase: FirebaseDispatcher?
        /// The relying party's keys (refreshed from `authorization.jwt.jwksURL` when set).
        let relyingPartyTokens: RelyingPartyTokenVerifier?
        /// The database side of the audit trail; nil with `observability.auditRetentionDays` 0.
        package let audit: AuditTrail?
        /// Every method and path the router serves: what the OpenAPI document must describe, no more, no less.
        let routes: [Route]
        struct Route: Hashable { var method: String; var path: String }
        /// The appID in force (fixed once the port is bound).
        public var appID: String { identity.appID }
        /// Closes what ``UAFServerApplication/buildApplication(configuration:dependencies:onServerRunning:)`` opened,
        /// for a caller that never runs the service group (in-process tests): the push dispatcher's HTTP client and
        /// the database.
        package func close() async throws {
            await firebase?.shutdown()
            try await stores.database.close()
        }
        /// The background services that belong with the application (expiry purge, facets and metadata watchers, the
        /// token-signing key refresher).
        public func backgroundServices(dependencies: ServerDependencies, handleSignals: Bool) -> [any Service] {
            var services: [any Service] = [ExpiryPurger(stores: stores, clock: dependencies.clock, interval: ExpiryPurger.interval,
                                                        logger: dependencies.logger)]
            if let firebase { services.append(firebase) }
            if let audit { services.append(audit) }
            if certificate.paths != nil {
                services.append(ServerCertificateWatcher(source: certificate, handleSignals: handleSignals, clock: dependencies.clock,
                                                         logger: dependencies.logger))
            }
            if facets.path != nil {
                services.append(TrustedFacetsWatcher(source: facets, interval: .seconds(2), handleSignals: handleSignals, logger: dependencies.logger))
            }
            if let relyingPartyTokens, relyingPartyTokens.configuration.jwksURL != nil {
                services.append(RelyingPartyKeyRefresher(verifier: relyingPartyTokens, clock: dependencies.clock))
            }
            if tokenIssuer.stores != nil {
                services.append(SigningKeyRefresher(issuer: tokenIssuer, clock: dependencies.clock, logger: dependencies.logger))
            }
            if metadata.service != nil {
                services.append(MetadataWatcher(source: metadata, handleSignals: handleSignals, clock: dependencies.clock, logger: dependencies.logger))
            }
            // Last, so the group shuts it down first: readiness turns 503 before the server stops accepting.
            services.append(DrainService(readiness: readiness, drain: shutdownDrain, logger: dependencies.logger))
            return services
        }
    }

    /// Builds the server from one configuration value (Hummingbird's pattern): used by ``start(configuration:dependencies:handleSignals:)``
    /// (and so by `mauth server` and the demo) and by in-process router tests. Opens the database (running its
    /// migrations); the caller owns it (`built.stores.database.close()`).
    public static func buildApplication(configuration: UAFServerCore.ServerConfiguration, dependencies: ServerDependencies = ServerDependencies(),
                                        onServerRunning: @escaping @Sendable (Int) -> Void = { _ in }) async throws -> Built {
        try configuration.validate()
        try configuration.checkTrustedFacets()
        // Before anything is written (the development certificate beside the database file, the database itself).
        try StoreDatabase.checkExistingFile(configuration.database)
        let logger = dependencies.logger
        if configuration.authorization.developmentMode {
            logger.warning("DEVELOPMENT MODE: protected endpoints accept every caller; anyone can register keys for any username. Never use this in production.")
            if configuration.facets.isEmpty && configuration.facetsPath == nil {
                logger.warning("no trusted facets: every client will refuse the appID until facets or facetsPath is set")
            }
        } else if configuration.authorization.jwt == nil && configuration.authorization.trustedProxy == nil {
            logger.notice("no relying-party JWT keys or trusted proxy configured: registration requests need a session from a prior authentication")
        }
        if configuration.demoSite {
            logger.warning("DEMO SITE at /demo: its pages enroll new usernames and send approvals to them without a credential. Never use this in production.")
        }
        let metrics = ServerMetrics()
        let tls = try makeTLS(configuration, metrics: metrics, note: { logger.notice("\($0)") })
        let presented = tls.certificate.current, now = dependencies.clock()
        if now < presented.notBefore || now > presented.notAfter {
            logger.warning("the TLS certificate is valid from \(presented.notBefore) to \(presented.notAfter), not now: clients will refuse it")
        }
        // Behind a TLS-terminating proxy clients see the proxy's certificate, not ours: then nothing is compared.
        let channelBinding = configuration.checkChannelBinding ? tls.certificate : nil
        let metadata = try await MetadataSource.load(configuration, clock: dependencies.clock, metrics: metrics, logger: logger)
        let facets = try configuration.facetsPath.map { try TrustedFacetsSource(path: $0, allowWildcards: configuration.authorization.developmentMode) }
            ?? TrustedFacetsSource(facets: configuration.facets)
        let passkeys = try configuration.fido2.map(PasskeySettings.init)
        var relyingPartyTokens: RelyingPartyTokenVerifier?
        if let jwt = configuration.authorization.jwt { relyingPartyTokens = try await RelyingPartyTokenVerifier.load(jwt, logger: logger) }
        let readiness = Readiness()
        let database = try await StoreDatabase.open(configuration.database, logger: logger, metrics: metrics)
        let stores = Stores(database: database)
        var firebase: FirebaseDispatcher?
        do {
            let identity = AppIdentity()
            let baseURL: @Sendable (Int) -> String = { port in "https://\(displayHost(configuration.host)):\(port)" }
            let appID: @Sendable (Int) -> String = { port in configuration.appID ?? baseURL(port) + "/nevisfido/uaf/1.1/facets" }
            identity.set(appID(configuration.port), baseURL: baseURL(configuration.port))
            let defaultIssuer = "https://\(displayHost(configuration.host))\(configuration.port == 0 ? "" : ":\(configuration.port)")"
            let issuer = try await TokenIssuer.load(configuration.tokens, issuer: defaultIssuer, stores: stores, now: dependencies.clock())
            firebase = try configuration.dispatch.firebase.map { try FirebaseDispatcher(configuration: $0, logger: logger, clock: dependencies.clock) }
            let observability = configuration.observability
            let audit = observability.auditRetentionDays == 0 ? nil : AuditTrail(
                store: stores.audit, retention: TimeInterval(observability.auditRetentionDays) * 86_400,
                eventsPerMinute: observability.auditAnonymousEventsPerMinute, clock: dependencies.clock, metrics: metrics, logger: logger)
            let router = buildRouter(configuration: configuration, stores: stores, metadata: metadata, facets: facets, identity: identity, issuer: issuer,
                                     relyingPartyTokens: relyingPartyTokens, channelBinding: channelBinding, firebase: firebase,
                                     metrics: metrics, readiness: readiness, dependencies: dependencies, audit: audit,
                                     demoPages: configuration.demoSite ? try DemoPages(passkeys: passkeys != nil, developmentCertificate: tls.generated) : nil,
                                     passkeys: passkeys)
            var http1 = HTTP1Channel.Configuration()
            http1.idleTimeout = .seconds(Int64(configuration.limits.idleTimeoutSeconds))
            let deadline = TimeAmount.seconds(Int64(configuration.limits.requestDeadlineSeconds))
            let handshakeDeadline = TimeAmount.seconds(Int64(configuration.limits.handshakeDeadlineSeconds))
            let maximum = connectionCap(configuration.limits.maximumConnections, logger: logger)
            let cap = ConnectionCap(maximum: maximum, perAddress: min(configuration.limits.maximumConnectionsPerAddress, maximum),
                                    onRefusal: { metrics.connectionRefused() }, onEviction: { metrics.connectionEvicted() })
            let clients = ClientAddressResolver(configuration.clientAddress, ipv6PrefixLength: configuration.limits.ipv6PrefixLength)
            http1.additionalChannelHandlers = {
                [cap.handler(clients: clients), RequestDeadline.handler(deadline: deadline, handshakeDeadline: handshakeDeadline)]
            }
            let application = Application(
                responder: AppPathResponder(base: router.buildResponder()),
                server: try .tls(.http1(configuration: http1), tlsConfiguration: tls.certificate.tlsConfiguration()),
                configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "mauth"),
                onServerRunning: { channel in
                    // With port 0 the kernel picked the port: the appID names it before the first request arrives.
                    let port = channel.localAddress?.port ?? configuration.port
                    identity.set(appID(port), baseURL: baseURL(port))
                    onServerRunning(port)
                },
                logger: logger)
            return Built(application: application, stores: stores, tokenIssuer: issuer, facets: facets, metadata: metadata, certificate: tls.certificate,
                         trustPEM: tls.trustPEM, usesDevelopmentCertificate: tls.generated, identity: identity, metrics: metrics,
                         readiness: readiness, shutdownDrain: .seconds(configuration.observability.shutdownDrainSeconds), firebase: firebase,
                         relyingPartyTokens: relyingPartyTokens, audit: audit,
                         routes: router.routes.map { Built.Route(method: $0.method.rawValue, path: $0.path.description) })
        } catch {
            await firebase?.shutdown()
            try? await database.close()
            throw error
        }
    }

    /// The connection cap in force (``ConnectionBudget``), logged with the descriptor limits it comes from.
    static func connectionCap(_ configured: Int, logger: Logger) -> Int {
        guard let budget = ConnectionBudget.establish(configured: configured) else {
            logger.warning("the descriptor limit cannot be read: connections capped at limits.maximumConnections (\(configured)) only")
            return configured
        }
        let limits = "descriptor limit \(budget.softLimit) (soft), \(budget.hardLimit) (hard)"
        if budget.wasLowered {
            logger.warning("""
                at most \(budget.maximumConnections) connections at once, not limits.maximumConnections (\(configured)): \
                \(limits), \(ConnectionBudget.reserve) kept for files and the database
                """)
        } else {
            logger.info("at most \(budget.maximumConnections) connections at once; \(limits)")
        }
        return budget.maximumConnections
    }

    /// The start-up error of a listening socket that could not be opened, its reason in words: NIO's own text reads
    /// "bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)".
    static func cannotListen(_ configuration: UAFServerCore.ServerConfiguration, _ error: any Error) -> UAFServerCore.ServerConfiguration.ConfigurationError {
        let reason: String
        switch (error as? IOError)?.errnoCode {
        case nil: reason = "\(error)"
        case EADDRINUSE: reason = "the port is already in use by another program: stop it, or choose another port"
        case EACCES: reason = "permission denied: a port below 1024 needs privileges, or choose a port from 1024 up"
        case EADDRNOTAVAIL: reason = "the address is not one of this machine's: choose one of its addresses, or 0.0.0.0 for all"
        case let code?: reason = SystemErrorText.reason(errno: code)
        }
        return .invalid("cannot listen on \(configuration.host):\(configuration.port): \(reason)")
    }

    /// Starts the server and returns once it listens. With port 0 the kernel picks a free port.
    public static func start(configuration: UAFServerCore.ServerConfiguration, dependencies: ServerDependencies = ServerDependencies(),
                             handleSignals: Bool = false) async throws -> RunningUAFServer {
        // A taken port is found before anything is written (the database, the development certificate beside it),
        // not after: the socket is bound and closed at once. Another program may still take the port in between;
        // then the bind below fails with the same words.
        if configuration.port != 0 {
            do {
                let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: configuration.host, port: configuration.port).get()
                try await channel.close()
            } catch {
                throw Self.cannotListen(configuration, error)
            }
        }
        let (started, continuation) = AsyncStream<Int>.makeStream()
        let built = try await buildApplication(configuration: configuration, dependencies: dependencies) { port in
            continuation.yield(port); continuation.finish()
        }
        let group = ServiceGroup(configuration: .init(
            services: [built.application] + built.backgroundServices(dependencies: dependencies, handleSignals: handleSignals),
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [], logger: dependencies.logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var boundPort: Int?
        for await port in started { boundPort = port; break }
        guard let port = boundPort else {
            // The server stopped before it ever ran (e.g. the port is taken): surface its error, with the address.
            do { try await task.value } catch {
                try? await built.stores.database.close()
                throw Self.cannotListen(configuration, error)
            }
            try? await built.stores.database.close()
            throw UAFServerCore.ServerConfiguration.ConfigurationError.invalid("the server stopped during start-up")
        }
        return RunningUAFServer(port: port, host: configuration.host, appID: built.appID, certificatePEM: built.trustPEM,
                                usesDevelopmentCertificate: built.usesDevelopmentCertificate, stores: built.stores,
                                tokenIssuer: built.tokenIssuer, certificate: built.certificate, facets: built.facets,
                                metrics: built.metrics, group: group, task: task)
    }

    /// The TLS set-up: the certificate the server presents, the PEM clients trust, and whether it was generated.
    struct TLSMaterial {
        var certificate: ServerCertificateSource
        var trustPEM: String
        var generated: Bool
    }

    static func makeTLS(_ configuration: UAFServerCore.ServerConfiguration, metrics: ServerMetrics? = nil, note: (String) -> Void = { _ in }) throws -> TLSMaterial {
        if let certificatePath = configuration.tls.certificatePath, let keyPath = configuration.tls.privateKeyPath {
            let source = try ServerCertificateSource(certificatePath: certificatePath, keyPath: keyPath,
                                                     previousCertificateSeconds: configuration.tls.previousCertificateSeconds, metrics: metrics)
            return TLSMaterial(certificate: source, trustPEM: String(decoding: source.current.fileBytes[0], as: UTF8.self), generated: false)
        }
        let hosts = Array(Set(["localhost", "127.0.0.1", "::1", configuration.host])).sorted()
        // Kept beside an SQLite file, so devices that trusted it keep trusting a restarted development server; an
        // in-memory or PostgreSQL server has no file beside it and makes a new one each start.
        let development: DevelopmentCertificate
        if case .sqlite(let path) = configuration.database {
            try StoreDatabase.createDirectory(containing: path)
            development = try DevelopmentCertificate.kept(at: path + "-development-tls", hosts: hosts,
                                                          regenerate: configuration.tls.regenerateDevelopmentCertificate, note: note)
        } else {
            development = try DevelopmentCertificate.generate(hosts: hosts)
        }
        let identity = try ServerCertificateSource.identity(chainPEM: development.certificatePEM + "\n" + development.trustAnchorPEM,
                                                            keyPEM: development.privateKeyPEM)
        return TLSMaterial(certificate: ServerCertificateSource(fixed: identity, metrics: metrics), trustPEM: development.trustAnchorPEM, generated: true)
    }
}
