import Foundation
import NevisProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import NIOSSL
import Primitives
import UAF
import UAFSimulation
import WireJSON

/// What a progress line shows while a phase runs.
public struct LoadProgress: Sendable {
    public var phase: String
    public var elapsedSeconds: Double
    public var flows: Int
    public var failedFlows: Int
    /// Flows completed in the last interval, per second.
    public var currentFlowsPerSecond: Double
}

/// Runs a ``LoadPlan``: registers the population (for authentication runs), then drives the measured phase with
/// one closed loop per connection, each owning its share of the virtual devices so a user's counter only rises.
public enum LoadRunner {
    public static func run(_ plan: LoadPlan, progressInterval: Duration = .seconds(1),
                           progress: @escaping @Sendable (LoadProgress) -> Void = { _ in }) async throws -> LoadReport {
        try plan.validate()
        let http = try LoadHTTP(plan: plan)
        return try await run(plan, http: http, progressInterval: progressInterval, progress: progress)
    }

    private static func run(_ plan: LoadPlan, http: LoadHTTP, progressInterval: Duration,
                            progress: @escaping @Sendable (LoadProgress) -> Void) async throws -> LoadReport {
        let targets = plan.targets.map(LoadTarget.init)
        var setup: LoadReport.Phase?
        var devices: [[VirtualUser]] = Array(repeating: [], count: plan.connections)
        if plan.flow == .authentication, let write = plan.writeRegistrations {
            devices = try await writeDirectly(plan, write: write, progress: progress)
        } else if plan.hasPopulation {
            // Connection i registers (and later authenticates) users i, i + C, i + 2C, ...
            let (report, registered) = try await phase("setup: registering \(plan.population) users", plan: plan, http: http,
                                                       budget: .flows(plan.population), progressInterval: progressInterval,
                                                       progress: progress) { loop, recorder, budget, client in
                var mine: [VirtualUser] = []
                var index = loop.connection
                while index < plan.population, budget.claim() {
                    var user = VirtualUser(member: index, of: plan)
                    let target = targets[loop.connection % targets.count]
                    let registered = plan.flow == .passkey
                        ? await loop.registerPasskey(&user, target: target, plan: plan, client: client, recorder: &recorder)
                        : await loop.register(&user, target: target, plan: plan, client: client, recorder: &recorder)
                    if registered { mine.append(user) }
                    index += plan.connections
                }
                return mine
            }
            setup = report
            devices = registered
            guard devices.contains(where: { !$0.isEmpty }) else {
                let first = report.errors.first?.kind ?? "no user was registered"
                throw LoadRunnerError.setupFailed(first, hint: LoadRunnerError.hint(first, plan: plan))
            }
        }
        let budget: Budget = switch plan.stop {
        case .duration(let seconds): .deadline(ContinuousClock.now + .milliseconds(Int64(seconds * 1000)))
        case .flows(let count): .flows(count)
        }
        let name = plan.flow.rawValue
        let owned = devices
        let watch = CPUWatch(serverPIDs: plan.serverPIDs, embeddedServers: plan.embeddedServers)
        let (measured, registered) = try await phase(name, plan: plan, http: http, budget: budget, progressInterval: progressInterval,
                                                     progress: progress, watch: watch) { loop, recorder, budget, client in
            var users = owned[loop.connection]
            let target = targets[loop.connection % targets.count]
            switch plan.flow {
            case .authentication:
                guard !users.isEmpty else { return [] }
                var next = 0
                while budget.claim() {
                    _ = await loop.authenticate(&users[next], target: target, plan: plan, client: client, recorder: &recorder)
                    next = (next + 1) % users.count
                }
            case .passkey:
                guard !users.isEmpty else { return [] }
                var next = 0
                while budget.claim() {
                    _ = await loop.signInWithPasskey(&users[next], target: target, plan: plan, client: client, recorder: &recorder)
                    next = (next + 1) % users.count
                }
            case .registration:
                var count = 0
                while budget.claim() {
                    var user = VirtualUser(username: "\(plan.usernamePrefix)-c\(loop.connection)-\(count)", facetID: plan.facetID)
                    if await loop.register(&user, target: target, plan: plan, client: client, recorder: &recorder), plan.verify {
                        users.append(user)
                    }
                    count += 1
                }
                return users
            case .baseline:
                while budget.claim() {
                    _ = await loop.probe(target: target, client: client, recorder: &recorder)
                }
            }
            return []
        }
        var verification: LoadReport.Phase?
        if plan.verify, plan.flow == .registration {
            let accepted = registered.reduce(0) { $0 + $1.count }
            (verification, _) = try await phase("verification: authenticating the \(accepted) users answered 1200", plan: plan, http: http,
                                                budget: .flows(Int.max), progressInterval: progressInterval, progress: progress) { loop, recorder, _, client in
                var users = registered[loop.connection]
                for index in users.indices {
                    // The user's own server first, then the others: one that died under load does not count against
                    // the data, only a server that answers and refuses (or forgot) does.
                    var last = PhaseRecorder(start: recorder.start)
                    for offset in 0..<targets.count {
                        last = PhaseRecorder(start: recorder.start)
                        let target = targets[(loop.connection + offset) % targets.count]
                        if await loop.authenticate(&users[index], target: target, plan: plan, client: client, recorder: &last) { break }
                        if last.timeline.last?.connectionErrors == 0 { break }
                    }
                    recorder.merge(last)
                }
                return []
            }
        }
        return LoadReport(targets: plan.targets.map(\.absoluteString), connections: plan.connections, flow: plan.flow,
                          transactions: plan.transactionText != nil, population: plan.hasPopulation ? plan.population : 0,
                          setup: setup, measured: measured, verification: verification, replayChecked: plan.replayCheck,
                          serverMemory: plan.serverPIDs.compactMap { pid in
                              ProcFS.peakResidentMiB(pid: pid).map { LoadReport.ProcessMemory(pid: pid, peakResidentMiB: $0) }
                          }, generatorScheduling: plan.generatorScheduling)
    }

