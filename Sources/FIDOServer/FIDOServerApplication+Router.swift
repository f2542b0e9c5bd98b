import Foundation
import Hummingbird
import UAF

extension FIDOServerApplication {
    /// The router with every route and middleware (used by ``buildApplication(configuration:dependencies:onServerRunning:)``,
    /// and so by ``start(configuration:dependencies:handleSignals:)`` and the in-process router tests).
    /// What the router is built from: the configuration and the parts one server instance shares.
    struct RouterParts {
        var configuration: FIDOServerCore.ServerConfiguration
        var stores: Stores
        var metadata: MetadataSource
        var facets: TrustedFacetsSource
        var identity: AppIdentity
        var issuer: TokenIssuer
        var relyingPartyTokens: RelyingPartyTokenVerifier?
        var channelBinding: ServerCertificateSource?
        var firebase: FirebaseDispatcher?
        var metrics: ServerMetrics
        var readiness: Readiness
        var dependencies: ServerDependencies
        var audit: AuditTrail?
        var demoPages: DemoPages?
        var passkeys: PasskeySettings?
        var appAttestation: AppAttestationSettings
    }

    static func buildRouter(_ parts: RouterParts) -> Router<ServerRequestContext> {
        let (configuration, stores, metadata, facets, identity, issuer) = (
            parts.configuration, parts.stores, parts.metadata, parts.facets, parts.identity, parts.issuer
        )
        let (relyingPartyTokens, channelBinding, firebase, metrics) = (parts.relyingPartyTokens, parts.channelBinding, parts.firebase, parts.metrics)
        let (readiness, dependencies, audit, demoPages) = (parts.readiness, parts.dependencies, parts.audit, parts.demoPages)
        let passkeys = parts.passkeys
        let logger = dependencies.logger
        let router = Router(context: ServerRequestContext.self)
        let clients = ClientAddressResolver(configuration.clientAddress, ipv6PrefixLength: configuration.limits.ipv6PrefixLength)
        // With tracing on, the request's span wraps everything the request does.
        if configuration.observability.tracing != nil { router.add(middleware: RequestTracingMiddleware()) }
        // First, so every request (unmatched ones and errors too) gets an id and is counted.
        router.add(middleware: RequestObservationMiddleware(metrics: metrics, logger: logger, clients: clients))
        // Second, before every rule that may answer (406, 405, 404, 401), so every request a caller makes is counted;
        // only a balancer's probes, the scraper and the facets, which answer from memory, are never refused.
        let limiter = RateLimiter(limit: configuration.limits.requestsPerMinutePerAddress, clock: dependencies.clock)
        router.add(
            middleware: RateLimitMiddleware(
                limiter: limiter, clients: clients,
                exempt: HealthController.paths.union([UAFController.facetsPath])))
        let routeTable = RouteTable()
        router.add(middleware: RouteRulesMiddleware(routes: routeTable))
        router.add(middleware: UnitOfWorkMiddleware(database: stores.database))
        HealthController(
            readiness: readiness, database: stores.database, metrics: configuration.observability.metrics ? metrics : nil,
            metadata: metadata
        )
        .add(to: router)
        UAFController.addFacets(to: router, versions: configuration.protocolVersions, facets: { facets.facets })
        let services = DomainServices(
            configuration: configuration, stores: stores, metadata: metadata, facets: facets, identity: identity, issuer: issuer,
            channelBinding: channelBinding, firebase: firebase, passkeys: passkeys, appAttestation: parts.appAttestation, clock: dependencies.clock,
            onDecision: { decision in
                // Every security decision, with who took it and from where, goes to the audit stream and trail.
                let caller = RequestCaller.current
                let client = caller.flatMap { clients.client(peer: $0.peer, hops: $0.forwarded) }
                let principal = caller?.principal
                let event = AuditEvent(
                    at: dependencies.clock(), requestID: RequestID.current, clientAddress: client?.address,
                    principal: principal?.auditName, operation: decision.operation.rawValue, username: decision.username,
                    statusCode: decision.statusCode, detail: decision.detail, traceID: dependencies.traceID())
                // The event's escaped fields, never the decision's raw text: a detail may carry a caller's text.
                dependencies.auditLogger.info("\(event.message)", metadata: event.logMetadataValues)
                metrics.decided(decision)
                audit?.record(
                    event,
                    budgetKeys: AuditTrail.budgetKeys(
                        principal: principal, client: client?.clientKey(ipv6PrefixLength: configuration.limits.ipv6PrefixLength), decision: decision))
                dependencies.onDecision(decision)
            })
        let onRejection: @Sendable (OperationName, ServiceFailure) -> Void = { name, failure in
            services.environment.decide(name, failure.username, failure.status.rawValue, "rejected: \(failure.detail)")
        }
        let authorizer = Authorizer(
            configuration: configuration.authorization, relyingParty: relyingPartyTokens, issuer: issuer,
            sessions: stores.sessions, cookieName: configuration.tokens.cookieName, deviceSignatures: services.signatures,
            internalNetworks: configuration.authorization.internalDispatchNetworks.compactMap(IPNetwork.init),
            clientCertificates: configuration.authorization.clientCertificates.map(ClientCertificatePrincipals.init),
            clock: dependencies.clock, logger: logger)
        let open = router.group()
        let refused: @Sendable (String) -> Void = { detail in services.environment.decide("authorization", nil, 401, "credentials refused: \(detail)")
        }
        let protected = router.group().add(middleware: AuthorizationMiddleware(authorizer: authorizer, onRefusal: refused))
        // Open to anyone, but a caller who presents a credential gets the limits of an authorized caller.
        let identified = router.group().add(middleware: AuthorizationMiddleware(authorizer: authorizer, required: false, onRefusal: refused))
        UAFController(
            registration: services.registration, authentication: services.authentication, deregistration: services.deregistration,
            onRejection: onRejection
        ).add(open: open, identified: identified, protected: protected)
        let dispatchController = DispatchController(
            dispatch: services.dispatch, targets: services.targets, devices: services.devices,
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
            FIDO2Controller(
                passkeys: passkeys, relatedOrigins: passkeys.settings.configuration.relatedOrigins, apps: passkeys.settings.configuration.apps,
                onRejection: onRejection
            )
            .add(router: router, open: open, identified: identified, protected: protected)
        }
        ServerController(
            status: services.status, issuer: issuer, sessions: stores.sessions,
            clock: dependencies.clock, onRejection: onRejection
        ).add(open: open, protected: protected, router: router)
        routeTable.fill(
            routes: router.routes.map { ($0.method, $0.path.description) },
            documented: RouteTable.documentedMediaTypes(PackageResources.openapi_json))
        return router
    }
}
