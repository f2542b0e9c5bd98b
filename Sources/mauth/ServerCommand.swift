import ArgumentParser
import FIDOServer
import Foundation
import Logging

/// The options of a running server, shared by `mauth server` and `mauth demo web`.
struct ServerOptions: ParsableArguments {
    @Option(help: "Configuration file (JSON); MAUTH_* environment variables override it.") var config: String?
    @Option(help: "Address to listen on.") var host: String?
    @Option(help: "Port to listen on (0 picks a free one).") var port: Int?
    @Option(help: "SQLite database file, :memory:, or a postgres:// URL.") var database: String?
    @Flag(help: "Development mode: protected endpoints accept every caller (never in production).") var developmentMode = false
    @Option(help: "Write the generated development certificate (PEM) here, for clients to trust.") var writeCertificate: String?
    @Flag(help: "Make a new development certificate even if a good one is kept beside the SQLite file (clients must trust it anew).")
    var regenerateCertificate = false
    @Option(
        name: .customLong("certificate-host"),
        help:
            "A further DNS name or IP address the development certificate covers (repeatable), such as this machine's LAN address for a phone: --certificate-host 192.168.1.20."
    )
    var certificateHosts: [String] = []
    @Option(
        help: "Log level: trace, debug, info (default; one line per UAF decision), notice, warning, error, critical. MAUTH_LOG_LEVEL sets it too.")
    var logLevel: String?
    @Option(help: "Log format: text (default) or json (one JSON object a line). MAUTH_LOG_FORMAT sets it too.")
    var logFormat: String?

    /// The configuration from the file, the environment and these options.
    func configuration() throws -> ServerConfiguration {
        var configuration = try ServerConfiguration.load(path: config)
        if let host { configuration.host = host }
        if let port { configuration.port = port }
        if let database { configuration.database = .init(text: database) }
        if developmentMode { configuration.authorization.developmentMode = true }
        if regenerateCertificate { configuration.tls.regenerateDevelopmentCertificate = true }
        for host in certificateHosts where !DevelopmentCertificate.isHostName(host) {
            throw ValidationError("--certificate-host \(host): not a DNS name or an IP address")
        }
        configuration.tls.developmentCertificateHosts = certificateHosts
        if let logFormat {
            guard let format = ServerConfiguration.Observability.LogFormat(rawValue: logFormat) else {
                throw ValidationError("unknown log format \(logFormat): text or json")
            }
            configuration.observability.logFormat = format
        }
        return configuration
    }

    /// Validates `configuration`, starts the logging, the server and whatever `beside` says is running with it,
    /// and serves until a signal ends it.
    func serve(_ configuration: ServerConfiguration, beside: [String] = []) async throws {
        try configuration.validate()
        let levelText = logLevel ?? ProcessInfo.processInfo.environment["MAUTH_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: levelText) else { throw ValidationError("unknown log level \(levelText)") }
        let format = configuration.observability.logFormat
        // The audit stream's own file, when configured: JSON lines at info whatever the general level, since an
        // operator who asks for an audit file wants every decision in it.
        let auditSink = try configuration.observability.auditLogPath.map { path in
            do { return try LogSink.appending(to: path) } catch {
                throw ServerConfiguration.ConfigurationError.invalid("observability.auditLogPath: \(error)")
            }
        }
        LoggingSystem.bootstrap { label in
            if label == "mauth.audit", let auditSink { return ServerLogHandler(label: label, format: .json, sink: auditSink) }
            var handler = ServerLogHandler(label: label, format: format)
            handler.logLevel = level
            return handler
        }
        if let writeCertificate {
            // Checked before the server starts, so a path that cannot be written fails the start instead of
            // failing after "listening" was said.
            let directory = URL(fileURLWithPath: writeCertificate).deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue,
                FileManager.default.isWritableFile(atPath: directory)
            else {
                throw ServerConfiguration.ConfigurationError.invalid(
                    "--write-certificate \(writeCertificate): the directory \(directory) does not exist or is not writable")
            }
        }
        let tracing = try configuration.observability.tracing.map { try ServerTracing.start($0, logger: Logger(label: "mauth.tracing")) }
        let noTrace: @Sendable () -> String? = { nil }
        let server: RunningFIDOServer
        do {
            server = try await FIDOServerApplication.start(
                configuration: configuration, dependencies: ServerDependencies(traceID: tracing == nil ? noTrace : ServerTracing.traceID),
                handleSignals: true)
        } catch {
            await tracing?.stop()
            throw error
        }
        say("mauth server listening on \(server.baseURL.absoluteString)")
        say("appID \(server.appID)")
        if configuration.demoSite { say("demo site: \(server.baseURL.absoluteString)/demo") }
        if server.usesDevelopmentCertificate {
            say("TLS: self-signed development certificate (configure tls.certificatePath and privateKeyPath, or tls.pkcs12Path, for production)")
            if let writeCertificate {
                try Data(server.certificatePEM.utf8).write(to: URL(fileURLWithPath: writeCertificate))
                say("trust anchor written to \(writeCertificate) (a one-off CA whose key is discarded; it vouches for this server only)")
            }
        }
        if let settings = configuration.observability.tracing { say("traces: OTLP (\(settings.protocol)) to \(settings.endpoint)") }
        beside.forEach { say($0) }
        do { try await server.wait() } catch {
            await tracing?.stop()
            throw error
        }
        await tracing?.stop()
    }
}

struct ServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "server", abstract: "Run the FIDO UAF server (nevisFIDO HTTP API) over TLS.")

    @OptionGroup var options: ServerOptions
    @Flag(help: "Serve the relying-party web demo at /demo (never in production: it enrolls and approves for anyone).") var demoSite = false
    @Flag(
        name: .customLong("check-config"),
        help: "Check the configuration and every file it names, report every problem at once, and exit (1 when any); writes and contacts nothing."
    )
    var checkConfig = false

    func run() async throws {
        var configuration = try options.configuration()
        if demoSite { configuration.demoSite = true }
        if checkConfig { return try await Self.check(configuration) }
        try await options.serve(configuration)
    }

    /// `--check-config`: the problems, one a line, then what only a start can check.
    static func check(_ configuration: ServerConfiguration) async throws {
        let result = await FIDOServerApplication.checkConfiguration(configuration)
        for problem in result.problems { say("problem: \(problem)") }
        for item in result.notChecked { say("not checked: \(item)") }
        guard result.problems.isEmpty else {
            say("\(result.problems.count) problem(s): the server would not start")
            throw ExitCode(1)
        }
        say("configuration OK: the server would start (\(result.notChecked.count) item(s) are checked only at start)")
    }
}
