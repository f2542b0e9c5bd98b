import Foundation
import UnixSignals

/// When a file-backed setting is re-read: when one of its files changes (modification time or size, checked every
/// `interval`; `ServerConfiguration.fileStamp(_:)`) and, with `handleSignals`, on SIGHUP. Shared by the watchers
/// of the facets file, the Metadata Service BLOB and the TLS certificate.
package enum FileChangeTriggers {
    /// Calls `reload` on each trigger until the task is cancelled (the watchers run it inside
    /// `cancelWhenGracefulShutdown`). Returns at once with no paths and no signals.
    package static func run(paths: [String], interval: Duration, handleSignals: Bool, reload: @escaping @Sendable () async -> Void) async {
        @Sendable func stamp() -> [[String]] { paths.map(ServerConfiguration.fileStamp) }
        await withTaskGroup(of: Void.self) { group in
            if handleSignals {
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sighup) { await reload() }
                }
            }
            if !paths.isEmpty {
                group.addTask {
                    var last = stamp()
                    while !Task.isCancelled {
                        do { try await Task.sleep(for: interval) } catch { return }
                        let now = stamp()
                        if now != last {
                            last = now
                            await reload()
                        }
                    }
                }
            }
            await group.waitForAll()
        }
    }
}
