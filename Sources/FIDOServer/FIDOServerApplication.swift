@_exported import FIDOServerCore
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Primitives
import ServiceLifecycle
import UAF

/// Builds and starts the server from one configuration value.
public enum FIDOServerApplication {
    static func displayHost(_ host: String) -> String { host.contains(":") ? "[\(host)]" : host }

    /// Builds the server from one configuration value (Hummingbird's pattern): used by ``start(configuration:dependencies:handleSignals:)``
    /// (and so by `mauth server` and the demo) and by in-process router tests. Opens the database (running its
    /// migrations); the caller owns it (`built.stores.database.close()`).
    public static func buildApplication(
        configuration: FIDOServerCore.ServerConfiguration, dependencies: ServerDependencies = ServerDependencies(),
        onServerRunning: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Built {
        try configuration.validate()
        try configuration.checkTrustedFacets()
        // Before anything is written (the development certificate beside the database file, the database itself).
        try StoreDatabase.checkExistingFile(configuration.database)
        let logger = dependencies.logger
        if configuration.authorization.developmentMode {
            logger.warning(
                "DEVELOPMENT MODE: protected endpoints accept every caller; anyone can register keys for any username. Never use this in production.")
            if configuration.facets.isEmpty && configuration.facetsPath == nil {
                logger.warning("no trusted facets: every client will refuse the appID until facets or facetsPath is set")
            }
        } else if configuration.authorization.jwt == nil && configuration.authorization.trustedProxy == nil
            && configuration.authorization.clientCertificates == nil
        {
            logger.notice("no relying-party JWT keys or trusted proxy configured: registration requests need a session from a prior authentication")
        }
        if configuration.demoSite {
            logger.warning(
                "DEMO SITE at /demo: its pages enroll new usernames and send approvals to them without a credential. Never use this in production.")
        }
        let metrics = ServerMetrics()
        let tls = try makeTLS(configuration, metrics: metrics, note: { logger.notice("\($0)") })
        let clientAuthorities = try clientCertificateAuthorities(configuration)
        let presented = tls.certificate.current
        let now = dependencies.clock()
        if now < presented.notBefore || now > presented.notAfter {
            logger.warning("the TLS certificate is valid from \(presented.notBefore) to \(presented.notAfter), not now: clients will refuse it")
        }
        // Behind a TLS-terminating proxy clients see the proxy's certificate, not ours: then nothing is compared.
        let channelBinding = configuration.checkChannelBinding ? tls.certificate : nil
        let metadata = try await MetadataSource.load(configuration, clock: dependencies.clock, metrics: metrics, logger: logger)
        let facets =
            try configuration.facetsPath.map { try TrustedFacetsSource(path: $0, allowWildcards: configuration.authorization.developmentMode) }
            ?? TrustedFacetsSource(facets: configuration.facets)
        var passkeys = try configuration.fido2.map(PasskeySettings.init)  // with the decoys' key once the database is open
        let appAttestation = try AppAttestationSettings(configuration)
        var relyingPartyTokens: RelyingPartyTokenVerifier?
        if let jwt = configuration.authorization.jwt {
            relyingPartyTokens = try await RelyingPartyTokenVerifier.load(jwt, logger: logger, proxy: configuration.outboundProxy)
        }
        let readiness = Readiness()
        let database = try await StoreDatabase.open(
            configuration.database, logger: logger, metrics: metrics, traced: configuration.observability.tracing != nil)
        let stores = Stores(database: database)
        var firebase: FirebaseDispatcher?
        do {
            let identity = AppIdentity()
            let baseURL: @Sendable (Int) -> String = { port in "https://\(displayHost(configuration.host)):\(port)" }
            let appID: @Sendable (Int) -> String = { port in configuration.appID ?? baseURL(port) + "/nevisfido/uaf/1.1/facets" }
            identity.set(appID(configuration.port), baseURL: baseURL(configuration.port))
            let defaultIssuer = "https://\(displayHost(configuration.host))\(configuration.port == 0 ? "" : ":\(configuration.port)")"
            let issuer = try await TokenIssuer.load(configuration.tokens, issuer: defaultIssuer, stores: stores, now: dependencies.clock())
            firebase = try configuration.dispatch.firebase.map {
                try FirebaseDispatcher(configuration: $0, logger: logger, clock: dependencies.clock, proxy: configuration.outboundProxy)
            }
            let observability = configuration.observability
            let audit =
                observability.auditRetentionDays == 0
                ? nil
                : AuditTrail(
                    store: stores.audit, retention: TimeInterval(observability.auditRetentionDays) * 86_400,
                    eventsPerMinute: observability.auditAnonymousEventsPerMinute, clock: dependencies.clock, metrics: metrics, logger: logger)
            // The decoys' key lives in the database, shared by every instance.
            passkeys = try await passkeys?.withDecoyKey(from: stores.serverSecrets, now: dependencies.clock())
            let router = buildRouter(
                RouterParts(
                    configuration: configuration, stores: stores, metadata: metadata, facets: facets, identity: identity, issuer: issuer,
                    relyingPartyTokens: relyingPartyTokens, channelBinding: channelBinding, firebase: firebase, metrics: metrics,
                    readiness: readiness, dependencies: dependencies, audit: audit,
                    demoPages: configuration.demoSite ? try DemoPages(passkeys: passkeys != nil, developmentCertificate: tls.generated) : nil,
                    passkeys: passkeys, appAttestation: appAttestation))
            var http1 = HTTP1Channel.Configuration()
            http1.idleTimeout = .seconds(Int64(configuration.limits.idleTimeoutSeconds))
            let deadline = TimeAmount.seconds(Int64(configuration.limits.requestDeadlineSeconds))
            let handshakeDeadline = TimeAmount.seconds(Int64(configuration.limits.handshakeDeadlineSeconds))
            let maximum = connectionCap(configuration.limits.maximumConnections, logger: logger)
            let cap = ConnectionCap(
                maximum: maximum, perAddress: min(configuration.limits.maximumConnectionsPerAddress, maximum),
                onRefusal: { metrics.connectionRefused() }, onEviction: { metrics.connectionEvicted() },
                onCount: { metrics.connectionsHeld($0) })
            let clients = ClientAddressResolver(configuration.clientAddress, ipv6PrefixLength: configuration.limits.ipv6PrefixLength)
            http1.additionalChannelHandlers = {
                [cap.handler(clients: clients), RequestDeadline.handler(deadline: deadline, handshakeDeadline: handshakeDeadline)]
            }
            let application = Application(
                responder: AppPathResponder(base: router.buildResponder()),
                server: try .tls(
                    .http1(configuration: http1), tlsConfiguration: tls.certificate.tlsConfiguration(clientAuthorities: clientAuthorities)),
                configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "mauth"),
                onServerRunning: { channel in
                    // With port 0 the kernel picked the port: the appID names it before the first request arrives.
                    let port = channel.localAddress?.port ?? configuration.port
                    identity.set(appID(port), baseURL: baseURL(port))
                    onServerRunning(port)
                },
                logger: logger)
            return Built(
                application: application, stores: stores, tokenIssuer: issuer, facets: facets, metadata: metadata, certificate: tls.certificate,
                trustPEM: tls.trustPEM, usesDevelopmentCertificate: tls.generated, identity: identity, metrics: metrics,
                readiness: readiness, shutdownDrain: .seconds(configuration.observability.shutdownDrainSeconds),
                statusRetention: TimeInterval(configuration.limits.statusRetentionSeconds), firebase: firebase,
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
            logger.warning(
                """
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
    static func cannotListen(
        _ configuration: FIDOServerCore.ServerConfiguration, _ error: any Error
    ) -> FIDOServerCore.ServerConfiguration.ConfigurationError {
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
    public static func start(
        configuration: FIDOServerCore.ServerConfiguration, dependencies: ServerDependencies = ServerDependencies(),
        handleSignals: Bool = false
    ) async throws -> RunningFIDOServer {
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
            continuation.yield(port)
            continuation.finish()
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [built.application] + built.backgroundServices(dependencies: dependencies, handleSignals: handleSignals),
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [], logger: dependencies.logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var boundPort: Int?
        for await port in started {
            boundPort = port
            break
        }
        guard let port = boundPort else {
            // The server stopped before it ever ran (e.g. the port is taken): surface its error, with the address.
            do { try await task.value } catch {
                try? await built.stores.database.close()
                throw Self.cannotListen(configuration, error)
            }
            try? await built.stores.database.close()
            throw FIDOServerCore.ServerConfiguration.ConfigurationError.invalid("the server stopped during start-up")
        }
        return RunningFIDOServer(
            port: port, host: configuration.host, appID: built.appID, certificatePEM: built.trustPEM,
            usesDevelopmentCertificate: built.usesDevelopmentCertificate, stores: built.stores,
            tokenIssuer: built.tokenIssuer, certificate: built.certificate, facets: built.facets,
            metrics: built.metrics, group: group, task: task)
    }
}
