import FIDOServerCore
import Foundation
import Logging
import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where log lines go: a file descriptor written whole lines at a time under a lock, so lines of concurrent tasks
/// never interleave.
public final class LogSink: Sendable {
    private let descriptor: Int32
    private let lock = NIOLock()

    private init(descriptor: Int32) { self.descriptor = descriptor }

    public static let standardError = LogSink(descriptor: 2)

    /// A file opened for appending (created with mode 0640 when missing: audit lines name users and addresses).
    public static func appending(to path: String) throws -> LogSink {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        guard descriptor >= 0 else {
            throw LogSinkError(description: "cannot open \(path) for appending: \(String(cString: strerror(errno)))")
        }
        return LogSink(descriptor: descriptor)
    }

    /// Writes `line` and a newline; a write the system refuses is dropped (logging must never stop the server).
    func write(_ line: [UInt8]) {
        lock.withLock {
            var bytes = line
            bytes.append(UInt8(ascii: "\n"))
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { posixWrite(descriptor, $0.baseAddress! + offset, $0.count - offset) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}

/// `write(2)`, named apart from ``LogSink/write(_:)``.
private func posixWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, bytes, count)
    #elseif canImport(Musl)
    Musl.write(descriptor, bytes, count)
    #else
    Darwin.write(descriptor, bytes, count)
    #endif
}

public struct LogSinkError: Error, CustomStringConvertible {
    public let description: String
}

/// Writes each log event as one line to a ``LogSink``, in `format`: the text lines a person reads (the default) or
/// JSON lines for a log pipeline (`LogLine`). The handler's metadata, its provider's and the event's are merged,
/// the later winning.
public struct ServerLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: ServerConfiguration.Observability.LogFormat
    let sink: LogSink

    public init(
        label: String, format: ServerConfiguration.Observability.LogFormat, sink: LogSink = .standardError,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.format = format
        self.sink = sink
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit = event.metadata { all.merge(explicit) { _, new in new } }
        let message = event.message.description
        switch format {
        case .json:
            sink.write(LogLine.json(time: Date(), level: event.level, label: label, message: message, source: event.source, metadata: all))
        case .text:
            sink.write(Array(LogLine.text(time: Date(), level: event.level, label: label, message: message, metadata: all).utf8))
        }
    }
}
