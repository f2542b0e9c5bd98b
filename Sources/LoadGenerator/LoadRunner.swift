import FIDOSimulation
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import NIOSSL
import NevisProtocol
import Primitives
import UAF
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
    public static func run(
        _ plan: LoadPlan, progressInterval: Duration = .seconds(1),
        progress: @escaping @Sendable (LoadProgress) -> Void = { _ in }
    ) async throws -> LoadReport {
        try plan.validate()
        let http = try LoadHTTP(plan: plan)
        return try await run(plan, http: http, progressInterval: progressInterval, progress: progress)
    }

    private static func run(
        _ plan: LoadPlan, http: LoadHTTP, progressInterval: Duration,
        progress: @escaping @Sendable (LoadProgress) -> Void
    ) async throws -> LoadReport {
        let targets = plan.targets.map(LoadTarget.init)
        var setup: LoadReport.Phase?
        var devices: [[VirtualUser]] = Array(repeating: [], count: plan.connections)
        if plan.flow == .authentication, let write = plan.writeRegistrations {
            devices = try await writeDirectly(plan, write: write, progress: progress)
            if let settle = plan.settleDatabase {
                let start = ContinuousClock.now
                try await settle()
                progress(
                    LoadProgress(
                        phase: "setup: the database settled (vacuum, statistics)", elapsedSeconds: (ContinuousClock.now - start).seconds,
                        flows: plan.population, failedFlows: 0, currentFlowsPerSecond: 0))
            }
        } else if plan.hasPopulation {
            // Connection i registers (and later authenticates) users i, i + C, i + 2C, ...
            let (report, registered) = try await phase(
                "setup: registering \(plan.population) users", plan: plan, http: http,
                budget: .flows(plan.population), progressInterval: progressInterval,
                progress: progress
            ) { loop, recorder, budget, client in
                var mine: [VirtualUser] = []
                var index = loop.connection
                while index < plan.population, budget.claim() {
                    var user = VirtualUser(member: index, of: plan)
                    let target = targets[loop.connection % targets.count]
                    let registered =
                        plan.flow == .passkey
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
        let budget: Budget =
            switch plan.stop {
            case .duration(let seconds): .deadline(ContinuousClock.now + .milliseconds(Int64(seconds * 1000)))
            case .flows(let count): .flows(count)
            }
        let name = plan.flow.rawValue
        let owned = devices
        let watch = CPUWatch(serverPIDs: plan.serverPIDs, embeddedServers: plan.embeddedServers, databaseProcess: plan.databaseProcess)
        let (measured, registered) = try await phase(
            name, plan: plan, http: http, budget: budget, progressInterval: progressInterval,
            progress: progress, watch: watch
        ) { loop, recorder, budget, client in
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
                    var user = VirtualUser(username: "\(plan.usernamePrefix)-c\(loop.connection)-\(count)", of: plan)
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
            (verification, _) = try await phase(
                "verification: authenticating the \(accepted) users answered 1200", plan: plan, http: http,
                budget: .flows(Int.max), progressInterval: progressInterval, progress: progress
            ) { loop, recorder, _, client in
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
        return LoadReport(
            targets: plan.targets.map(\.absoluteString), connections: plan.connections, flow: plan.flow,
            transactions: plan.transactionText != nil, appAttestation: plan.appAttest.map { _ in "App Attest" },
            population: plan.hasPopulation ? plan.population : 0,
            setup: setup, measured: measured, verification: verification, replayChecked: plan.replayCheck,
            serverMemory: plan.serverPIDs.compactMap { pid in
                ProcFS.peakResidentMiB(pid: pid).map { LoadReport.ProcessMemory(pid: pid, peakResidentMiB: $0) }
            }, generatorScheduling: plan.generatorScheduling)
    }

    /// The population made here and written to the database in batches (``LoadPlan/writeRegistrations``). Of a
    /// population up to ``LoadPlan/signedInSample``, every user is kept; of a larger one, every `stride`-th (user i with
    /// i mod stride = 0). The j-th user kept belongs to connection j mod C, so a population of at most the sample is
    /// shared as in a setup over HTTP. Keys are made on every core while the previous batch is written, so writing a
    /// batch and making the next overlap.
    private static func writeDirectly(
        _ plan: LoadPlan, write: @Sendable ([LoadPlan.DirectRegistration]) async throws -> Void,
        progress: @escaping @Sendable (LoadProgress) -> Void
    ) async throws -> [[VirtualUser]] {
        let start = ContinuousClock.now
        let name = "setup: writing \(plan.population) users to the database"
        var devices: [[VirtualUser]] = Array(repeating: [], count: plan.connections)
        let chunk = 2_000
        let workers = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let stride = max(1, plan.population / max(1, plan.signedInSample))
        let population = plan.population
        // Making a P-256 key (with its pairwise check) took about half the fill's CPU: the users nobody signs in as
        // share the public keys of 1,024 authenticators made once.
        let storedKeys = (
            aaid: SoftwareAuthenticator().aaid,
            keys: stride < 2 ? [] : (0..<1024).map { _ in Array(SoftwareAuthenticator().key.publicKey.derRepresentation) }
        )
        // One round: `workers` chunks from `first`, made at once, in order; the users kept among them, in order.
        @Sendable func make(from first: Int) async -> (rows: [[LoadPlan.DirectRegistration]], kept: [VirtualUser]) {
            await withTaskGroup(of: (Int, [LoadPlan.DirectRegistration], [VirtualUser]).self) { group in
                for worker in 0..<workers {
                    let low = first + worker * chunk
                    let high = min(low + chunk, population)
                    guard low < high else { continue }
                    group.addTask {
                        var rows: [LoadPlan.DirectRegistration] = []
                        rows.reserveCapacity(high - low)
                        var kept: [VirtualUser] = []
                        for index in low..<high {
                            if index % stride == 0 {
                                let user = VirtualUser(member: index, of: plan)
                                rows.append(.init(user: user))
                                kept.append(user)
                            } else {
                                // A user nobody signs in as needs only a row as the server stores it: her own key id,
                                // and one of the run's stored keys (same size as her own; nothing verifies with it).
                                rows.append(
                                    .init(
                                        username: VirtualUser.username(member: index, of: plan), aaid: storedKeys.aaid,
                                        keyID: Base64URL.encode(SecureRandom.bytes(32)), publicKeyDER: storedKeys.keys[index % storedKeys.keys.count])
                                )
                            }
                        }
                        return (worker, rows, kept)
                    }
                }
                var parts: [(Int, [LoadPlan.DirectRegistration], [VirtualUser])] = []
                for await part in group { parts.append(part) }
                parts.sort { $0.0 < $1.0 }
                return (parts.map(\.1), parts.flatMap(\.2))
            }
        }
        var kept = 0
        var written = 0
        var lastReport = start
        var next: Task<(rows: [[LoadPlan.DirectRegistration]], kept: [VirtualUser]), Never>? = Task { await make(from: 0) }
        var first = 0
        while let making = next {
            let made = await making.value
            first += chunk * workers
            let following = first
            next = following < population ? Task { await make(from: following) } : nil
            for rows in made.rows { try await write(rows) }
            for user in made.kept {
                devices[kept % plan.connections].append(user)
                kept += 1
            }
            written += made.rows.reduce(0) { $0 + $1.count }
            if ContinuousClock.now - lastReport >= .seconds(1) || written == population {
                lastReport = ContinuousClock.now
                let seconds = (lastReport - start).seconds
                progress(
                    LoadProgress(
                        phase: name, elapsedSeconds: seconds, flows: written, failedFlows: 0,
                        currentFlowsPerSecond: Double(written) / max(seconds, 0.001)))
            }
        }
        return devices
    }

    /// Runs `body` on every connection at once until the budget is spent, prints progress, and merges what the
    /// loops recorded.
    private static func phase(
        _ name: String, plan: LoadPlan, http: LoadHTTP, budget: Budget, progressInterval: Duration,
        progress: @escaping @Sendable (LoadProgress) -> Void, watch: CPUWatch? = nil,
        body: @escaping @Sendable (ConnectionLoop, inout PhaseRecorder, SharedBudget, isolated LoadClient) async -> [VirtualUser]
    )
        async throws -> (LoadReport.Phase, [[VirtualUser]])
    {
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
                progress(
                    LoadProgress(
                        phase: name, elapsedSeconds: (ContinuousClock.now - start).seconds, flows: flows, failedFlows: failed,
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
                    let loop = ConnectionLoop(
                        connection: connection, shared: shared,
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
