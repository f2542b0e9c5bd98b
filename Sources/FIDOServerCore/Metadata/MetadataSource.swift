import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Primitives
import ServiceLifecycle
import UAF
import WebAuthn
import X509

/// The metadata in force: the local statements and, with a Metadata Service configured, the newest verified
/// BLOB's statements and status reports. A reload swaps the whole store at once, so a request sees one consistent
/// store; a BLOB that fails to load, verify or be newer leaves the store in force unchanged.
public final class MetadataSource: Sendable {
    /// The BLOB in force: its serial number and `nextUpdate`.
    package struct BLOBStamp: Sendable, Equatable {
        package var number: Int
        package var nextUpdate: Date
    }

    private struct State {
        var store: MetadataStore
        var blob: BLOBStamp?
        /// Why no BLOB is in force, while none is (the last refusal); nil once one is.
        var unavailable: String?
    }

    private let state: NIOLockedValueBox<State>
    private let local: [MetadataStatement]
    package let service: ServerConfiguration.MetadataService?
    private let roots: [Certificate]
    private let revocationLists: [RevocationList]
    private let clock: @Sendable () -> Date
    private let metrics: ServerMetrics?
    /// The proxy a BLOB URL is fetched through.
    private let proxy: ServerConfiguration.OutboundProxy?

    /// Fixed metadata: no Metadata Service, nothing to reload.
    public init(_ store: MetadataStore) {
        state = NIOLockedValueBox(State(store: store, blob: nil, unavailable: nil))
        local = store.uaf.all
        service = nil
        roots = []
        revocationLists = []
        clock = { Date() }
        metrics = nil
        proxy = nil
    }

    private init(
        local: [MetadataStatement], service: ServerConfiguration.MetadataService, roots: [Certificate], revocationLists: [RevocationList],
        clock: @escaping @Sendable () -> Date, metrics: ServerMetrics?, proxy: ServerConfiguration.OutboundProxy?
    ) throws {
        self.proxy = proxy
        self.local = local
        self.service = service
        self.roots = roots
        self.revocationLists = revocationLists
        self.clock = clock
        self.metrics = metrics
        state = NIOLockedValueBox(State(store: MetadataStore(uaf: try UAFMetadata(local)), blob: nil, unavailable: "not loaded yet"))
    }

    public var store: MetadataStore { state.withLockedValue { $0.store } }
    package var blob: BLOBStamp? { state.withLockedValue { $0.blob } }
    /// Why the configured Metadata Service's BLOB is not in force, while it is not; nil when it is (or none is
    /// configured). `/health/ready` reports it.
    package var unavailable: String? { state.withLockedValue { $0.unavailable } }

    /// The configuration's metadata. With a Metadata Service, the cached BLOB (``ServerConfiguration/MetadataService/cachePath``)
    /// is installed first, then the service's own is read; a newer one wins. Without either the server still starts,
    /// on its local statements, serving what needs no metadata: it logs the reason as an error, `/health/ready`
    /// says `metadata` `UNAVAILABLE`, and the watcher keeps trying. Why not refuse to start: an outage of the service
    /// (or of the network to it) would otherwise take every instance down at its next restart, while the revocations
    /// the BLOB carries are one check among many. With `requireCurrent` the server does refuse to start without a
    /// current BLOB, for an operator who would rather not serve at all.
    package static func load(
        _ configuration: ServerConfiguration, clock: @escaping @Sendable () -> Date, metrics: ServerMetrics? = nil,
        logger: Logger
    ) async throws -> MetadataSource {
        let local = try configuration.loadMetadata(skipped: { logger.info("metadata: \($0)") })
        guard let service = configuration.metadataService else { return MetadataSource(MetadataStore(uaf: local)) }
        let roots = try ServerConfiguration.readCertificates(service.rootCertificatesPath, setting: "metadataService.rootCertificatesPath")
        var lists: [RevocationList] = []
        if let path = service.revocationListsPath {
            do {
                lists = try RevocationList.lists(in: Array(try ServerConfiguration.readFile(path, setting: "metadataService.revocationListsPath")))
            } catch let error as RevocationList.ReadError {
                throw ServerConfiguration.ConfigurationError.invalid("metadataService.revocationListsPath \(path): \(error)")
            }
        }
        let source = try MetadataSource(
            local: local.all, service: service, roots: roots, revocationLists: lists, clock: clock, metrics: metrics,
            proxy: configuration.outboundProxy)
        if let cache = service.cachePath, FileManager.default.fileExists(atPath: cache) {
            if case .installed(let number) = await source.reload(logger: logger, from: .cache(cache)) {
                logger.notice("metadata: the cached BLOB no \(number) is in force until the service's own is read")
            }
        }
        if case .refused(let reason) = await source.reload(logger: logger), source.blob == nil {
            if service.requireCurrent { throw ServerConfiguration.ConfigurationError.invalid("metadataService: \(reason)") }
            logger.error(
                """
                metadata: starting without the Metadata Service's BLOB (\(reason)); the local statements serve, the revocations \
                the BLOB would carry are not known until it loads, and /health/ready says metadata UNAVAILABLE
                """)
        }
        return source
    }

