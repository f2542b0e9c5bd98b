import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresKit
import PostgresNIO
import Primitives
import SQLKit

/// Reaching PostgreSQL: the start-up's bounded attempts, the pool's configuration, and its refusals in words.
extension StoreDatabase {
    /// How long a starting server tries to reach PostgreSQL: `count` attempts, `pause` apart at first, doubling up
    /// to 8 s, each given `connectTimeout`. The standard ones span about half a minute: long enough for a database
    /// started beside the server (a compose file, a restart of both), short enough that a wrong host or a dead
    /// database ends the start, so an orchestrator restarts or reports it.
    public struct StartupAttempts: Sendable {
        public var count: Int
        public var pause: Duration
        public var connectTimeout: Duration
        public init(count: Int, pause: Duration, connectTimeout: Duration) {
            self.count = count
            self.pause = pause
            self.connectTimeout = connectTimeout
        }
        public static let standard = StartupAttempts(count: 6, pause: .seconds(1), connectTimeout: .seconds(5))
    }

    /// PostgreSQL could not be reached at start-up. Names the server and database, never the password.
    public struct UnreachableDatabase: Error, CustomStringConvertible {
        public let target: String
        public let attempts: Int
        public let seconds: Int
        public let reason: String
        public var description: String {
            "cannot connect to PostgreSQL at \(target) after \(attempts) attempt(s) in \(seconds) s: \(reason)"
        }
    }

    /// Opens and closes one connection until one succeeds (see ``StartupAttempts``); each failure is a warning.
    /// Returns where the URL points, which the running set's messages name too.
    static func waitUntilReachable(url: String, attempts: StartupAttempts, logger: Logger) async throws -> PostgresTarget {
        var core = try parsedURL(url).coreConfiguration
        core.options.connectTimeout = TimeAmount(attempts.connectTimeout)
        let target = PostgresTarget(core)
        let started = ContinuousClock.now
        var pause = attempts.pause
        // The probe's own logs (a refused connection at `info`) would repeat each warning below.
        var quiet = logger
        quiet.logLevel = .critical
        for attempt in 1...max(1, attempts.count) {
            do {
                let connection = try await PostgresConnection.connect(
                    on: PostgresClient.defaultEventLoopGroup.next(), configuration: core,
                    id: 0, logger: quiet)
                try? await connection.close()
                if attempt > 1 { logger.notice("PostgreSQL at \(target) answers (attempt \(attempt))") }
                return target
            } catch {
                let reason = Self.reason(error, target: target)
                guard attempt < attempts.count else {
                    let seconds = Int((ContinuousClock.now - started).components.seconds)
                    throw UnreachableDatabase(target: target.description, attempts: attempt, seconds: seconds, reason: reason)
                }
                logger.warning(
                    "PostgreSQL at \(target) does not answer (attempt \(attempt) of \(attempts.count)): \(reason); retrying in \(pause.components.seconds) s"
                )
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(8))
            }
        }
        return target
    }

    /// Why a connection attempt to `target` ("host:port, database name") failed, in words an operator can act on:
    /// PostgreSQL's refusals by their SQLSTATE, the network's by their errno, at most 300 characters. (`PSQLError`'s
    /// description is deliberately generic; NIO's reads "SingleConnectionFailure(target: …) (errno: 111)".)
    static func reason(_ error: any Error, target: PostgresTarget) -> String {
        let text = words(error, target)
        return text.count <= 300 ? text : String(text.prefix(300)) + "…"
    }

    /// Where a `postgres://` URL points, as the operator's messages name it (never with the password).
    struct PostgresTarget: Sendable, CustomStringConvertible {
        var place: String, database: String, user: String
        init(_ core: PostgresConnection.Configuration) {
            place = "\(core.host ?? "?"):\(core.port ?? 5432)"
            database = core.database ?? core.username
            user = core.username
        }
        var description: String { "\(place), database \(database)" }
    }

    private static func words(_ error: any Error, _ target: PostgresTarget) -> String {
        let (host, database, user) = (target.place, target.database, target.user)
        if let error = error as? NIOConnectionError {
            if let dns = error.dnsAAAAError ?? error.dnsAError { return words(dns, target) }
            if let first = error.connectionErrors.first?.error { return words(first, target) }
        }
        if let io = error as? IOError { return SystemErrorText.connectionReason(errno: io.errnoCode, place: host) }
        if error is SocketAddressError.UnknownHost { return "the host name in the URL is unknown (DNS found no address for it)" }
        if let error = error as? ChannelError, case .connectTimeout = error { return "\(host) did not answer in time" }
        if error is NIOSSLError { return "the TLS handshake failed (\(error)): check sslmode and the server's certificate" }
        // The pool's own error type is internal to PostgresNIO: read by its text. It fails waiting leases once
        // connections could not be opened for a minute.
        if String(describing: error).contains("connectionCreationCircuitBreakerTripped") {
            return "no connection to \(host) could be opened for a minute: is PostgreSQL running, and reachable from here?"
        }
        guard let psql = error as? PSQLError else { return String(describing: error) }
        if let state = psql.serverInfo?[.sqlState] {
            switch state {
            case "3D000": return "the database \(database) does not exist on that server: create it, or name another"
            case "28P01": return "the password of user \(user) is wrong"
            case "28000": return "user \(user) may not connect to database \(database) from here (pg_hba.conf)"
            case "53300": return "the server has no connection left (max_connections reached)"
            case "57P03": return "the server is starting up or shutting down"
            default: break
            }
        }
        if let message = psql.serverInfo?[.message] { return message }
        if let underlying = psql.underlying { return words(underlying, target) }
        return "\(psql.code)"
    }

    /// The pool an instance's PostgreSQL connections come from, opening each on the next event loop in turn
    /// (`EventLoopsInTurn`).
    static func postgresClient(url: String, poolSize: Int, logger: Logger) throws -> PostgresClient {
        PostgresClient(
            configuration: try postgresConfiguration(url: url, poolSize: poolSize),
            eventLoopGroup: EventLoopsInTurn(PostgresClient.defaultEventLoopGroup), backgroundLogger: logger)
    }

    /// A `postgres://` URL parsed, or the configuration error that says it is not one.
    static func parsedURL(_ url: String) throws -> SQLPostgresConfiguration {
        do { return try SQLPostgresConfiguration(url: url) } catch {
            throw ServerConfiguration.ConfigurationError.invalid("database URL is not a usable postgres:// URL: \(error)")
        }
    }

    /// Translates a `postgres://user:password@host:port/database?sslmode=…` URL (libpq's form) into the pool's
    /// configuration. `sslmode=disable` is honoured only because the operator wrote it: the default prefers TLS.
    static func postgresConfiguration(url: String, poolSize: Int) throws -> PostgresClient.Configuration {
        let core = try parsedURL(url).coreConfiguration
        let tls: PostgresClient.Configuration.TLS
        switch (core.tls.isEnforced, core.tls.isAllowed, core.tls.sslContext) {
        case (true, _, let context?): tls = .require(context.configuration)
        case (false, true, let context?): tls = .prefer(context.configuration)
        default: tls = .disable
        }
        guard let host = core.host, let port = core.port else {
            throw ServerConfiguration.ConfigurationError.invalid("database URL needs a host")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: core.username,
            password: core.password, database: core.database, tls: tls)
        // Every connection is held by `PostgresConnections` for as long as it lives, so the pool never has an idle
        // one to keep alive or time out: the set runs its own keep-alive.
        configuration.options.maximumConnections = poolSize
        configuration.options.minimumConnections = 0
        configuration.options.keepAliveBehavior = nil
        return configuration
    }
}
