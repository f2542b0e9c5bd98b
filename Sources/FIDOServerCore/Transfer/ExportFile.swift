import Crypto
import Foundation
import Primitives
import WireJSON

/// The export format (`mauth admin export`, read by `mauth admin import`), version 1: JSON Lines, UTF-8, every line
/// ending in a line feed.
///
/// - The first line is the header: `{"format":"mauth-export","serverKeys":false,"version":1}`.
/// - Then one line per record: a JSON object whose `kind` names a ``PortableKind`` and whose other members are its
///   fields (an optional field without a value is left out).
/// - The last line is the trailer: `{"counts":{kind: n, …},"end":"mauth-export","records":n,"sha256":"…"}`, where
///   `sha256` is the lower-case hex SHA-256 of every byte before the trailer line. A file cut short, or changed
///   after it was written, is refused before anything is written.
///
/// What the server writes is canonical: members sorted by their bytes, no spaces, records by kind in
/// ``PortableKind/all``'s order and by key in byte order. So a database exported, imported elsewhere and exported
/// again gives the same bytes. A reader takes members in any order and records in any order.
package enum ExportFormat {
    package static let name = "mauth-export"
    package static let version = 1
    /// The longest line a reader takes (a record is a few KiB at most; an App Attest receipt is the largest field).
    package static let maximumLineBytes = 256 * 1024

    /// A checksum as the trailer writes it: lower-case hex.
    static func hex(_ digest: SHA256.Digest) -> String { digest.map { String(format: "%02x", $0) }.joined() }
}

/// Why an export file was refused, with the line it was found on (nil for the file as a whole).
package struct ExportFileError: Error, CustomStringConvertible, Equatable {
    package let line: Int?
    package let message: String

    init(line: Int?, _ message: String) {
        self.line = line
        self.message = message
    }

    package var description: String { line.map { "line \($0): \(message)" } ?? message }
}

/// Writes an export file's lines to `sink`, and its trailer on ``finish()``. Unchecked `Sendable`: its state is
/// touched by one writer at a time (``DatabaseTransfer/export(serverKeys:to:)`` holds it in a lock while rows arrive).
package final class ExportWriter: @unchecked Sendable {
    private var hasher = SHA256()
    private var counts: [String: Int] = [:]
    private let sink: ([UInt8]) throws -> Void
    private let encoder = WireJSONEncoder()

    /// Writes the header.
    package init(serverKeys: Bool, sink: @escaping ([UInt8]) throws -> Void) throws {
        self.sink = sink
        try line(
            .object(["format": .string(ExportFormat.name), "version": .number(Double(ExportFormat.version)), "serverKeys": .bool(serverKeys)]))
    }

    /// Writes one record of `kind` from its columns' values.
    package func write(_ kind: PortableKind, _ values: [String: ColumnValue]) throws {
        try line(.object(Self.object(kind, values)))
        counts[kind.name, default: 0] += 1
    }

    /// The record's line, without its line feed: what ``write(_:_:)`` writes.
    package static func line(_ kind: PortableKind, _ values: [String: ColumnValue]) throws -> [UInt8] {
        try WireJSONEncoder().encode(JSONValue.object(object(kind, values)))
    }

    /// Writes the trailer; returns the records' counts by kind and the checksum.
    @discardableResult
    package func finish() throws -> (counts: [String: Int], sha256: String) {
        let digest = ExportFormat.hex(hasher.finalize())
        let trailer: JSONValue = .object([
            "end": .string(ExportFormat.name), "sha256": .string(digest),
            "records": .number(Double(counts.values.reduce(0, +))),
            "counts": .object(counts.mapValues { .number(Double($0)) }),
        ])
        var bytes = try encoder.encode(trailer)
        bytes.append(0x0A)
        try sink(bytes)
        return (counts, digest)
    }

    private func line(_ value: JSONValue) throws {
        var bytes = try encoder.encode(value)
        bytes.append(0x0A)
        hasher.update(data: bytes)
        try sink(bytes)
    }

    private static func object(_ kind: PortableKind, _ values: [String: ColumnValue]) -> [String: JSONValue] {
        var object: [String: JSONValue] = ["kind": .string(kind.name)]
        for field in kind.fields {
            guard let value = values[field.column], value != .null else { continue }
            object[field.name] = PortableValue.json(value, field.shape)
        }
        return object
    }
}

