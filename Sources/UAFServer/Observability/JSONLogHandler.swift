#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Logging
import NIOConcurrencyHelpers
import WireJSON

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

/// Writes each log event as one JSON object on one line (`observability.logFormat` `json`), for a log pipeline:
/// `time` (RFC 3339, UTC, milliseconds), `level`, `label`, `message`, `source`, and each metadata key as a member of
/// its own. A metadata key that would replace one of those is written as `metadata.<key>`. Members are in byte order
/// of their names; strings are escaped as JSON requires, so a username or path with quotes, newlines or control
/// characters cannot break a line or forge a member.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let sink: LogSink

    public init(label: String, sink: LogSink = .standardError, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label; self.sink = sink; self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    static let reserved: Set<String> = ["time", "level", "label", "message", "source"]

    public func log(event: LogEvent) {
        sink.write(Self.line(time: Date(), level: event.level, label: label, message: event.message.description, source: event.source,
                             metadata: merged(event.metadata)))
    }

    private func merged(_ explicit: Logger.Metadata?) -> Logger.Metadata {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let explicit { all.merge(explicit) { _, new in new } }
        return all
    }

    /// One line's bytes (no newline).
    static func line(time: Date, level: Logger.Level, label: String, message: String, source: String, metadata: Logger.Metadata) -> [UInt8] {
        var object: [String: Value] = [
            "time": .string(AuditEvent.timestamp(time)), "level": .string(level.rawValue), "label": .string(label),
            "message": .string(message), "source": .string(source),
        ]
        for (key, value) in metadata { object[reserved.contains(key) ? "metadata.\(key)" : key] = Value(value) }
        // Encoding strings, arrays and objects of strings cannot fail; an empty object is the fallback regardless.
        return (try? WireJSONEncoder().encode(object)) ?? Array("{}".utf8)
    }

    /// A metadata value as JSON: strings, arrays and objects as they are.
    enum Value: Encodable {
        case string(String)
        case array([Value])
        case object([String: Value])

        init(_ value: Logger.Metadata.Value) {
            switch value {
            case .string(let text): self = .string(text)
            case .stringConvertible(let convertible): self = .string(convertible.description)
            case .array(let values): self = .array(values.map(Value.init))
            case .dictionary(let members): self = .object(members.mapValues(Value.init))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let text): try container.encode(text)
            case .array(let values): try container.encode(values)
            case .object(let members): try container.encode(members)
            }
        }
    }
}
