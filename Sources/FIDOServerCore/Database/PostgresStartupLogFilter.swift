import Logging
import NIOConcurrencyHelpers

/// The PostgreSQL pool's background logger while a store opens: PostgresNIO's warning about a lease asked before
/// `run()` began goes out at debug (see `StoreDatabase.open`); everything else, and that warning after the start-up,
/// passes unchanged.
struct PostgresStartupLogFilter: LogHandler {
    final class Flag: Sendable {
        private let value = NIOLockedValueBox(true)
        var isStarting: Bool { value.withLockedValue { $0 } }
        func end() { value.withLockedValue { $0 = false } }
    }

    var upstream: any LogHandler
    let starting: Flag

    func log(event: LogEvent) {
        guard event.level == .warning, starting.isStarting,
            event.message.description.hasPrefix("Trying to lease connection from `PostgresClient`, but `PostgresClient.run()` hasn't been called yet")
        else { return upstream.log(event: event) }
        var lowered = event
        lowered.level = .debug
        if upstream.logLevel <= .debug { upstream.log(event: lowered) }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { upstream.metadataProvider }
        set { upstream.metadataProvider = newValue }
    }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { upstream[metadataKey: key] }
        set { upstream[metadataKey: key] = newValue }
    }
    var metadata: Logger.Metadata {
        get { upstream.metadata }
        set { upstream.metadata = newValue }
    }
    var logLevel: Logger.Level {
        get { upstream.logLevel }
        set { upstream.logLevel = newValue }
    }
}