/// A record read from an export file: its kind, its columns' values, and its line.
package struct ExportRecord: Sendable {
    package let kind: PortableKind
    package let values: [String: ColumnValue]
    package let line: Int
}

/// Reads an export file, checking every line against the format; see ``ExportFormat``.
package enum ExportReader {
    /// What the header and trailer said.
    package struct Summary: Sendable, Equatable {
        package var serverKeys: Bool
        package var counts: [String: Int]
        package var sha256: String
    }

    /// Reads the file at `path`, handing each record to `body` in file order, and checks the trailer at the end: so
    /// `body` must keep what it is handed undone until this returns (the importer reads a file twice: once to check
    /// all of it, once to write it inside a transaction that a late refusal rolls back).
    @discardableResult
    package static func read(path: String, _ body: (ExportRecord) async throws -> Void) async throws -> Summary {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ExportFileError(line: nil, "cannot open \(path): \(SystemErrorText.reason(errno: errno))")
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var lineNumber = 0
        var serverKeys: Bool?
        var counts: [String: Int] = [:]
        var summary: Summary?
        try await forEachLine(handle) { line in
            lineNumber += 1
            if summary != nil { throw ExportFileError(line: lineNumber, "a line after the trailer") }
            let value: JSONValue
            do { value = try WireJSONDecoder().decode(JSONValue.self, from: line) } catch {
                throw ExportFileError(line: lineNumber, "not a JSON value: \(error)")
            }
            guard case .object(let object) = value else { throw ExportFileError(line: lineNumber, "not a JSON object") }
            if serverKeys == nil {
                serverKeys = try header(object, line: lineNumber)
            } else if object["end"] != nil {
                let digest = ExportFormat.hex(hasher.finalize())
                summary = try trailer(object, line: lineNumber, counts: counts, digest: digest, serverKeys: serverKeys ?? false)
                return
            } else {
                let record = try Self.record(object, line: lineNumber, serverKeys: serverKeys ?? false)
                counts[record.kind.name, default: 0] += 1
                try await body(record)
            }
            hasher.update(data: line)
            hasher.update(data: [0x0A])
        }
        guard lineNumber > 0 else { throw ExportFileError(line: nil, "the file is empty") }
        guard let summary else {
            throw ExportFileError(line: nil, "the file ends before its trailer: it was cut short, or is not a whole export")
        }
        return summary
    }

    /// Calls `body` with each line of the file (without its line feed); every line must end with one.
    private static func forEachLine(_ handle: FileHandle, _ body: (ArraySlice<UInt8>) async throws -> Void) async throws {
        var pending: [UInt8] = []
        var lineNumber = 0
        while true {
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch {
                throw ExportFileError(line: nil, "cannot read the file: \(SystemErrorText.reason(error))")
            }
            guard let chunk, !chunk.isEmpty else { break }
            pending.append(contentsOf: chunk)
            var start = 0
            while let end = pending[start...].firstIndex(of: 0x0A) {
                lineNumber += 1
                try await body(pending[start..<end])
                start = end + 1
            }
            pending.removeFirst(start)
            guard pending.count <= ExportFormat.maximumLineBytes else {
                throw ExportFileError(line: lineNumber + 1, "longer than \(ExportFormat.maximumLineBytes) bytes")
            }
        }
        guard pending.isEmpty else { throw ExportFileError(line: lineNumber + 1, "the last line has no line feed: the file was cut short") }
    }

    private static func header(_ object: [String: JSONValue], line: Int) throws -> Bool {
        guard object["format"] == .string(ExportFormat.name) else {
            throw ExportFileError(line: line, "not a mauth export: the first line must be its header, format \"\(ExportFormat.name)\"")
        }
        guard object["version"] == .number(Double(ExportFormat.version)) else {
            throw ExportFileError(line: line, "format version \(describe(object["version"])) is not one this mauth reads (\(ExportFormat.version))")
        }
        guard case .bool(let serverKeys) = object["serverKeys"] else {
            throw ExportFileError(line: line, "the header's serverKeys must be true or false")
        }
        if let unknown = Set(object.keys).subtracting(["format", "version", "serverKeys"]).sorted().first {
            throw ExportFileError(line: line, "the header has an unknown member \(UntrustedText.quoted(unknown))")
        }
        return serverKeys
    }

    private static func trailer(
        _ object: [String: JSONValue], line: Int, counts: [String: Int], digest: String, serverKeys: Bool
    ) throws -> Summary {
        guard object["end"] == .string(ExportFormat.name), case .string(let stated) = object["sha256"],
            case .object(let statedCounts) = object["counts"], case .number(let records) = object["records"]
        else { throw ExportFileError(line: line, "the trailer must have end, sha256, counts and records") }
        if let unknown = Set(object.keys).subtracting(["end", "sha256", "counts", "records"]).sorted().first {
            throw ExportFileError(line: line, "the trailer has an unknown member \(UntrustedText.quoted(unknown))")
        }
        // The checksum first: a changed file is refused as changed, whatever else its changes broke.
        guard stated == digest else {
            throw ExportFileError(line: line, "the checksum does not match the file: it was changed or damaged after it was written")
        }
        let total = counts.values.reduce(0, +)
        guard records == Double(total), statedCounts == counts.mapValues({ .number(Double($0)) }) else {
            throw ExportFileError(line: line, "the trailer's counts do not match the records (\(total) read)")
        }
        return Summary(serverKeys: serverKeys, counts: counts, sha256: digest)
    }

    private static func record(_ object: [String: JSONValue], line: Int, serverKeys: Bool) throws -> ExportRecord {
        guard case .string(let name) = object["kind"] else { throw ExportFileError(line: line, "a record needs a kind") }
        guard let kind = PortableKind.named(name) else {
            throw ExportFileError(
                line: line, "unknown kind \(UntrustedText.quoted(name)) (known: \(PortableKind.all.map(\.name).joined(separator: ", ")))")
        }
        guard serverKeys || !kind.isServerKey else {
            throw ExportFileError(line: line, "a \(name) record in a file whose header says it holds no server keys")
        }
        let names = Set(kind.fields.map(\.name))
        if let unknown = Set(object.keys).subtracting(names).subtracting(["kind"]).sorted().first {
            throw ExportFileError(line: line, "\(name) has no field \(UntrustedText.quoted(unknown))")
        }
        var values: [String: ColumnValue] = [:]
        for field in kind.fields {
            let value = object[field.name] ?? .null
            if value == .null {
                guard field.optional else { throw ExportFileError(line: line, "\(name).\(field.name) is missing") }
                values[field.column] = .null
                continue
            }
            do { values[field.column] = try PortableValue.column(value, field.shape) } catch {
                throw ExportFileError(
                    line: line, "\(name).\(field.name) \((error as? PortableValue.ValueRefusal)?.message ?? String(describing: error))")
            }
        }
        do { try kind.check(PortableRow(values: values)) } catch {
            throw ExportFileError(line: line, "\(name) is not usable: \(error)")
        }
        return ExportRecord(kind: kind, values: values, line: line)
    }

    private static func describe(_ value: JSONValue?) -> String {
        switch value {
        case .number(let number): return number == number.rounded() ? String(Int64(number)) : String(number)
        case .string(let text): return UntrustedText.quoted(text)
        default: return "(none)"
        }
    }
}

