import Foundation
import Hummingbird
import ServiceLifecycle

extension FIDOServerApplication {
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
        /// The PEM clients trust (see ``RunningFIDOServer/certificatePEM``).
        public let trustPEM: String
        public let usesDevelopmentCertificate: Bool
        let identity: AppIdentity
        /// This instance's metrics (served at `/metrics`).
        public let metrics: ServerMetrics
        /// Turns false when graceful shutdown begins (`/health/ready`).
        public let readiness: Readiness
        let shutdownDrain: Duration
        /// How long a finished operation's status is kept (`limits.statusRetentionSeconds`).
        let statusRetention: TimeInterval
        /// The push dispatcher (its HTTP client lives as long as the service group).
        let firebase: FirebaseDispatcher?
        /// The relying party's keys (refreshed from `authorization.jwt.jwksURL` when set).
        let relyingPartyTokens: RelyingPartyTokenVerifier?
        /// The database side of the audit trail; nil with `observability.auditRetentionDays` 0.
        package let audit: AuditTrail?
        /// Every method and path the router serves: what the OpenAPI document must describe, no more, no less.
        let routes: [Route]
        struct Route: Hashable {
            var method: String
            var path: String
        }
        /// The appID in force (fixed once the port is bound).
        public var appID: String { identity.appID }
        /// Closes what ``FIDOServerApplication/buildApplication(configuration:dependencies:onServerRunning:)`` opened,
        /// for a caller that never runs the service group (in-process tests): the push dispatcher's HTTP client and
        /// the database.
        package func close() async throws {
            await firebase?.shutdown()
            try await stores.database.close()
        }
        /// The background services that belong with the application (expiry purge, facets and metadata watchers, the
        /// token-signing key refresher).
        public func backgroundServices(dependencies: ServerDependencies, handleSignals: Bool) -> [any Service] {
            var services: [any Service] = [
                ExpiryPurger(
                    stores: stores, clock: dependencies.clock, interval: ExpiryPurger.interval,
                    ceremonyRetention: statusRetention, logger: dependencies.logger)
            ]
            if let firebase { services.append(firebase) }
            if let audit { services.append(audit) }
            if certificate.files != nil {
                services.append(
                    ServerCertificateWatcher(
                        source: certificate, handleSignals: handleSignals, clock: dependencies.clock,
                        logger: dependencies.logger))
            }
            if facets.path != nil {
                services.append(
                    TrustedFacetsWatcher(source: facets, interval: .seconds(2), handleSignals: handleSignals, logger: dependencies.logger))
            }
            if let relyingPartyTokens, relyingPartyTokens.configuration.jwksURL != nil {
                services.append(RelyingPartyKeyRefresher(verifier: relyingPartyTokens, clock: dependencies.clock))
            }
            if tokenIssuer.signingKeys != nil {
                services.append(SigningKeyRefresher(issuer: tokenIssuer, clock: dependencies.clock, logger: dependencies.logger))
            }
            if metadata.service != nil {
                services.append(
                    MetadataWatcher(source: metadata, handleSignals: handleSignals, clock: dependencies.clock, logger: dependencies.logger))
            }
            // Last, so the group shuts it down first: readiness turns 503 before the server stops accepting.
            services.append(DrainService(readiness: readiness, drain: shutdownDrain, logger: dependencies.logger))
            return services
        }
    }
}
