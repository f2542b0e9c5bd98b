import ArgumentParser
import FIDOServerCore
import Foundation
import Primitives

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `mauth admin export`: the durable records as a mauth export file (FIDOServer documentation, "Export, import and
/// migration").
struct AdminExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write users, UAF keys, passkeys, dispatch targets, App Attest keys and access keys as a mauth export file (JSON Lines).")
    @OptionGroup var options: DatabaseOptions
    @Option(
        name: .shortAndLong,
        help: "The file to write (default: standard output). It is written beside and renamed when whole, readable by its owner only.")
    var output: String?
    @Flag(
        help:
            "Also export the server's own secrets (token-signing private keys, shared secrets): whoever holds the file can then sign tokens. Keep it as you keep the database."
    )
    var serverKeys = false

    func run() async throws {
        let sink = try ByteSink(path: output)
        do {
            let writer = try ExportWriter(serverKeys: serverKeys, sink: sink.write)
            // Not grouped: the export reads in one read transaction of its own (one moment of the database).
            _ = try await options.withDatabase(groupCommit: false) { database in
                try await DatabaseTransfer(database: database).export(serverKeys: serverKeys, to: writer)
            }
            let (counts, digest) = try writer.finish()
            try sink.finish()
            note("exported \(Self.describe(counts)); sha256 \(digest)")
        } catch {
            sink.abandon()
            throw error
        }
    }

    static func describe(_ counts: [String: Int]) -> String {
        let listed = PortableKind.all.compactMap { kind in counts[kind.name].map { "\($0) \(kind.name)(s)" } }
        return listed.isEmpty ? "no records" : listed.joined(separator: ", ")
    }
}

/// `mauth admin import FILE`: merges an export file into the database, all of it or nothing.
struct AdminImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract:
            "Read a mauth export file into the database: new records are added, records already there are left alone, and any conflict refuses the whole file."
    )
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "The export file, or - for standard input.") var file: String

    func run() async throws {
        var path = file
        var spooled: String?
        if file == "-" {
            // Read twice (checked whole, then written): standard input is kept in a private file meanwhile.
            let spool = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-import-\(UUID().uuidString)").path
            try ByteSink.copyStandardInput(to: spool)
            spooled = spool
            path = spool
        }
        defer { if let spooled { try? FileManager.default.removeItem(atPath: spooled) } }
        let counts = try await options.withDatabase(groupCommit: false) { database in
            let counts = try await DatabaseTransfer(database: database).importFile(path: path)
            let inserted = counts.values.map(\.inserted).reduce(0, +)
            let present = counts.values.map(\.present).reduce(0, +)
            try await options.record(
                Stores(database: database), "admin import", username: nil,
                detail: "imported \(inserted) record(s), \(present) already present, from \(file == "-" ? "standard input" : file)")
            return counts
        }
        for kind in PortableKind.all {
            guard let count = counts[kind.name] else { continue }
            say("\(kind.name): \(count.inserted) imported, \(count.present) already present")
        }
    }
}

/// `mauth admin migrate --from … --to …`: copies one database into another (SQLite into PostgreSQL, typically),
/// resumably, and verifies the copy.
struct AdminMigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Copy every durable record (server keys included) from one database to another, then verify the copy.",
        discussion: """
            Stop the servers on the source first: what they write meanwhile is not copied. An interrupted run is run \
            again as it was: what it copied is found present and skipped. The target may be empty or a partial copy \
            of the same source; any record that differs stops the run with a report.
            """)
    @Option(help: "The source: an SQLite file or a postgres:// URL.") var from: String
    @Option(help: "The target: a postgres:// URL or an SQLite file (made if missing).") var to: String

    func run() async throws {
        guard from != to else { throw ValidationError("--from and --to name the same database") }
        let sourceConfiguration = ServerConfiguration.Database(text: from)
        if case .sqlite(let path) = sourceConfiguration, !FileManager.default.fileExists(atPath: path) {
            throw ValidationError("no database at \(path) (--from)")
        }
        let source = try await StoreDatabase.open(sourceConfiguration, groupCommit: false)
        let target = try await StoreDatabase.open(.init(text: to), groupCommit: false)
        let started = ContinuousClock.now
        do {
            _ = try await DatabaseTransfer.migrate(from: source, to: target) { kind, counts in
                say("\(kind): \(counts.inserted) copied, \(counts.present) already there")
            }
            let copied = ContinuousClock.now - started
            let verified = try await DatabaseTransfer.verify(source: source, target: target)
            let total = verified.values.reduce(0, +)
            say(
                "verified: the target holds the source's \(total) record(s), equal field by field and each read by the server's reader "
                    + "(copy \(Self.seconds(copied)), verification \(Self.seconds(ContinuousClock.now - started - copied)))")
        } catch {
            try? await target.close()
            try? await source.close()
            throw error
        }
        try await target.close()
        try await source.close()
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}

/// Bytes to a file (written beside it, readable by its owner only, renamed when whole) or to standard output,
/// buffered; every failure is thrown with its reason (a full disk must not leave a short file that looks whole).
final class ByteSink: @unchecked Sendable {
    private let descriptor: Int32
    private let path: String?
    private let partial: String?
    private var buffer: [UInt8] = []

    init(path: String?) throws {
        self.path = path
        guard let path else {
            descriptor = STDOUT_FILENO
            partial = nil
            return
        }
        let partial = "\(path).partial-\(getpid())"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ValidationError("cannot write \(partial): \(SystemErrorText.reason(errno: errno))") }
        self.descriptor = descriptor
        self.partial = partial
    }

    func write(_ bytes: [UInt8]) throws {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 20 { try flush() }
    }

    /// Writes what is buffered; for a file, syncs it and gives it its name.
    func finish() throws {
        try flush()
        guard let path, let partial else { return }
        guard fsync(descriptor) == 0 else { throw ValidationError("cannot sync \(partial): \(SystemErrorText.reason(errno: errno))") }
        close(descriptor)
        guard rename(partial, path) == 0 else {
            throw ValidationError("cannot rename \(partial) to \(path): \(SystemErrorText.reason(errno: errno))")
        }
    }

    /// Removes the partial file of a failed export.
    func abandon() {
        guard let partial else { return }
        close(descriptor)
        unlink(partial)
    }

    private func flush() throws {
        var remaining = buffer[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                remaining = remaining.dropFirst(written)
            } else if written < 0, errno == EINTR || errno == EAGAIN {
                continue
            } else {
                throw ValidationError("cannot write the export: \(SystemErrorText.reason(errno: errno))")
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Copies standard input to a new file at `path`, readable by its owner only.
    static func copyStandardInput(to path: String) throws {
        let sink = try ByteSink(path: path)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                sink.abandon()
                throw ValidationError("cannot read standard input: \(SystemErrorText.reason(errno: errno))")
            }
            try sink.write(Array(chunk[0..<count]))
        }
        try sink.finish()
    }
}

/// `write(2)`, named apart from ``ByteSink/write(_:)``.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { write(descriptor, bytes, count) }