    /// Where a BLOB is read from.
    package enum Origin: Sendable {
        /// The configured file or URL.
        case service
        /// The cache file of the last BLOB installed from the URL.
        case cache(String)
    }

    /// What a reload did.
    package enum ReloadOutcome: Equatable {
        /// A newer BLOB is in force (its number).
        case installed(Int)
        /// The BLOB read is not newer than the one in force (its number): nothing changed.
        case notNewer(Int)
        /// The BLOB could not be read, did not verify, or is late where a current one is required.
        case refused(String)
    }

    /// Reads, verifies and installs the BLOB when its serial number is higher than the one in force.
    @discardableResult
    package func reload(logger: Logger, from origin: Origin = .service) async -> ReloadOutcome {
        let outcome = await attempt(logger: logger, from: origin)
        let name =
            switch outcome {
            case .installed: "installed"
            case .notNewer: "not_newer"
            case .refused: "refused"
            }
        let blob = self.blob
        if case .refused(let reason) = outcome { state.withLockedValue { if $0.blob == nil { $0.unavailable = reason } } }
        metrics?.metadataReloaded(outcome: name, number: blob?.number, nextUpdate: blob?.nextUpdate)
        return outcome
    }

    private func attempt(logger: Logger, from origin: Origin) async -> ReloadOutcome {
        guard let service else { return .refused("no metadata service is configured") }
        let now = clock()
        let blob: MetadataBLOB
        let data: Data
        do {
            switch origin {
            case .service: data = try await Self.read(service, proxy: proxy)
            case .cache(let path): data = try ServerConfiguration.readFile(path, setting: "metadataService.cachePath")
            }
            blob = try await MetadataBLOB.verify(data, roots: roots, revocationLists: revocationLists, now: now)
        } catch {
            logger.error("metadata BLOB not loaded, keeping the metadata in force: \(error)")
            return .refused("\(error)")
        }
        if blob.isStale(at: now) {
            let late = "the metadata BLOB no \(blob.number) is late (nextUpdate \(Self.dayText(blob.nextUpdate)))"
            guard !service.requireCurrent else {
                logger.error("\(late); metadataService.requireCurrent refuses it, keeping the metadata in force")
                return .refused(late)
            }
            logger.warning("\(late); using it, its revocations still hold")
        }
        if let current = self.blob, blob.number <= current.number {
            // An older BLOB served again must not take back a revocation a newer one made.
            if blob.number < current.number { logger.warning("metadata BLOB no \(blob.number) is older than no \(current.number) in force: ignored") }
            return .notNewer(blob.number)
        }
        for note in blob.skipped { logger.warning("metadata BLOB entry skipped: \(note)") }
        let store: MetadataStore
        do { store = try combine(blob, logger: logger) } catch {
            logger.error("metadata BLOB not loaded, keeping the metadata in force: \(error)")
            return .refused("\(error)")
        }
        let installed = state.withLockedValue { state -> Bool in
            // Two reloads at once (SIGHUP during a scheduled one): the newer BLOB wins, whichever finishes last.
            if let current = state.blob, blob.number <= current.number { return false }
            state = State(store: store, blob: BLOBStamp(number: blob.number, nextUpdate: blob.nextUpdate), unavailable: nil)
            return true
        }
        guard installed else { return .notNewer(blob.number) }
        if case .service = origin, let cache = service.cachePath { Self.writeCache(data, to: cache, logger: logger) }
        let revoked = store.uaf.all.count(where: { store.uaf.registrationRefusal(aaid: $0.aaid, attestationCertificates: [], at: now) != nil })
        logger.notice(
            """
            metadata BLOB no \(blob.number) in force (nextUpdate \(Self.dayText(blob.nextUpdate))): \(blob.statements.count) UAF \
            statement(s), status reports for \(blob.statusReports.count) AAID(s), \(revoked) statement(s) refused by a report, \
            \(blob.fido2.count) FIDO2 model(s)
            """)
        return .installed(blob.number)
    }

    /// The local statements and the BLOB's: a local statement wins for its AAID (the operator pinned it), and the
    /// BLOB's status reports apply to every AAID, local or not.
    private func combine(_ blob: MetadataBLOB, logger: Logger) throws -> MetadataStore {
        var statements = local
        var seen = Set(local.map { AAID.normalized($0.aaid) })
        for statement in blob.statements {
            guard seen.insert(AAID.normalized(statement.aaid)).inserted else {
                logger.info("metadata: the local statement for \(statement.aaid) is used, not the BLOB's")
                continue
            }
            statements.append(statement)
        }
        return MetadataStore(uaf: try UAFMetadata(statements, statusReports: blob.statusReports), fido2: blob.fido2)
    }

