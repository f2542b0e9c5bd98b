import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import UAF

/// The trusted facet IDs, read from configuration or from a facets file that is reloaded when it changes and on
/// SIGHUP (as nevisFIDO hot-reloads `fido-uaf.facets`). A file that cannot be read or parsed, or that lists no
/// facet, keeps the previous list and logs an error: a broken edit must not leave the server trusting nothing, nor
/// anything it did not trust before.
public final class TrustedFacetsSource: Sendable {
    private let current: NIOLockedValueBox<[String]>
    package let path: String?
    let allowWildcards: Bool

    /// Fixed facets (no file).
    public init(facets: [String]) {
        current = NIOLockedValueBox(facets)
        path = nil
        allowWildcards = true
    }

    /// Facets from `path`; fails if the file cannot be loaded at start-up.
    public init(path: String, allowWildcards: Bool) throws {
        self.path = path
        self.allowWildcards = allowWildcards
        current = NIOLockedValueBox(try Self.read(path, allowWildcards: allowWildcards))
    }

    public var facets: [String] { current.withLockedValue { $0 } }

    /// The file holds a TrustedFacets document (`{"trustedFacets": [{"version": …, "ids": [...]}]}`, UAF 1.1 ids
    /// are used) or a plain JSON array of facet IDs.
    static func read(_ path: String, allowWildcards: Bool) throws -> [String] {
        let data = try ServerConfiguration.readFile(path, setting: "facetsPath")
        let ids: [String]
        if let list = try? JSONDecoder().decode([String].self, from: data) {
            ids = list
        } else if let document = try? JSONDecoder().decode(TrustedFacets.self, from: data) {
            ids = document.trustedFacets.filter { $0.version == .uaf11 }.flatMap(\.ids)
        } else {
            throw ServerConfiguration.ConfigurationError.invalid("\(path) is neither a TrustedFacets document nor a JSON array of facet IDs")
        }
        guard !ids.isEmpty else { throw ServerConfiguration.ConfigurationError.invalid("\(path) lists no facet") }
        if !allowWildcards, ids.contains(where: { $0.hasSuffix("*") }) {
            throw ServerConfiguration.ConfigurationError.invalid("\(path): wildcard facets are allowed only in development mode")
        }
        return ids
    }

    /// Re-reads the file; returns whether the list changed. On failure the previous list stays.
    @discardableResult
    func reload(logger: Logger) -> Bool {
        guard let path else { return false }
        do {
            let ids = try Self.read(path, allowWildcards: allowWildcards)
            let changed = current.withLockedValue { value in
                defer { value = ids }
                return value != ids
            }
            if changed { logger.notice("trusted facets reloaded from \(path): \(ids.count) facet(s)") }
            return changed
        } catch {
            logger.error("trusted facets not reloaded, keeping the previous list: \(error)")
            return false
        }
    }
}

/// Watches the facets file: a reload when its modification time or size changes (checked every `interval`) and
/// on SIGHUP. Runs only when facets come from a file (a service group treats a service that returns early as failed).
package struct TrustedFacetsWatcher: Service {
    let source: TrustedFacetsSource
    let interval: Duration
    let handleSignals: Bool
    let logger: Logger
    package init(source: TrustedFacetsSource, interval: Duration, handleSignals: Bool, logger: Logger) {
        self.source = source
        self.interval = interval
        self.handleSignals = handleSignals
        self.logger = logger
    }

    package func run() async throws {
        guard let path = source.path else { return }
        let source = source
        let logger = logger
        // Ends when the service is cancelled at graceful shutdown.
        await cancelWhenGracefulShutdown {
            await FileChangeTriggers.run(paths: [path], interval: interval, handleSignals: handleSignals) { source.reload(logger: logger) }
        }
    }
}