/// The conversion of one field's value between the file (JSON) and the column, by its shape.
enum PortableValue {
    struct ValueRefusal: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    static func json(_ value: ColumnValue, _ shape: PortableField.Shape) -> JSONValue {
        switch (shape, value) {
        case (.boolean, .integer(let number)): return .bool(number != 0)
        case (.time, .integer(let millis)): return .string(RFC3339Millis.string(millis))
        case (.list, .text(let text)):
            return .array(text.isEmpty ? [] : text.split(separator: ",", omittingEmptySubsequences: false).map { .string(String($0)) })
        case (_, .integer(let number)): return .number(Double(number))
        case (_, .text(let text)): return .string(text)
        case (_, .null): return .null
        }
    }

    static func column(_ value: JSONValue, _ shape: PortableField.Shape) throws -> ColumnValue {
        switch shape {
        case .text(let maxBytes, let multiline):
            guard case .string(let text) = value else { throw ValueRefusal("must be a string") }
            guard text.utf8.count <= maxBytes else { throw ValueRefusal("must be at most \(maxBytes) UTF-8 bytes") }
            // A name or an id is shown in the operator's lines and pages: control characters would forge them.
            let unsafe = text.unicodeScalars.contains { scalar in
                !(multiline && scalar == "\n") && (scalar.properties.generalCategory == .control || UntrustedText.isUnsafe(scalar))
            }
            guard !unsafe else { throw ValueRefusal("contains control or bidirectional formatting characters") }
            return .text(text)
        case .base64url(let maxBytes):
            guard case .string(let text) = value else { throw ValueRefusal("must be a string") }
            guard let bytes = Base64URL.decodeBytes(text), !bytes.isEmpty, bytes.count <= maxBytes else {
                throw ValueRefusal("must be base64url of 1...\(maxBytes) bytes")
            }
            // One spelling per value, so that a record compares equal to itself however the file wrote it.
            guard Base64URL.encode(bytes) == text else { throw ValueRefusal("must be base64url without padding (RFC 4648 §5)") }
            return .text(text)
        case .integer(let range):
            guard case .number(let number) = value, let integer = Int64(exactly: number), range.contains(integer) else {
                throw ValueRefusal("must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return .integer(integer)
        case .boolean:
            guard case .bool(let flag) = value else { throw ValueRefusal("must be true or false") }
            return .integer(flag ? 1 : 0)
        case .time:
            guard case .string(let text) = value, let millis = RFC3339Millis.millis(text) else {
                throw ValueRefusal("must be a UTC time like 2026-11-28T16:23:15.123Z")
            }
            return .integer(millis)
        case .list(let maxItems):
            guard case .array(let items) = value, items.count <= maxItems else {
                throw ValueRefusal("must be an array of at most \(maxItems) strings")
            }
            var texts: [String] = []
            for item in items {
                guard case .string(let text) = item, (1...32).contains(text.utf8.count),
                    text.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") })
                else { throw ValueRefusal("must hold strings of 1...32 letters, digits and -") }
                texts.append(text)
            }
            return .text(texts.joined(separator: ","))
        case .oneOf(let allowed):
            guard case .string(let text) = value, allowed.contains(text) else {
                throw ValueRefusal("must be one of \(allowed.joined(separator: ", "))")
            }
            return .text(text)
        }
    }
}

/// UTC times with milliseconds, as RFC 3339 writes them (`2026-11-28T16:23:15.123Z`), from and to milliseconds since
/// 1970, for years 1970 to 9999. Reading also takes no fraction or one to three digits of it (a converter's output).
enum RFC3339Millis {
    static let range: ClosedRange<Int64> = 0...253_402_300_799_999

    /// Written as the audit trail writes its times (``AuditEvent/timestamp(_:)``), one formatter for both.
    static func string(_ millis: Int64) -> String {
        AuditEvent.timestamp(Date(epochMillis: min(max(millis, range.lowerBound), range.upperBound)))
    }

    static func millis(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[from..<from + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == UInt8(ascii: $0.1.unicodeScalars.first!) }),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...days(inMonth: month, year: year)).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var fraction = 0
        let rest = bytes[19..<(bytes.count - 1)]
        if !rest.isEmpty {
            guard rest.first == UInt8(ascii: "."), (2...4).contains(rest.count), let digits = number(20, rest.count - 1) else { return nil }
            fraction = digits * [100, 10, 1][rest.count - 2]
        }
        let millis = (Int64(daysFromCivil(year, month, day)) * 86_400 + Int64(hour * 3600 + minute * 60 + second)) * 1000 + Int64(fraction)
        return range.contains(millis) ? millis : nil
    }

    private static func days(inMonth month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's days_from_civil (proleptic Gregorian calendar); AuditEvent.timestamp has its inverse.
    private static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
