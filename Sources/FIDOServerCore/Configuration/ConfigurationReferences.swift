import Foundation

/// Secrets kept out of the configuration file: a string value may hold `${env:NAME}` (the environment variable
/// `NAME`) or `${file:PATH}` (the file's text without its final line break; a relative path is the configuration
/// file's directory's), alone or inside a longer value (`postgres://mauth:${env:PGPASSWORD}@db/mauth`). `$${`
/// writes a literal `${`. Every reference is resolved before the settings are read, so any setting can take one;
/// comments (members whose name begins with `_`) are left as written.
///
/// Why: a configuration file is copied, versioned and shown in support tickets; a password in it travels with it.
/// The resolved value is never logged or put in an error: an error names the reference and where it is (line and
/// column), never what it resolved to. Every unresolvable reference is reported at once.
enum ConfigurationReferences {
    /// A file a `${file:…}` reference reads is at most this long: a secret, not a data set.
    static let maximumFileBytes = 64 * 1024

    /// `data` (a configuration file that is valid JSON) with every reference in a string value replaced by its value,
    /// JSON-escaped. Member names, and the values of members whose name begins with `_` (comments, which may show a
    /// reference as an example), are left as they are. Throws ``ServerConfiguration/ConfigurationError/invalid(_:)``
    /// listing every reference that cannot be resolved.
    static func resolve(_ data: Data, file: String, environment: [String: String], directory: String) throws -> Data {
        let bytes = Array(data)
        guard bytes.contains(UInt8(ascii: "$")) else { return data }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var problems: [String] = []
        // Per open object or array: whether it is inside a comment, and (objects) whether a member name comes next.
        var frames: [(isObject: Bool, isComment: Bool)] = []
        var expectName = false
        var commentMember = false
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                var end = index + 1
                while bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
                let inComment = frames.last?.isComment ?? false
                if expectName {
                    commentMember = bytes[index + 1] == UInt8(ascii: "_")
                    output += bytes[index...end]
                } else if inComment || commentMember {
                    output += bytes[index...end]
                } else {
                    output.append(byte)
                    output += resolved(bytes, from: index + 1, to: end, environment: environment, directory: directory, problems: &problems)
                    output.append(byte)
                }
                index = end + 1
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let inComment = (frames.last?.isComment ?? false) || (frames.last?.isObject == true && commentMember)
                frames.append((byte == UInt8(ascii: "{"), inComment))
                expectName = byte == UInt8(ascii: "{")
                commentMember = false
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                frames.removeLast()
                expectName = false
                commentMember = false
            case UInt8(ascii: ":"):
                expectName = false
            case UInt8(ascii: ","):
                expectName = frames.last?.isObject ?? false
                commentMember = false
            default: break
            }
            output.append(byte)
            index += 1
        }
        guard problems.isEmpty else {
            throw ServerConfiguration.ConfigurationError.invalid("\(file): \(problems.joined(separator: "; "))")
        }
        return Data(output)
    }

    /// The content of the string literal `bytes[from..<to]` with its references resolved.
    private static func resolved(
        _ bytes: [UInt8], from: Int, to end: Int, environment: [String: String], directory: String, problems: inout [String]
    ) -> [UInt8] {
        var output: [UInt8] = []
        var index = from
        let dollar = UInt8(ascii: "$")
        let open = UInt8(ascii: "{")
        while index < end {
            let byte = bytes[index]
            // `$${` is a literal `${`.
            if byte == dollar, index + 2 < end, bytes[index + 1] == dollar, bytes[index + 2] == open {
                output += [dollar, open]
                index += 3
                continue
            }
            guard byte == dollar, index + 1 < end, bytes[index + 1] == open else {
                output.append(byte)
                index += 1
                continue
            }
            guard let close = bytes[(index + 2)..<end].firstIndex(of: UInt8(ascii: "}")) else {
                problems.append("\(ConfigurationFileDecoding.position(index, in: bytes)): an unclosed ${ (write $${ for a literal one)")
                output += bytes[index..<end]
                return output
            }
            let reference = String(decoding: bytes[(index + 2)..<close], as: UTF8.self)
            switch value(of: reference, environment: environment, directory: directory) {
            case .success(let value): output += escaped(value)
            case .failure(let problem): problems.append("\(ConfigurationFileDecoding.position(index, in: bytes)): ${\(reference)} \(problem)")
            }
            index = close + 1
        }
        return output
    }

    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    /// The value a reference (between `${` and `}`) names.
    static func value(of reference: String, environment: [String: String], directory: String) -> Result<String, Problem> {
        if reference.hasPrefix("env:") {
            let name = String(reference.dropFirst(4))
            guard isVariableName(name) else { return .failure(Problem(description: "is not a variable name (letters, digits and _)")) }
            guard let value = environment[name] else { return .failure(Problem(description: "is not set")) }
            return .success(value)
        }
        if reference.hasPrefix("file:") {
            let path = String(reference.dropFirst(5))
            guard !path.isEmpty else { return .failure(Problem(description: "names no file")) }
            let resolved = path.hasPrefix("/") ? path : URL(fileURLWithPath: directory).appendingPathComponent(path).path
            guard let handle = FileHandle(forReadingAtPath: resolved) else { return .failure(Problem(description: "cannot be read")) }
            defer { try? handle.close() }
            guard let contents = try? handle.read(upToCount: maximumFileBytes + 1) ?? Data() else {
                return .failure(Problem(description: "cannot be read"))
            }
            guard contents.count <= maximumFileBytes else { return .failure(Problem(description: "is longer than \(maximumFileBytes) bytes")) }
            guard var text = String(data: contents, encoding: .utf8) else { return .failure(Problem(description: "is not UTF-8 text")) }
            // The line break an editor or `echo` ends a file with is not part of the secret.
            // ("\r\n" is one Character, so one removal takes either ending.)
            if text.hasSuffix("\r\n") || text.hasSuffix("\n") { text.removeLast() }
            return .success(text)
        }
        return .failure(Problem(description: "is neither env:NAME nor file:PATH (write $${ for a literal ${)"))
    }

    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
    }

    /// `value` as the inside of a JSON string literal.
    static func escaped(_ value: String) -> [UInt8] {
        var result: [UInt8] = []
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": result += Array("\\\"".utf8)
            case "\\": result += Array("\\\\".utf8)
            case "\n": result += Array("\\n".utf8)
            case "\r": result += Array("\\r".utf8)
            case "\t": result += Array("\\t".utf8)
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += Array(("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
            default: result += Array(String(scalar).utf8)
            }
        }
        return result
    }
}