    /// The population made here and written to the database in batches (``LoadPlan/writeRegistrations``): user i
    /// belongs to connection i mod C, as in a setup over HTTP. Keys are made on every core, the writes one batch at a
    /// time.
    private static func writeDirectly(_ plan: LoadPlan, write: @Sendable ([LoadPlan.DirectRegistration]) async throws -> Void,
                                      progress: @escaping @Sendable (LoadProgress) -> Void) async throws -> [[VirtualUser]] {
        let start = ContinuousClock.now
        let name = "setup: writing \(plan.population) users to the database"
        var devices: [[VirtualUser]] = Array(repeating: [], count: plan.connections)
        let chunk = 2_000, workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        var written = 0, lastReport = start
        for first in stride(from: 0, to: plan.population, by: chunk * workers) {
            let made = await withTaskGroup(of: [(Int, VirtualUser)].self) { group in
                for worker in 0..<workers {
                    let low = first + worker * chunk, high = min(low + chunk, plan.population)
                    guard low < high else { continue }
                    group.addTask {
                        (low..<high).map { index in (index, VirtualUser(member: index, of: plan)) }
                    }
                }
                var all: [(Int, VirtualUser)] = []
                for await part in group { all += part }
                return all.sorted { $0.0 < $1.0 }
            }
            for batch in stride(from: 0, to: made.count, by: chunk).map({ made[$0..<min($0 + chunk, made.count)] }) {
                try await write(batch.map { _, user in
                    LoadPlan.DirectRegistration(username: user.username, aaid: user.authenticator.aaid, keyID: Base64URL.encode(user.authenticator.keyID),
                                                publicKeyDER: Array(user.authenticator.key.publicKey.derRepresentation))
                })
            }
            for (index, user) in made { devices[index % plan.connections].append(user) }
            written += made.count
            if ContinuousClock.now - lastReport >= .seconds(1) || written == plan.population {
                lastReport = ContinuousClock.now
                let seconds = (lastReport - start).seconds
                progress(LoadProgress(phase: name, elapsedSeconds: seconds, flows: written, failedFlows: 0,
                                      currentFlowsPerSecond: Double(written) / max(seconds, 0.001)))
            }
        }
        return devices
    }