    /// The BLOB's bytes, from its file or its https URL, at most ``MetadataBLOB/maximumBytes``.
    static func read(_ service: ServerConfiguration.MetadataService, proxy: ServerConfiguration.OutboundProxy? = nil) async throws -> Data {
        guard let url = service.url else {
            let size = (try? FileManager.default.attributesOfItem(atPath: service.blob)[.size] as? Int) ?? 0
            guard size <= MetadataBLOB.maximumBytes else {
                throw ServerConfiguration.ConfigurationError.invalid(
                    "metadataService.blob \(service.blob) is larger than \(MetadataBLOB.maximumBytes) bytes")
            }
            return try ServerConfiguration.readFile(service.blob, setting: "metadataService.blob")
        }
        return try await HTTPSDownload.get(
            url.absoluteString, trustedCertificatesPath: service.trustedCertificatesPath,
            maximumBytes: MetadataBLOB.maximumBytes, timeout: .seconds(60), proxy: proxy)
    }

    /// Keeps `data` (a BLOB just installed) at `path`: written beside it, then renamed over it, so a reader never
    /// sees half a BLOB. A failure costs only the cache, and is logged.
    static func writeCache(_ data: Data, to path: String, logger: Logger) {
        let temporary = path + ".tmp"
        do {
            try data.write(to: URL(fileURLWithPath: temporary))
        } catch {
            logger.warning("metadata: the BLOB could not be cached at \(path): \(SystemErrorText.reason(error))")
            return
        }
        if rename(temporary, path) != 0 {
            logger.warning("metadata: the BLOB could not be cached at \(path): \(SystemErrorText.reason(errno: errno))")
            try? FileManager.default.removeItem(atPath: temporary)
        }
    }

    static func dayText(_ date: Date) -> String {
        String(ISO8601DateFormatter.string(from: date, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate]))
    }
}

/// Keeps the Metadata Service's BLOB fresh: a file is re-read when its modification time or size changes, a URL is
/// fetched every `refreshSeconds` and hourly once `nextUpdate` has come without a newer BLOB (both checked every
/// `fileInterval`); both on SIGHUP. Runs only with a Metadata Service (a service group treats a service that returns
/// early as failed).
package struct MetadataWatcher: Service {
    let source: MetadataSource
    let fileInterval: Duration
    let handleSignals: Bool
    let clock: @Sendable () -> Date
    let logger: Logger

    package init(
        source: MetadataSource, fileInterval: Duration = .seconds(2), handleSignals: Bool, clock: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.source = source
        self.fileInterval = fileInterval
        self.handleSignals = handleSignals
        self.clock = clock
        self.logger = logger
    }

    package func run() async throws {
        guard let service = source.service else { return }
        let source = source
        let logger = logger
        let clock = clock
        let fileInterval = fileInterval
        // The loops end when the service is cancelled at graceful shutdown.
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                // A file is watched for changes; a URL is fetched on its schedule below. Both on SIGHUP.
                group.addTask {
                    await FileChangeTriggers.run(
                        paths: service.url == nil ? [service.blob] : [], interval: fileInterval,
                        handleSignals: handleSignals
                    ) { await source.reload(logger: logger) }
                }
                if service.url != nil {
                    group.addTask {
                        // Due times are read on the server's clock, checked every `fileInterval`.
                        var due = clock().addingTimeInterval(
                            TimeInterval(
                                Self.nextFetch(
                                    after: clock(), nextUpdate: source.blob?.nextUpdate,
                                    refreshSeconds: service.refreshSeconds)))
                        while !Task.isCancelled {
                            do { try await Task.sleep(for: fileInterval) } catch { return }
                            guard clock() >= due else { continue }
                            await source.reload(logger: logger)
                            let now = clock()
                            due = now.addingTimeInterval(
                                TimeInterval(
                                    Self.nextFetch(
                                        after: now, nextUpdate: source.blob?.nextUpdate,
                                        refreshSeconds: service.refreshSeconds)))
                        }
                    }
                }
                await group.waitForAll()
            }
        }
    }

    /// Seconds until the next fetch of a URL: `refreshSeconds`, or sooner when `nextUpdate` comes first; hourly (at
    /// most) once `nextUpdate` has come and the BLOB in force is still the old one.
    static func nextFetch(after now: Date, nextUpdate: Date?, refreshSeconds: Int) -> Int {
        let refresh = refreshSeconds
        // Without any BLOB in force (the server started without one), every 5 minutes at most.
        guard let nextUpdate else { return min(refresh, 300) }
        let untilNext = Int(nextUpdate.timeIntervalSince(now).rounded(.up))
        if untilNext <= 0 { return min(refresh, 3600) }
        return min(refresh, untilNext)
    }
}
