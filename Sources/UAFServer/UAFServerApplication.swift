import Foundation
import Hummingbird
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import UAF
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server that is running; ``stop()`` shuts it down gracefully.
public final class RunningUAFServer: Sendable {
    public let port: Int
    public let host: String
    public let appID: String
    /// The PEM of the certificate the server presents (what a debug-flavor client trusts explicitly).
    public let certificatePEM: String
    /// Whether the certificate was generated at start-up (no certificate configured).
    public let usesDevelopmentCertificate: Bool
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    private let repository: any Repository

    init(port: Int, host: String, appID: String, certificatePEM: String, usesDevelopmentCertificate: Bool,
         group: ServiceGroup, task: Task<Void, any Error>, repository: any Repository) {
        self.port = port; self.host = host; self.appID = appID; self.certificatePEM = certificatePEM
        self.usesDevelopmentCertificate = usesDevelopmentCertificate; self.group = group; self.task = task; self.repository = repository
    }

    /// `https://host:port`
    public var baseURL: URL {
        let h = host.contains(":") ? "[\(host)]" : host
        return URL(string: "https://\(h):\(port)")!
    }

    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
        try await repository.close()
    }

    /// The repository, for tests and the admin command.
    public var repositoryForTests: any Repository { repository }

    /// Waits until the server stops (e.g. SIGINT/SIGTERM for `mauth server`).
    public func wait() async throws {
        try await task.value
        try await repository.close()
    }
}

/// Builds and starts the server from one configuration value.
public enum UAFServerApplication {
    /// Starts the server. With port 0 a free loopback port is chosen first, so that the appID (which names the
    /// port) is known before the first request.
    public static func start(configuration: ServerConfiguration, logger: Logger = Logger(label: "mauth.server"),
                             handleSignals: Bool = false, clock: @escaping @Sendable () -> Date = { Date() },
                             onDecision: @escaping @Sendable (ServerDecision) -> Void = { _ in }) async throws -> RunningUAFServer {
        try configuration.validate()
        let port = configuration.port == 0 ? try freePort(host: configuration.host) : configuration.port
        let displayHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        let appID = configuration.appID ?? "https://\(displayHost):\(port)/nevisfido/uaf/1.1/facets"

        let (tlsConfiguration, certificatePEM, generated) = try makeTLS(configuration)
        let metadata = try configuration.loadMetadata()
        let repository = try await SQLiteRepository.open(configuration.database)
        let service = UAFService(
            appID: appID, facets: configuration.facets, repository: repository, metadata: metadata,
            requestLifetime: TimeInterval(configuration.requestLifetimeSeconds),
            counterPolicy: configuration.rejectCounterRegression ? .reject : .ignore, clock: clock,
            onDecision: { decision in
                logger.info("\(decision.description)")
                onDecision(decision)
            })

        let router = Router()
        UAFController(service: service).add(to: router)
        let (started, continuation) = AsyncStream<Void>.makeStream()
        let app = Application(
            router: router,
            server: try .tls(.http1(), tlsConfiguration: tlsConfiguration),
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: "mauth"),
            onServerRunning: { _ in continuation.yield(); continuation.finish() },
            logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [app, ChallengePurger(repository: repository, clock: clock, interval: .seconds(60), logger: logger)],
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [], logger: logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var running = false
        for await _ in started { running = true; break }
        guard running else {
            // The server stopped before it ever ran (e.g. the port is taken): surface its error.
            try await task.value
            throw ServerConfiguration.ConfigurationError.invalid("the server stopped during start-up")
        }
        return RunningUAFServer(port: port, host: configuration.host, appID: appID, certificatePEM: certificatePEM,
                                usesDevelopmentCertificate: generated, group: group, task: task, repository: repository)
    }

    static func makeTLS(_ configuration: ServerConfiguration) throws -> (TLSConfiguration, String, Bool) {
        if let certificatePath = configuration.tls.certificatePath, let keyPath = configuration.tls.privateKeyPath {
            let chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
            let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            let pem = try String(contentsOfFile: certificatePath, encoding: .utf8)
            return (try tlsConfiguration(chain: chain, key: key), pem, false)
        }
        let hosts = Array(Set(["localhost", "127.0.0.1", "::1", configuration.host]))
        let development = try DevelopmentCertificate.generate(hosts: hosts)
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(development.certificatePEM.utf8))
        let key = try NIOSSLPrivateKey(bytes: Array(development.privateKeyPEM.utf8), format: .pem)
        return (try tlsConfiguration(chain: chain, key: key), development.certificatePEM, true)
    }

    static func tlsConfiguration(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.minimumTLSVersion = .tlsv12
        return tls
    }

    /// Asks the kernel for a free port on `host`.
    static func freePort(host: String) throws -> Int {
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw notAnAddress(host) }
            try bindEphemeral(&address, family: AF_INET6, host: host)
            return Int(UInt16(bigEndian: address.sin6_port))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else { throw notAnAddress(host) }
        try bindEphemeral(&address, family: AF_INET, host: host)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func notAnAddress(_ host: String) -> ServerConfiguration.ConfigurationError {
        .invalid("host \(host) is not an IP address; set a port explicitly")
    }

    /// Binds a socket of `family` to `address` with port 0 and reads back the port the kernel chose.
    static func bindEphemeral<Address>(_ address: inout Address, family: Int32, host: String) throws {
        #if canImport(Glibc)
        let streamType = Int32(SOCK_STREAM.rawValue)
        #else
        let streamType = SOCK_STREAM
        #endif
        let fd = socket(family, streamType, 0)
        guard fd >= 0 else { throw ServerConfiguration.ConfigurationError.invalid("cannot open a socket") }
        defer { close(fd) }
        var length = socklen_t(MemoryLayout<Address>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                guard bind(fd, sa, length) == 0, getsockname(fd, sa, &length) == 0 else {
                    throw ServerConfiguration.ConfigurationError.invalid("cannot bind \(host)")
                }
            }
        }
    }
}
