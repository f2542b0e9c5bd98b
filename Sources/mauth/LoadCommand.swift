import ArgumentParser
import Crypto
import FIDOServer
import FIDOSimulation
import Foundation
import LoadGenerator
import Logging
import Primitives

struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Drive a FIDO server with many virtual devices or passkeys and report flows/s and latency percentiles.",
        discussion: """
            Without --url, starts --instances embedded servers on loopback (a temporary SQLite file, or --database \
            postgres://… which they share) and loads them. With --url, loads running servers: trust their certificate \
            with --ca-file, authorize registrations with --relying-party-key (the server trusts its public key), or run \
            the servers in development mode. Servers should set limits.requestsPerMinutePerAddress to 0 for a load test \
            from one address, or the load is rate-limited (reported as HTTP 429).
            """)

    @Option(name: .customLong("url"), help: "A server base URL (https://host:port); repeat to spread connections over several servers.")
    var urls: [String] = []
    @Option(help: "PEM file with the certificates to trust for --url servers (default: the system's roots).") var caFile: String?
    @Option(help: "Embedded servers to start when no --url is given.") var instances = 1
    @Option(help: "Database of the embedded servers: an SQLite path or a postgres:// URL (default: a temporary SQLite file).")
    var database: String?
    @Option(help: "Concurrent connections (one closed loop of virtual devices each).") var connections = 32
    @Option(help: "Length of the measured phase, in seconds (ignored with --flows).") var duration: Double = 10
    @Option(help: "Stop the measured phase after this many flows instead of after --duration.") var flows: Int?
    @Option(
        help:
            "authentication, registration, passkey (sign-ins with passkeys registered first, over the FIDO2 API), or baseline (two GET /health/live per flow: the stack's ceiling, no UAF work)."
    ) var flow: LoadPlan.Flow = .authentication
    @Option(help: "The origin the virtual passkeys sign for; a --url server's fido2.origins must list it.") var passkeyOrigin = "https://localhost"
    @Option(help: "Users registered before an authentication run.") var users = 1000
    @Flag(
        help:
            "Write the --users registrations straight into the embedded servers' database (keys made here) instead of registering each over HTTP: for populations of millions."
    )
    var fillDatabase = false
    @Option(help: "Have every authentication confirm this transaction text.") var transaction: String?
    @Option(help: "PEM P-256 private key whose ES256 JWTs authorize registrations (for --url servers).") var relyingPartyKey: String?
    @Option(help: "iss of the registration JWTs.") var issuer = "https://rp.load.example"
    @Option(help: "aud of the registration JWTs.") var audience = "mauth-server"
    @Option(help: "The facet id the virtual devices report.") var facetId = SoftwareAuthenticator.virtualDeviceFacetID
    @Option(
        name: .customLong("server-pid"),
        help: "Report the peak resident memory and the CPU per flow of this server process (on this machine); repeatable.")
    var serverPIDs: [Int32] = []
    @Option(
        name: .customLong("database-process"),
        help: "Report the CPU per flow of every process with this name (on this machine), together: postgres for PostgreSQL's sessions and workers.")
    var databaseProcess: String?
    @Option(help: "Seconds a request may take before it counts as a connection error.") var timeout: Int64 = 30
    @Flag(help: "Send every accepted response again to the next server: it must be refused (at-most-once across instances).")
    var replayCheck = false
    @Flag(help: "After a registration run, authenticate every user that was answered 1200 (nothing accepted may be lost).")
    var verify = false
    @Flag(help: "Print the report as JSON on standard output (progress still goes to standard error).") var json = false
    @Flag(help: "No progress lines.") var quiet = false
    @Flag(
        help:
            "Answer the server's app attestation asks with App Attest: one key per virtual device, attested on its first UAF operation, asserting afterwards. Embedded servers then require it for registration and authentication."
    )
    var appAttestation = false
    @Option(
        help:
            "With --app-attestation: the simulated App Attest authority, a PEM file. When it does not exist it is made, with its root certificate in FILE.root.pem for a --url server's appAttestation.apple.rootCertificatesPath, and the command stops there."
    )
    var appAttestAuthority: String?
    @Flag(
        inversion: .prefixedNo,
        help:
            "With --url, on Linux: run the generator's threads under SCHED_BATCH, so that a thread woken by an answer never preempts a server sharing the cores. Embedded servers share the generator's threads and keep normal scheduling."
    )
    var batchScheduling = true

    func validate() throws {
        guard (1...3600).contains(timeout) else { throw ValidationError("--timeout must be 1...3600 seconds") }
        guard (1...16).contains(instances) else { throw ValidationError("--instances must be 1...16") }
        if instances > 1, !(database ?? "").hasPrefix("postgres") {
            throw ValidationError("several embedded instances share one database: give --database postgres://…")
        }
        if verify, flow != .registration { throw ValidationError("--verify checks a registration run (--flow registration)") }
        if !urls.isEmpty, database != nil { throw ValidationError("--database is for embedded servers; a --url server has its own") }
        if fillDatabase, !urls.isEmpty {
            throw ValidationError("--fill-database writes into embedded servers' database; a --url server's is its own")
        }
        if fillDatabase, flow != .authentication { throw ValidationError("--fill-database prepares the users of an authentication run") }
        if appAttestAuthority != nil, !appAttestation { throw ValidationError("--app-attest-authority is for --app-attestation") }
        if appAttestation, !urls.isEmpty, appAttestAuthority == nil {
            throw ValidationError("a --url server must trust the devices' App Attest root: give --app-attest-authority FILE")
        }
        if appAttestation, ![.authentication, .registration].contains(flow) {
            throw ValidationError("--app-attestation attests UAF operations: --flow authentication or registration")
        }
        if let name = databaseProcess, let problem = CPUUse.problem(watchingProcessesNamed: name) {
            throw ValidationError("--database-process: \(problem)")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .error
            return handler
        }
        var plan = LoadPlan(
            targets: [], connections: connections, flow: flow,
            stop: flows.map { .flows($0) } ?? .duration(seconds: duration), population: users,
            transactionText: transaction, facetID: facetId)
        plan.replayCheck = replayCheck
        plan.passkeyOrigin = passkeyOrigin
        plan.requestTimeoutSeconds = timeout
        plan.verify = verify
        plan.serverPIDs = serverPIDs
        plan.databaseProcess = databaseProcess
        if appAttestation {
            guard let authority = try appAttestAuthorityToUse() else { return }
            plan.appAttest = .init(authority: authority)
        }
        var servers: [RunningFIDOServer] = []
        var directory: URL?
        if urls.isEmpty {
            let relyingParty = LocalRelyingParty(issuer: issuer, audience: audience)
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-load-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            directory = folder
            let jwks = folder.appendingPathComponent("relying-party.jwks").path
            try relyingParty.writeJWKS(to: jwks)
            var configuration = ServerConfiguration(
                host: "127.0.0.1", port: 0, facets: [facetId],
                database: database.map { .init(text: $0) } ?? .sqlite(path: folder.appendingPathComponent("load.sqlite").path))
            configuration.authorization.jwt = .init(jwksPath: jwks, issuer: relyingParty.issuer, audience: relyingParty.audience)
            configuration.fido2 = .init(rpId: URL(string: passkeyOrigin)?.host ?? "localhost", origins: [passkeyOrigin])
            // All load comes from one address: the per-address limits would measure the limiter, not the server.
            configuration.limits.requestsPerMinutePerAddress = 0
            configuration.limits.maximumConnectionsPerAddress = configuration.limits.maximumConnections
            if let appAttest = plan.appAttest {
                configuration.appAttestation = try .virtualDevice(
                    trusting: appAttest.authority, writingRootTo: folder.appendingPathComponent("app-attest-root.pem"))
                configuration.policies = ["default": .init(appAttestation: .init(registration: .require, authentication: .require))]
            }
            var logger = Logger(label: "mauth.load.server")
            logger.logLevel = .error
            for _ in 0..<instances {
                servers.append(try await FIDOServerApplication.start(configuration: configuration, dependencies: ServerDependencies(logger: logger)))
            }
            plan.targets = servers.map(\.baseURL)
            if fillDatabase {
                // As the server stores a registration by the software authenticator (surrogate basic attestation).
                let stores = servers[0].stores
                plan.writeRegistrations = { batch in
                    let now = Date()
                    try await stores.registrations.insert(
                        batch.map { user in
                            RegistrationRecord(
                                username: user.username, aaid: user.aaid, keyID: user.keyID, publicKey: user.publicKeyDER,
                                publicKeyEncoding: .eccX962DER, signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0,
                                registrationCounter: 1, authenticatorVersion: 1, attestationType: .basicSurrogate, createdAt: now)
                        })
                }
                if stores.database.engine == .postgres {
                    // Ten million rows inserted start autovacuum (by inserted rows) and its statistics on the table:
                    // minutes of PostgreSQL's CPU, which would otherwise fall into the measured phase (measured: logins
                    // at 0.74 of the 1,000-user rate). A database that has been serving has done this long before.
                    plan.settleDatabase = {
                        try await stores.database.run { sql in try await sql.raw("VACUUM (ANALYZE) registrations").run() }
                    }
                }
            }
            plan.trustedCertificatesPEM = servers.map(\.certificatePEM).joined(separator: "\n")
            plan.relyingParty = relyingParty
            plan.embeddedServers = true
            note(
                "started \(instances) embedded server(s) on \(database.map { $0.hasPrefix("postgres") ? "PostgreSQL" : $0 } ?? "a temporary SQLite file"): "
                    + plan.targets.map(\.absoluteString).joined(separator: ", "))
            plan.generatorScheduling = "normal scheduling (its threads run the embedded servers too)"
        } else {
            plan.generatorScheduling = try Self.schedule(batch: batchScheduling)
            plan.targets = try urls.map { text in
                guard let url = URL(string: text) else { throw ValidationError("not a URL: \(text)") }
                return url
            }
            if let caFile {
                let pem: String
                do { pem = try String(contentsOfFile: caFile, encoding: .utf8) } catch {
                    throw ValidationError("--ca-file \(caFile): \(SystemErrorText.reason(error))")
                }
                guard pem.contains("-----BEGIN CERTIFICATE-----") else { throw ValidationError("--ca-file \(caFile): not a PEM certificate file") }
                plan.trustedCertificatesPEM = pem
            }
            if let relyingPartyKey {
                let key = try readP256PrivateKey(relyingPartyKey, option: "--relying-party-key")
                plan.relyingParty = LocalRelyingParty(issuer: issuer, audience: audience, key: key)
            }
        }
        do {
            let report = try await LoadRunner.run(plan) { progress in
                guard !quiet else { return }
                note(
                    "\(progress.phase) "
                        + String(
                            format: "%5.1f s  %8d flows  %6.0f flows/s  %d failed", progress.elapsedSeconds, progress.flows,
                            progress.currentFlowsPerSecond, progress.failedFlows))
            }
            for server in servers { try await server.stop() }
            servers = []
            if let directory { try? FileManager.default.removeItem(at: directory) }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                say(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                say(report.text)
            }
            // A run in which flows failed is not a clean result: scripts can tell by the exit code.
            if report.measured.failedFlows > 0 || (report.setup?.failedFlows ?? 0) > 0 || (report.verification?.failedFlows ?? 0) > 0 {
                throw ExitCode(2)
            }
        } catch {
            for server in servers { try? await server.stop() }
            if let directory { try? FileManager.default.removeItem(at: directory) }
            throw error
        }
    }

    /// The App Attest authority of an attesting run: `--app-attest-authority`'s, or a new one for embedded servers.
    /// Nil when the file did not exist: it was made (with its root beside it), and the run stops so that the server
    /// can be configured with the root first.
    func appAttestAuthorityToUse() throws -> SoftwareAppAttestAuthority? {
        guard let path = appAttestAuthority else { return try SoftwareAppAttestAuthority() }
        let root = path + ".root.pem"
        guard FileManager.default.fileExists(atPath: path) else {
            let authority = try SoftwareAppAttestAuthority()
            // The bundle holds a private key: readable by its owner only, and never overwritten.
            guard FileManager.default.createFile(atPath: path, contents: Data(authority.pemBundle.utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw ValidationError("--app-attest-authority \(path): cannot create the file")
            }
            do { try authority.rootPEM.write(toFile: root, atomically: true, encoding: .utf8) } catch {
                throw ValidationError("--app-attest-authority: cannot write \(root): \(SystemErrorText.reason(error))")
            }
            note(
                """
                made the App Attest authority \(path) and its root \(root). Configure the server with
                  "appAttestation": \(ServerConfiguration.AppAttestation.virtualDevice(appAttestRoot: root).json)
                and a policy that asks (policies.default.appAttestation), then run again.
                """)
            return nil
        }
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
            throw ValidationError("--app-attest-authority \(path): \(SystemErrorText.reason(error))")
        }
        do { return try SoftwareAppAttestAuthority(pemBundle: text) } catch { throw ValidationError("--app-attest-authority \(path): \(error)") }
    }

    /// Puts the generator's threads under `SCHED_BATCH` when asked (``GeneratorScheduling``) and says how they run.
    /// A refusal is an error, not a quiet run under normal scheduling: the report must state what was measured.
    static func schedule(batch: Bool) throws -> String {
        guard batch else { return "normal scheduling (--no-batch-scheduling)" }
        #if os(Linux)
        do {
            try GeneratorScheduling.batchEveryThread()
            return "SCHED_BATCH: its threads never preempt a server on wake-up (--no-batch-scheduling to turn off)"
        } catch {
            throw ValidationError("\(error); --no-batch-scheduling runs the generator under normal scheduling")
        }
        #else
        return "normal scheduling (SCHED_BATCH exists only on Linux)"
        #endif
    }
}

extension LoadPlan.Flow: ExpressibleByArgument {}
