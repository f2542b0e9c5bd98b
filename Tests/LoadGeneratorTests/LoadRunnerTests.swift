import FIDOServer
import FIDOServerTesting
import FIDOSimulation
import Foundation
import LoadGenerator
import Logging
import NIOConcurrencyHelpers
import XCTest

/// `mauth load`'s engine against a real server on loopback TLS: what it counts must match what the server saw.
final class LoadRunnerTests: XCTestCase {
    var server: RunningFIDOServer!
    var relyingParty: LocalRelyingParty!
    var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-load-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        relyingParty = LocalRelyingParty(issuer: "https://rp.load-test.example", audience: "mauth-server")
        try relyingParty.writeJWKS(to: directory.appendingPathComponent("jwks.json").path)
        server = try await startServer(database: .sqlite(path: directory.appendingPathComponent("db.sqlite").path))
    }

    /// A server trusting the test's relying party, without the per-address limit (all load comes from one address).
    func startServer(
        database: ServerConfiguration.Database, configure: (inout ServerConfiguration) throws -> Void = { _ in }
    ) async throws -> RunningFIDOServer {
        var configuration = ServerConfiguration(facets: [SoftwareAuthenticator.virtualDeviceFacetID], database: database)
        configuration.authorization.jwt = .init(
            jwksPath: directory.appendingPathComponent("jwks.json").path, issuer: relyingParty.issuer,
            audience: relyingParty.audience)
        configuration.limits.requestsPerMinutePerAddress = 0
        configuration.fido2 = .init(rpId: "localhost", origins: ["https://localhost"])
        try configure(&configuration)
        var logger = Logger(label: "load-test")
        logger.logLevel = .error
        return try await FIDOServerApplication.start(configuration: configuration, dependencies: ServerDependencies(logger: logger))
    }

    override func tearDown() async throws {
        try await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func plan(_ flow: LoadPlan.Flow = .authentication, flows: Int, connections: Int = 4, population: Int = 8) -> LoadPlan {
        LoadPlan(
            targets: [server.baseURL], trustedCertificatesPEM: server.certificatePEM, connections: connections, flow: flow,
            stop: .flows(flows), population: population, relyingParty: relyingParty)
    }

    func decisions(_ operation: String, _ statusCode: Int, on server: RunningFIDOServer? = nil) -> Double {
        (server ?? self.server).metrics.value(of: "mauth_decisions_total{operation=\"\(operation)\",status_code=\"\(statusCode)\"}") ?? 0
    }

    func testAnAuthenticationRunCountsExactlyTheFlowsTheServerAccepted() async throws {
        let report = try await LoadRunner.run(plan(flows: 120))
        XCTAssertEqual(report.setup?.flows, 8)
        XCTAssertEqual(report.measured.flows, 120)
        XCTAssertEqual(report.measured.failedFlows, 0)
        XCTAssertEqual(report.measured.errors, [])
        XCTAssertEqual(report.measured.flowLatency.count, 120)
        XCTAssertEqual(
            report.measured.endpoints.map(\.name),
            ["POST /nevisfido/uaf/1.1/authentication", "POST /nevisfido/uaf/1.1/request/authentication"])
        XCTAssertEqual(report.measured.endpoints.map(\.latency.count), [120, 120])
        let latency = report.measured.flowLatency
        XCTAssertTrue(
            latency.p50Milliseconds <= latency.p95Milliseconds && latency.p95Milliseconds <= latency.p99Milliseconds
                && latency.p99Milliseconds <= latency.maxMilliseconds)
        // The server's own count agrees: 120 logins and 8 registrations, each accepted once.
        XCTAssertEqual(decisions("authentication", 1200), 120)
        XCTAssertEqual(decisions("registration", 1200), 8)
        // Each user's counter rose once per login: the server stored the last one.
        let total = try await server.stores.database.run { sql in
            try await sql.raw("SELECT SUM(sign_counter) AS total FROM registrations").first(decoding: Total.self)
        }
        XCTAssertEqual(total?.total, 120)
    }

    struct Total: Decodable { var total: Int }

    /// Writes a batch of the population into `stores` as `mauth load --fill-database` does (surrogate attestation).
    static func writing(into stores: Stores) -> @Sendable ([LoadPlan.DirectRegistration]) async throws -> Void {
        { batch in
            try await stores.registrations.insert(
                batch.map { user in
                    RegistrationRecord(
                        username: user.username, aaid: user.aaid, keyID: user.keyID, publicKey: user.publicKeyDER,
                        publicKeyEncoding: .eccX962DER, signatureAlgorithm: .secp256r1ECDSASHA256DER, signCounter: 0,
                        registrationCounter: 1, authenticatorVersion: 1, attestationType: .basicSurrogate, createdAt: Date())
                })
        }
    }

    /// A server that requires App Attest for registration and login, trusting `authority`'s root.
    func startAttestingServer(_ authority: SoftwareAppAttestAuthority) async throws -> RunningFIDOServer {
        let root = directory.appendingPathComponent("app-attest-root.pem")
        try authority.rootPEM.write(to: root, atomically: true, encoding: .utf8)
        return try await startServer(database: .sqlite(path: directory.appendingPathComponent("attesting.sqlite").path)) { configuration in
            configuration.appAttestation = .init(
                apple: .init(
                    apps: [
                        .init(teamId: SoftwareAppAttestAuthority.virtualDeviceTeamID, bundleId: SoftwareAppAttestAuthority.virtualDeviceBundleID)
                    ], environments: ["development"], rootCertificatesPath: root.path))
            configuration.policies = ["default": .init(appAttestation: .init(registration: .require, authentication: .require))]
        }
    }

    func testAnAttestingRunIsAcceptedWhereTheServerRequiresAppAttest() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let attesting = try await startAttestingServer(authority)
        defer { Task { [attesting] in try? await attesting.stop() } }
        var plan = plan(flows: 40)
        plan.targets = [attesting.baseURL]
        plan.trustedCertificatesPEM = attesting.certificatePEM
        plan.appAttest = .init(authority: authority)
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.setup?.failedFlows, 0)
        XCTAssertEqual(report.measured.failedFlows, 0)
        XCTAssertEqual(report.appAttestation, "App Attest")
        // Each device attested once (its registration), then asserted at each of its logins.
        XCTAssertEqual(decisions("app attestation verified", 1200, on: attesting), 48)
        let total = try await attesting.stores.database.run { sql in
            try await sql.raw("SELECT SUM(counter) AS total FROM app_attest_keys").first(decoding: Total.self)
        }
        XCTAssertEqual(total?.total, 40)
    }

    /// A registration run is a new install each time: each registration attests a key of its own.
    func testAnAttestingRegistrationRunAttestsEachNewDevice() async throws {
        let authority = try SoftwareAppAttestAuthority()
        let attesting = try await startAttestingServer(authority)
        defer { Task { [attesting] in try? await attesting.stop() } }
        var plan = plan(.registration, flows: 12)
        plan.targets = [attesting.baseURL]
        plan.trustedCertificatesPEM = attesting.certificatePEM
        plan.appAttest = .init(authority: authority)
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.failedFlows, 0, "\(report.measured.errors)")
        XCTAssertEqual(decisions("app attestation verified", 1200, on: attesting), 12)
        let keys = try await attesting.stores.database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS total FROM app_attest_keys").first(decoding: Total.self)
        }
        XCTAssertEqual(keys?.total, 12)
    }

    func testARunThatDoesNotAttestIsRefusedWhereTheServerRequiresAppAttest() async throws {
        let attesting = try await startAttestingServer(try SoftwareAppAttestAuthority())
        defer { Task { [attesting] in try? await attesting.stop() } }
        var plan = plan(flows: 4)
        plan.targets = [attesting.baseURL]
        plan.trustedCertificatesPEM = attesting.certificatePEM
        do {
            _ = try await LoadRunner.run(plan)
            XCTFail("the setup registered users without App Attest")
        } catch {
            XCTAssertTrue("\(error)".contains("1497"), "\(error)")
        }
        XCTAssertEqual(decisions("app attestation refused", 1497, on: attesting), 8)
    }

    func testAPopulationWrittenToTheDatabaseAuthenticatesWithoutRegistering() async throws {
        var plan = plan(flows: 60, population: 30)
        let stores = server.stores
        plan.writeRegistrations = Self.writing(into: stores)
        let report = try await LoadRunner.run(plan)
        XCTAssertNil(report.setup, "nobody registered over HTTP")
        XCTAssertEqual(report.measured.flows, 60)
        XCTAssertEqual(report.measured.failedFlows, 0)
        XCTAssertEqual(decisions("authentication", 1200), 60)
        XCTAssertEqual(decisions("registration", 1200), 0)
        let count = try await server.stores.database.run { sql in
            try await sql.raw("SELECT COUNT(*) AS total FROM registrations").first(decoding: Total.self)
        }
        XCTAssertEqual(count?.total, 30)
    }

    func testALargeWrittenPopulationSignsInOnlyItsEvenlySpreadSample() async throws {
        var plan = plan(flows: 80, population: 40)
        plan.signedInSample = 10
        let stores = server.stores
        plan.writeRegistrations = Self.writing(into: stores)
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.flows, 80)
        XCTAssertEqual(report.measured.failedFlows, 0)
        struct Row: Decodable {
            var username: String
            var sign_counter: Int
        }
        let rows = try await server.stores.database.run { sql in
            try await sql.raw("SELECT username, sign_counter FROM registrations").all(decoding: Row.self)
        }
        XCTAssertEqual(rows.count, 40, "the whole population is written")
        let signedIn = Set(rows.filter { $0.sign_counter > 0 }.map(\.username))
        // Every 4th user (40 / 10), each of the 4 connections signing in its share of the 10 in turn.
        XCTAssertEqual(signedIn, Set(stride(from: 0, to: 40, by: 4).map { "\(plan.usernamePrefix)-\($0)" }))
    }

    func testTheDatabaseSettlesOnceAfterTheWholePopulationIsWrittenAndBeforeAnyLogin() async throws {
        var plan = plan(flows: 20, population: 30)
        let stores = server.stores
        let server = self.server!
        plan.writeRegistrations = Self.writing(into: stores)
        let seen = NIOLockedValueBox<[(rows: Int, logins: Double)]>([])
        plan.settleDatabase = {
            let rows = try await stores.database.run { sql in
                try await sql.raw("SELECT COUNT(*) AS total FROM registrations").first(decoding: Total.self)
            }
            let logins = server.metrics.value(of: "mauth_decisions_total{operation=\"authentication\",status_code=\"1200\"}") ?? 0
            seen.withLockedValue { $0.append((rows?.total ?? -1, logins)) }
        }
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.failedFlows, 0)
        let calls = seen.withLockedValue { $0 }
        XCTAssertEqual(calls.count, 1)
        XCTAssertEqual(calls.first?.rows, 30, "every user is written before")
        XCTAssertEqual(calls.first?.logins, 0, "no login before")
    }

    func testABaselineRunMakesTwoLivenessProbesPerFlowAndNoUAFDecision() async throws {
        let report = try await LoadRunner.run(plan(.baseline, flows: 50))
        XCTAssertNil(report.setup, "a baseline run registers nobody")
        XCTAssertEqual(report.measured.flows, 50)
        XCTAssertEqual(report.measured.failedFlows, 0)
        XCTAssertEqual(report.measured.endpoints.map(\.name), ["GET /health/live"])
        XCTAssertEqual(report.measured.endpoints.map(\.latency.count), [100])
        let text = String(decoding: server.metrics.exposition(), as: UTF8.self)
        XCTAssertTrue(text.contains(#"mauth_http_requests_total{method="GET",route="/health/live",status="200"} 100"#), text)
        XCTAssertFalse(text.contains("mauth_decisions_total{"), "no UAF work was done")
    }

    func testATransactionRunConfirmsTheText() async throws {
        var plan = plan(flows: 10)
        plan.transactionText = "Pay EUR 10.00 to Carol"
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.flows, 10)
        XCTAssertTrue(report.transactions)
        XCTAssertEqual(decisions("authentication", 1200), 10)
    }

    /// A server that does not accept the virtual passkeys' origin: the run stops saying why, in the server's words,
    /// and which flag fixes it, not only "HTTP 400".
    func testAPasskeyRunWithAnOriginTheServerRefusesNamesTheReasonAndTheFlag() async throws {
        var plan = plan(.passkey, flows: 8)
        plan.passkeyOrigin = "https://wrong.example"
        do {
            _ = try await LoadRunner.run(plan)
            XCTFail("a run whose every registration was refused went on")
        } catch let error as LoadRunnerError {
            let text = error.description
            XCTAssertTrue(text.contains(#"HTTP 400 on POST /nevisfido/fido2/attestation/result: "#), text)
            XCTAssertTrue(text.contains(#"origin "https://wrong.example" is not allowed"#), text)
            XCTAssertTrue(text.contains("pass --passkey-origin with one of its fido2.origins"), text)
        }
    }

    func testAPasskeyRunSignsInEveryFlowOnceAndItsReplaysAreRefused() async throws {
        var plan = plan(.passkey, flows: 80)
        plan.replayCheck = true
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.setup?.flows, 8)
        XCTAssertEqual(report.measured.flows, 80)
        XCTAssertEqual(report.measured.failedFlows, 0)
        XCTAssertEqual(
            report.measured.endpoints.map(\.name),
            ["POST /nevisfido/fido2/assertion/options", "POST /nevisfido/fido2/assertion/result"])
        XCTAssertEqual(report.measured.timeline.reduce(0) { $0 + $1.replaysAccepted }, 0)
        // The server's count agrees: 8 passkeys, 80 sign-ins, and every replay refused.
        XCTAssertEqual(decisions("passkey registration", 200), 8)
        XCTAssertEqual(decisions("passkey authentication", 200), 80)
        XCTAssertEqual(decisions("passkey authentication", 400), 80)
        // The virtual passkeys count: each user's counter rose once per sign-in, after the 1 of its registration.
        let total = try await server.stores.database.run { sql in
            try await sql.raw("SELECT SUM(sign_count) AS total FROM passkeys").first(decoding: Total.self)
        }
        XCTAssertEqual(total?.total, 80 + 8)
    }

    func testARegistrationRunRegistersNewUsers() async throws {
        let report = try await LoadRunner.run(plan(.registration, flows: 30))
        XCTAssertNil(report.setup)
        XCTAssertEqual(report.measured.flows, 30)
        XCTAssertEqual(report.measured.failedFlows, 0)
        XCTAssertEqual(decisions("registration", 1200), 30)
    }

    func testVerificationAuthenticatesEveryRegisteredUserAndReplaysAreRefused() async throws {
        var plan = plan(.registration, flows: 24)
        plan.verify = true
        plan.replayCheck = true
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.flows, 24)
        XCTAssertEqual(report.verification?.flows, 24)
        XCTAssertEqual(report.verification?.failedFlows, 0)
        XCTAssertTrue(report.replayChecked)
        XCTAssertEqual(report.measured.timeline.reduce(0) { $0 + $1.replaysAccepted }, 0)
        XCTAssertEqual(report.measured.timeline.reduce(0) { $0 + $1.flows }, 24, "the timeline accounts for every flow")
        // The server saw each registration accepted once and each replay refused (1491: the request was consumed).
        XCTAssertEqual(decisions("registration", 1200), 24)
        XCTAssertEqual(decisions("registration", 1491), 24)
        XCTAssertEqual(decisions("authentication", 1200), 24)
        XCTAssertEqual(decisions("authentication", 1491), 24)
    }

    func testRefusalsAreCountedByHTTPStatus() async throws {
        var plan = plan(.registration, flows: 6)
        plan.relyingParty = nil  // no JWT: the server refuses the registration request
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.flows, 0)
        XCTAssertEqual(report.measured.failedFlows, 6)
        XCTAssertEqual(report.measured.errors, [.init(kind: "HTTP 401 on POST /nevisfido/uaf/1.1/request/registration", count: 6)])
    }

    func testRejectionsAreCountedByUAFStatusCode() async throws {
        var plan = plan(.registration, flows: 5)
        plan.facetID = "ios:bundle-id:com.example.untrusted"  // not a trusted facet
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.failedFlows, 5)
        XCTAssertEqual(report.measured.errors.count, 1)
        XCTAssertTrue(report.measured.errors[0].kind.hasPrefix("UAF 14"), report.measured.errors[0].kind)
        XCTAssertTrue(report.measured.errors[0].kind.hasSuffix("on POST /nevisfido/uaf/1.1/registration"))
    }

    func testAnUnreachableServerIsAConnectionErrorNotACrash() async throws {
        var plan = plan(.registration, flows: 1, connections: 1)
        plan.targets = [URL(string: "https://127.0.0.1:1")!]
        plan.requestTimeoutSeconds = 2
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.failedFlows, 1)
        XCTAssertTrue(report.measured.errors[0].kind.hasPrefix("connection error on POST /nevisfido/uaf/1.1/request/registration"))
    }

    func testAServerThatNeverAnswersTimesOutAsAConnectionError() async throws {
        // A listener that accepts and then says nothing: not even the TLS handshake completes.
        #if canImport(Glibc)
        let stream = Int32(SOCK_STREAM.rawValue)
        #else
        let stream = SOCK_STREAM
        #endif
        let listener = socket(AF_INET, stream, 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 8), 0)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        var plan = plan(.registration, flows: 1, connections: 1)
        plan.targets = [URL(string: "https://127.0.0.1:\(UInt16(bigEndian: address.sin_port))")!]
        plan.requestTimeoutSeconds = 1
        let report = try await LoadRunner.run(plan)
        XCTAssertEqual(report.measured.failedFlows, 1)
        XCTAssertEqual(report.measured.errors.count, 1)
        XCTAssertTrue(report.measured.errors[0].kind.contains("no answer within the request timeout"), report.measured.errors[0].kind)
    }

    func testASetupThatRegistersNobodyStopsTheRun() async throws {
        var plan = plan(flows: 5)
        plan.relyingParty = nil
        do {
            _ = try await LoadRunner.run(plan)
            XCTFail("expected the setup to fail")
        } catch let error as LoadRunnerError {
            XCTAssertTrue(error.description.contains("HTTP 401"), error.description)
            XCTAssertTrue(
                error.description.contains("Registrations need the relying party's JWT: pass --relying-party-key KEY.pem"), error.description)
        }
    }

    func testASetupAgainstAnUntrustedCertificateSaysHowToTrustIt() async throws {
        var plan = plan(flows: 5)
        plan.trustedCertificatesPEM = nil  // the system's roots, which do not hold the test server's development CA
        do {
            _ = try await LoadRunner.run(plan)
            XCTFail("expected the setup to fail")
        } catch let error as LoadRunnerError {
            XCTAssertTrue(
                error.description.hasSuffix(
                    "the server's certificate is not trusted (the TLS handshake refused it). "
                        + "Trust the server's certificate with --ca-file FILE (mauth server --write-certificate FILE writes a development one)"),
                error.description)
        }
    }

    func testASetupAgainstAClosedPortAsksWhetherTheServerRuns() async throws {
        var plan = plan(flows: 5)
        plan.targets = [URL(string: "https://127.0.0.1:1")!]
        do {
            _ = try await LoadRunner.run(plan)
            XCTFail("expected the setup to fail")
        } catch let error as LoadRunnerError {
            XCTAssertTrue(
                error.description.hasSuffix("nothing answers there (connection refused). Is the server running, at the --url given?"),
                error.description)
        }
    }

    func testLoadSpreadsOverSeveralServers() async throws {
        let second = try await startServer(database: .sqliteInMemory)
        var plan = plan(.registration, flows: 40)
        plan.targets = [server.baseURL, second.baseURL]
        plan.trustedCertificatesPEM = server.certificatePEM + "\n" + second.certificatePEM
        let report = try await LoadRunner.run(plan)
        let onSecond = decisions("registration", 1200, on: second)
        try await second.stop()
        XCTAssertEqual(report.measured.flows, 40)
        XCTAssertEqual(report.measured.failedFlows, 0, "\(report.measured.errors)")
        XCTAssertEqual(decisions("registration", 1200) + onSecond, 40)
        XCTAssertGreaterThan(decisions("registration", 1200), 0, "connections 0 and 2 load the first server")
        XCTAssertGreaterThan(onSecond, 0, "connections 1 and 3 load the second")
    }

    func testPlansThatCannotRunAreRefused() {
        var plan = plan(flows: 1, connections: 8, population: 4)
        XCTAssertThrowsError(try plan.validate()) { XCTAssertTrue("\($0)".contains("population")) }
        plan.population = 8
        XCTAssertNoThrow(try plan.validate())
        plan.targets = [URL(string: "http://127.0.0.1:8080")!]
        XCTAssertThrowsError(try plan.validate()) { XCTAssertTrue("\($0)".contains("https")) }
        plan.targets = [server.baseURL]
        plan.stop = .duration(seconds: 0)
        XCTAssertThrowsError(try plan.validate())
        plan.stop = .flows(0)
        XCTAssertThrowsError(try plan.validate())
    }

    func testTheMeasuredPhaseReportsCPUPerFlowOfTheGeneratorAndAWatchedServer() async throws {
        // The server runs in this process; watching this process's pid as "the server" reads it through procfs.
        var plan = plan(flows: 200)
        plan.serverPIDs = [ProcessInfo.processInfo.processIdentifier]
        let report = try await LoadRunner.run(plan)
        XCTAssertNil(report.setup?.cpu, "only the measured phase is measured")
        let cpu = try XCTUnwrap(report.measured.cpu)
        XCTAssertEqual(cpu.processes.first?.role, "load generator")
        XCTAssertGreaterThan(cpu.processes.first?.millisecondsPerFlow ?? 0, 0)
        #if os(Linux)
        XCTAssertEqual(cpu.processes.map(\.role), ["load generator", "server"])
        XCTAssertGreaterThan(cpu.serverMillisecondsPerFlow ?? 0, 0)
        XCTAssertGreaterThan(cpu.machineCoresBusy ?? 0, 0)
        XCTAssertTrue(report.text.contains("CPU per flow (ms): load generator "), report.text)
        XCTAssertTrue(report.text.contains("one core of server CPU serves about"), report.text)
        XCTAssertEqual(report.serverMemory.map(\.pid), plan.serverPIDs, "the watched server's peak RSS is reported too")
        #endif
    }

    func testTheReportIsReadableAndRoundTripsAsJSON() async throws {
        let report = try await LoadRunner.run(plan(flows: 8))
        XCTAssertTrue(report.text.contains("authentication: 8 flows completed in"), report.text)
        XCTAssertTrue(report.text.contains("completed/s; 0 failed (not in the rate)"), report.text)
        XCTAssertTrue(report.text.contains("errors: none"))
        XCTAssertTrue(report.text.contains("CPU per flow (ms): load generator "), report.text)
        let decoded = try JSONDecoder().decode(LoadReport.self, from: try JSONEncoder().encode(report))
        XCTAssertEqual(decoded.measured.flows, 8)
        XCTAssertEqual(decoded.measured.flowLatency, report.measured.flowLatency)
        XCTAssertEqual(decoded.measured.cpu, report.measured.cpu)
    }

    func testTheReportStatesHowTheGeneratorWasScheduled() async throws {
        var scheduled = plan(flows: 4)
        scheduled.generatorScheduling = "SCHED_BATCH (4 threads)"
        let report = try await LoadRunner.run(scheduled)
        XCTAssertTrue(report.text.contains("\ngenerator   SCHED_BATCH (4 threads)\n"), report.text)
        let decoded = try JSONDecoder().decode(LoadReport.self, from: try JSONEncoder().encode(report))
        XCTAssertEqual(decoded.generatorScheduling, "SCHED_BATCH (4 threads)")
        let unstated = try await LoadRunner.run(plan(flows: 4))
        XCTAssertFalse(unstated.text.contains("\ngenerator "), "a plan that states nothing reports nothing")
    }
}