    /// Runs `body` on every connection at once until the budget is spent, prints progress, and merges what the
    /// loops recorded.
    private static func phase(_ name: String, plan: LoadPlan, http: LoadHTTP, budget: Budget, progressInterval: Duration,
                              progress: @escaping @Sendable (LoadProgress) -> Void, watch: CPUWatch? = nil,
                              body: @escaping @Sendable (ConnectionLoop, inout PhaseRecorder, SharedBudget, isolated LoadClient) async -> [VirtualUser])
        async throws -> (LoadReport.Phase, [[VirtualUser]]) {
        let shared = SharedBudget(budget)
        let cpuAtStart = watch?.read()
        let start = ContinuousClock.now
        let startedAt = Date()
        let reporter = Task {
            var last = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: progressInterval)
                if Task.isCancelled { break }
                let (flows, failed) = shared.progress
                progress(LoadProgress(phase: name, elapsedSeconds: (ContinuousClock.now - start).seconds, flows: flows, failedFlows: failed,
                                      currentFlowsPerSecond: Double(flows - last) / progressInterval.seconds))
                last = flows
            }
        }
        defer { reporter.cancel() }
        var merged = PhaseRecorder(start: start)
        var users: [[VirtualUser]] = Array(repeating: [], count: plan.connections)
        await withTaskGroup(of: (Int, PhaseRecorder, [VirtualUser]).self) { group in
            for connection in 0..<plan.connections {
                group.addTask {
                    let loop = ConnectionLoop(connection: connection, shared: shared,
                                              replayTarget: LoadTarget(plan.targets[(connection + 1) % plan.targets.count]))
                    // The loop runs on its connections' event loop (see LoadClient).
                    let client = LoadClient(eventLoop: http.group.next(), settings: http)
                    let (recorder, mine) = await client.perform { client in
                        var recorder = PhaseRecorder(start: start)
                        let mine = await body(loop, &recorder, shared, client)
                        await client.close()
                        return (recorder, mine)
                    }
                    return (connection, recorder, mine)
                }
            }
            for await (connection, recorder, mine) in group {
                merged.merge(recorder)
                users[connection] = mine
            }
        }
        let seconds = (ContinuousClock.now - start).seconds
        var report = merged.report(name: name, seconds: seconds, startedAt: startedAt)
        if let watch, let cpuAtStart {
            report.cpu = watch.use(from: cpuAtStart, to: watch.read(), flows: report.flows, seconds: seconds)
        }
        return (report, users)
    }
}

public enum LoadRunnerError: Error, CustomStringConvertible {
    /// The first failure's key, and what the person running `mauth load` can do about it.
    case setupFailed(String, hint: String? = nil)
    public var description: String {
        switch self {
        case .setupFailed(let detail, let hint): "no user of the population could be registered: \(detail)" + (hint.map { ". \($0)" } ?? "")
        }
    }

