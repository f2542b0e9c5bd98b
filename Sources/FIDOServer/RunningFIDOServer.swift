import Foundation
import ServiceLifecycle

/// A server that is running; ``stop()`` shuts it down gracefully.
public final class RunningFIDOServer: Sendable {
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

    init(
        port: Int, host: String, appID: String, certificatePEM: String, usesDevelopmentCertificate: Bool, stores: Stores,
        tokenIssuer: TokenIssuer, certificate: ServerCertificateSource, facets: TrustedFacetsSource, metrics: ServerMetrics,
        group: ServiceGroup, task: Task<Void, any Error>
    ) {
        self.facets = facets
        self.metrics = metrics
        self.certificate = certificate
        self.port = port
        self.host = host
        self.appID = appID
        self.certificatePEM = certificatePEM
        self.usesDevelopmentCertificate = usesDevelopmentCertificate
        self.stores = stores
        self.tokenIssuer = tokenIssuer
        self.group = group
        self.task = task
    }

    /// `https://host:port`
    public var baseURL: URL { URL(string: "https://\(FIDOServerApplication.displayHost(host)):\(port)")! }

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