    /// What to do about the first failure of a setup that registered nobody, in the command line's terms.
    static func hint(_ failure: String, plan: LoadPlan) -> String? {
        if failure.contains(LoadHTTP.untrusted) {
            return "Trust the server's certificate with --ca-file FILE (mauth server --write-certificate FILE writes a development one)"
        }
        if failure.contains(LoadHTTP.refused) { return "Is the server running, at the --url given?" }
        if failure.hasPrefix("HTTP 401 ") || failure.hasPrefix("HTTP 403 ") {
            guard plan.relyingParty != nil else {
                return "Registrations need the relying party's JWT: pass --relying-party-key KEY.pem, the private key whose public key the "
                    + "server's authorization.jwt trusts (with --issuer and --audience as it expects), or run the server in development mode"
            }
            return "The server refused the JWTs signed with --relying-party-key: its authorization.jwt must trust that key's public key "
                + "and expect the --issuer and --audience given"
        }
        if failure.hasPrefix("HTTP 429 ") {
            return "The server rate-limits this address: set limits.requestsPerMinutePerAddress to 0 on the server for a load test"
        }
        return nil
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// When a phase ends: after a number of flows, or at a deadline (a flow under way then still completes).
enum Budget: Sendable {
    case flows(Int)
    case deadline(ContinuousClock.Instant)
}

/// The budget and the progress counters all loops share; one lock per flow.
final class SharedBudget: Sendable {
    private struct State { var remaining: Int?; var flows = 0; var failed = 0 }
    private let deadline: ContinuousClock.Instant?
    private let state: NIOLockedValueBox<State>

    init(_ budget: Budget) {
        switch budget {
        case .flows(let count): state = NIOLockedValueBox(State(remaining: count)); deadline = nil
        case .deadline(let instant): state = NIOLockedValueBox(State(remaining: nil)); deadline = instant
        }
    }

    /// Whether the caller may start one more flow.
    func claim() -> Bool {
        if let deadline, ContinuousClock.now >= deadline { return false }
        return state.withLockedValue { state in
            guard let remaining = state.remaining else { return true }
            guard remaining > 0 else { return false }
            state.remaining = remaining - 1
            return true
        }
    }

    func finished(success: Bool) { state.withLockedValue { success ? ($0.flows += 1) : ($0.failed += 1) } }
    var progress: (Int, Int) { state.withLockedValue { ($0.flows, $0.failed) } }
}

/// A virtual device's account: its username and its software authenticator (key, key id, counter). No storage,
/// no key derivation: the load tool measures the server, not the phone.
struct VirtualUser: Sendable {
    var username: String
    var authenticator: SoftwareAuthenticator
    /// The user's passkeys (a passkey run).
    var passkeys: SoftwarePasskeyAuthenticator
    /// The body of this user's passkey sign-in options request, built once as ``authenticationRequestBody`` is.
    var passkeyOptionsBody: ByteBuffer?
    /// The body of this user's authentication requests: the same for every login of a run (username and the plan's
    /// transaction), so it is built once. That JSON is the generator's own work, which would otherwise take CPU from
    /// the server it measures on the same cores.
    var authenticationRequestBody: ByteBuffer?

    init(username: String, facetID: String, passkeyOrigin: String = "https://localhost") {
        self.username = username
        authenticator = SoftwareAuthenticator()
        authenticator.facetID = facetID
        // A hardware key's behaviour: it counts, so the server's compare-and-set on the counter is measured too.
        passkeys = SoftwarePasskeyAuthenticator(origin: passkeyOrigin, backupEligible: false, counts: true)
    }

    /// User `index` of the plan's population (registered over HTTP or written to the database: the same name).
    init(member index: Int, of plan: LoadPlan) {
        self.init(username: "\(plan.usernamePrefix)-\(index)", facetID: plan.facetID, passkeyOrigin: plan.passkeyOrigin)
    }
}

/// One server: its base URL and the appID its requests imply when they name none.
struct LoadTarget: Sendable {
    var base: String
    var appID: String
    var host: String
    var port: Int
    /// The Host header: the host (an IPv6 address in brackets) and the port.
    var hostHeader: String
    init(_ url: URL) {
        base = url.absoluteString.hasSuffix("/") ? String(url.absoluteString.dropLast()) : url.absoluteString
        appID = base + "/nevisfido/uaf/1.1/facets"
        host = url.host ?? "localhost"
        port = url.port ?? 443
        hostHeader = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }
}

/// What every loop's ``LoadClient`` shares: the TLS context (the trusted certificates), the request timeout and the
/// event loops.
final class LoadHTTP: Sendable {
    let tls: NIOSSLContext
    let timeout: TimeAmount
    let group: MultiThreadedEventLoopGroup

    init(plan: LoadPlan) throws {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let pem = plan.trustedCertificatesPEM {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
        }
        tls = try NIOSSLContext(configuration: configuration)
        timeout = .seconds(plan.requestTimeoutSeconds)
        group = .singleton
    }

    /// A short, stable description, so the same failure is counted under one key.
    static func short(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError, let first = error.connectionErrors.first?.error { return short(first) }
        if let io = error as? IOError { return SystemErrorText.connectionReason(errno: io.errnoCode, place: nil) }
        let text = String(describing: error)
        // BoringSSL's text of an untrusted certificate is long and cut off mid-word; say what it means.
        if error is NIOSSLError, text.contains("CERTIFICATE_VERIFY_FAILED") { return untrusted }
        return text.count > 80 ? String(text.prefix(80)) + "…" : text
    }

    static let refused = SystemErrorText.connectionReason(errno: ECONNREFUSED, place: nil)
    static let untrusted = "the server's certificate is not trusted (the TLS handshake refused it)"
}

/// One connection's closed loop: the UAF flows, each step timed per endpoint.
struct ConnectionLoop: Sendable {
    let connection: Int
    let shared: SharedBudget
    /// Where `--replay-check` sends an accepted response again: the next server.
    let replayTarget: LoadTarget

    /// A UAF endpoint: the path posted to and the name it is reported under.
    struct Endpoint: Sendable {
        let path: String
        var method: HTTPMethod = .POST
        var name: String { method.rawValue + " " + path }
        static let requestRegistration = Endpoint(path: "/nevisfido/uaf/1.1/request/registration")
        static let registration = Endpoint(path: "/nevisfido/uaf/1.1/registration")
        static let requestAuthentication = Endpoint(path: "/nevisfido/uaf/1.1/request/authentication")
        static let authentication = Endpoint(path: "/nevisfido/uaf/1.1/authentication")
        static let passkeyCreationOptions = Endpoint(path: FIDO2API.attestationOptionsPath)
        static let passkeyRegistration = Endpoint(path: FIDO2API.attestationResultPath)
        static let passkeyRequestOptions = Endpoint(path: FIDO2API.assertionOptionsPath)
        static let passkeySignIn = Endpoint(path: FIDO2API.assertionResultPath)
        /// The baseline flow's endpoint, reported as `GET /health/live`.
        static let liveness = Endpoint(path: "/health/live", method: .GET)
    }

    /// Registers `user`; true when the server answered 1200.
    func register(_ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
                  recorder: inout PhaseRecorder) async -> Bool {
        let start = ContinuousClock.now
        do {
            let headers = try await authorization(for: user.username, plan: plan, endpoint: .requestRegistration)
            let context = try encode(.requestRegistration) { try UAFMessageCodec.encodeObject(["username": user.username]) }
            let request = try await uafRequest(try requestBody(.registration, context: context, endpoint: .requestRegistration), as: RegistrationRequest.self,
                                               endpoint: .requestRegistration, target: target, headers: headers, client: client, recorder: &recorder)
            let response = try encode(.registration) { try user.authenticator.register(request, serverAppID: target.appID) }
            try await respond(response, endpoint: .registration, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// One login (with the plan's transaction, if any) by `user`; true when the server answered 1200.
    func authenticate(_ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
                      recorder: inout PhaseRecorder) async -> Bool {
        struct Context: Encodable { var username: String; var transaction: [Transaction]? }
        let start = ContinuousClock.now
        do {
            let body: ByteBuffer
            if let built = user.authenticationRequestBody {
                body = built
            } else {
                let transaction = plan.transactionText.map { [Transaction(contentType: "text/plain", content: Base64URL.encode(Array($0.utf8)))] }
                let context = try encode(.requestAuthentication) {
                    try UAFMessageCodec.encodeObject(Context(username: user.username, transaction: transaction))
                }
                body = try requestBody(.authentication, context: context, endpoint: .requestAuthentication)
                user.authenticationRequestBody = body
            }
            let request = try await uafRequest(body, as: AuthenticationRequest.self,
                                               endpoint: .requestAuthentication, target: target, headers: [], client: client, recorder: &recorder)
            let response = try encode(.authentication) { try user.authenticator.authenticate(request, serverAppID: target.appID) }
            try await respond(response, endpoint: .authentication, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// The relying party's bearer token for `username` as a header (none without a relying party): its own work,
    /// minted before the flow's first request.
    private func authorization(for username: String, plan: LoadPlan, endpoint: Endpoint) async throws(LoadFailure) -> [(String, String)] {
        guard let relyingParty = plan.relyingParty else { return [] }
        do { return [("Authorization", "Bearer " + (try await relyingParty.token(for: username)))] } catch {
            throw LoadFailure.malformed(endpoint: endpoint.name, detail: "minting the JWT: \(LoadHTTP.short(error))")
        }
    }

    /// Registers a passkey for `user` over nevisFIDO's FIDO2 API; true when the server answered `ok`.
    func registerPasskey(_ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
                         recorder: inout PhaseRecorder) async -> Bool {
        let start = ContinuousClock.now
        do {
            let headers = [("Content-Type", "application/json")]
                + (try await authorization(for: user.username, plan: plan, endpoint: .passkeyCreationOptions))
            let body = try encode(.passkeyCreationOptions) {
                ByteBuffer(bytes: try WireJSONEncoder().encode(FIDO2API.OptionsRequest(username: user.username, displayName: user.username)))
            }
            let options = try await fido2(body, as: FIDO2API.CreationOptions.self, endpoint: .passkeyCreationOptions, target: target, headers: headers,
                                          client: client, recorder: &recorder)
            let credential = try encode(.passkeyRegistration) { try user.passkeys.create(for: options) }
            try await finish(credential, endpoint: .passkeyRegistration, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// One passkey sign-in by `user`'s username; true when the server answered `ok`.
    func signInWithPasskey(_ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
                           recorder: inout PhaseRecorder) async -> Bool {
        let start = ContinuousClock.now
        do {
            let body: ByteBuffer
            if let built = user.passkeyOptionsBody { body = built } else {
                body = try encode(.passkeyRequestOptions) { ByteBuffer(bytes: try WireJSONEncoder().encode(FIDO2API.OptionsRequest(username: user.username))) }
                user.passkeyOptionsBody = body
            }
            let options = try await fido2(body, as: FIDO2API.RequestOptions.self, endpoint: .passkeyRequestOptions, target: target,
                                          headers: [("Content-Type", "application/json")], client: client, recorder: &recorder)
            let credential = try encode(.passkeySignIn) { try user.passkeys.get(for: options) }
            try await finish(credential, endpoint: .passkeySignIn, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// Posts a FIDO2 options request and decodes a 200 answer.
    private func fido2<Answer: Decodable>(_ body: ByteBuffer, as: Answer.Type, endpoint: Endpoint, target: LoadTarget, headers: [(String, String)],
                                          client: isolated LoadClient, recorder: inout PhaseRecorder) async throws -> Answer {
        let (status, answer) = try await timed(endpoint, target: target, body: body, headers: headers, client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status) }
        return try decode(endpoint) { try WireJSONDecoder().decode(Answer.self, from: answer.readableBytesView) }
    }

    /// Posts a FIDO2 result and requires `ok`; with `--replay-check` sends it again to the next server, where it must be
    /// refused; then counts the flow as completed.
    private func finish(_ credential: FIDO2API.Credential, endpoint: Endpoint, target: LoadTarget, start: ContinuousClock.Instant, plan: LoadPlan,
                        client: isolated LoadClient, recorder: inout PhaseRecorder) async throws {
        let bytes = try encode(endpoint) { ByteBuffer(bytes: try WireJSONEncoder().encode(credential)) }
        let headers = [("Content-Type", "application/json")]
        let (status, _) = try await timed(endpoint, target: target, body: bytes, headers: headers, client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status) }
        let elapsed = (ContinuousClock.now - start).microseconds
        if plan.replayCheck,
           let (status, _) = try? await client.post(replayTarget, path: endpoint.path, endpoint: endpoint.name, body: bytes, headers: headers), status == 200 {
            throw LoadFailure.replayAccepted(endpoint: endpoint.name)
        }
        recorder.completed(flowMicroseconds: elapsed)
        shared.finished(success: true)
    }

    /// One baseline flow (see ``LoadPlan/Flow/baseline``): two liveness probes, each of which must answer 200.
    func probe(target: LoadTarget, client: isolated LoadClient, recorder: inout PhaseRecorder) async -> Bool {
        let start = ContinuousClock.now
        do {
            for _ in 0..<2 {
                let (status, _) = try await timed(.liveness, target: target, body: nil, headers: [], client: client, recorder: &recorder)
                guard status == 200 else { throw LoadFailure.http(endpoint: Endpoint.liveness.name, status: status) }
            }
            recorder.completed(flowMicroseconds: (ContinuousClock.now - start).microseconds)
            shared.finished(success: true)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// Records a failed flow; after a connection error the loop pauses briefly, as a real client backs off, instead
    /// of spinning on a server that is down.
    private func failed(_ error: any Error, recorder: inout PhaseRecorder, client: isolated LoadClient) async {
        let failure = error as? LoadFailure ?? .malformed(endpoint: "flow", detail: LoadHTTP.short(error))
        recorder.failed(failure)
        shared.finished(success: false)
        if case .transport = failure { try? await Task.sleep(for: .milliseconds(100)) }
    }

    /// The JSON body of a GetUAFRequest for `operation` with `context`.
    private func requestBody(_ operation: UAFOperation, context: String, endpoint: Endpoint) throws(LoadFailure) -> ByteBuffer {
        try encode(endpoint) { ByteBuffer(bytes: try WireJSONEncoder().encode(GetUAFRequest(op: operation, context: context))) }
    }

    /// Posts a GetUAFRequest (its JSON `body`, see ``requestBody(_:context:endpoint:)``) and returns the first message
    /// of a 1200 answer's `uafRequest`.
    private func uafRequest<Message: Decodable>(_ body: ByteBuffer, as: Message.Type, endpoint: Endpoint, target: LoadTarget,
                                                headers: [(String, String)], client: isolated LoadClient,
                                                recorder: inout PhaseRecorder) async throws -> Message {
        let (status, answer) = try await timed(endpoint, target: target, body: body, headers: headers, client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status) }
        let decoded = try decode(endpoint) { try WireJSONDecoder().decode(ReturnUAFRequest.self, from: answer.readableBytesView) }
        guard decoded.statusCode == 1200 else { throw LoadFailure.uaf(endpoint: endpoint.name, statusCode: decoded.statusCode) }
        guard let request = decoded.uafRequest else { throw LoadFailure.malformed(endpoint: endpoint.name, detail: "1200 without uafRequest") }
        guard let message = try decode(endpoint, { try UAFMessageCodec.decode(Message.self, from: request) }).first else {
            throw LoadFailure.malformed(endpoint: endpoint.name, detail: "no request")
        }
        return message
    }

    /// Posts the signed response and requires 1200; with `--replay-check` sends it again to the next server, where it
    /// must be refused; then counts the flow as completed.
    private func respond(_ response: some Encodable, endpoint: Endpoint, target: LoadTarget, start: ContinuousClock.Instant, plan: LoadPlan,
                         client: isolated LoadClient, recorder: inout PhaseRecorder) async throws {
        let bytes = try encode(endpoint) {
            ByteBuffer(bytes: try WireJSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]))))
        }
        let (status, answer) = try await timed(endpoint, target: target, body: bytes, headers: [], client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status) }
        let decoded = try decode(endpoint) { try WireJSONDecoder().decode(StatusOnly.self, from: answer.readableBytesView) }
        guard decoded.statusCode == 1200 else { throw LoadFailure.uaf(endpoint: endpoint.name, statusCode: decoded.statusCode) }
        let elapsed = (ContinuousClock.now - start).microseconds
        if plan.replayCheck {
            // Anything but a refusal is a replay accepted. A replay that gets no answer at all proves nothing either
            // way and is not counted.
            if let (status, answer) = try? await client.post(replayTarget, path: endpoint.path, endpoint: endpoint.name, body: bytes, headers: []),
               status == 200, (try? WireJSONDecoder().decode(StatusOnly.self, from: answer.readableBytesView))?.statusCode == 1200 {
                throw LoadFailure.replayAccepted(endpoint: endpoint.name)
            }
        }
        recorder.completed(flowMicroseconds: elapsed)
        shared.finished(success: true)
    }

    /// The one field of a ServerResponse the generator reads: the tokens it carries are not materialized.
    private struct StatusOnly: Decodable { var statusCode: Int }

    /// Sends `body` (none for a GET) to the endpoint with its method and records how long the answer took.
    private func timed(_ endpoint: Endpoint, target: LoadTarget, body: ByteBuffer?, headers: [(String, String)], client: isolated LoadClient,
                       recorder: inout PhaseRecorder) async throws(LoadFailure) -> (Int, ByteBuffer) {
        let start = ContinuousClock.now
        let answer = try await client.send(endpoint.method, target, path: endpoint.path, endpoint: endpoint.name, body: body, headers: headers)
        recorder.record(endpoint: endpoint.name, microseconds: (ContinuousClock.now - start).microseconds)
        return answer
    }

    private func encode<T>(_ endpoint: Endpoint, _ body: () throws -> T) throws(LoadFailure) -> T {
        do { return try body() } catch { throw .malformed(endpoint: endpoint.name, detail: "building the message: \(LoadHTTP.short(error))") }
    }

    private func decode<T>(_ endpoint: Endpoint, _ body: () throws -> T) throws(LoadFailure) -> T {
        do { return try body() } catch { throw .malformed(endpoint: endpoint.name, detail: "decoding the answer: \(LoadHTTP.short(error))") }
    }
}

extension Duration {
    var microseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1_000_000 + UInt64(max(0, attoseconds)) / 1_000_000_000_000
    }
}
