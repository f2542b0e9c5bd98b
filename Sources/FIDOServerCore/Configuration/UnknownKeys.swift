import Foundation

/// A configuration file key the server does not know. A misspelt key (`developmentMod`, `prot`) would otherwise be
/// ignored without a word and its setting silently left at the default, so the server refuses to start instead.
/// Keys that begin with `_` are the escape hatch: they are ignored (comments, notes, settings of other tools).
public struct UnknownConfigurationKey: Error, CustomStringConvertible, Equatable {
    /// The key's path in the file, e.g. `authorization.developmentMod`.
    public let path: String
    /// A known key of the same object within two edits, if there is one.
    public let suggestion: String?
    public var description: String {
        "unknown key \(path)\(suggestion.map { " (did you mean \($0)?)" } ?? ""); keys that begin with _ are ignored"
    }
}

/// Any key of a JSON object, to list all of them.
private struct AnyKey: CodingKey {
    let stringValue: String
    init(stringValue: String) { self.stringValue = stringValue }
    var intValue: Int? { nil }
    init?(intValue: Int) { nil }
}

extension Decoder {
    /// Refuses a key of the object being decoded that `Keys` does not list (``UnknownConfigurationKey``).
    func refuseUnknownKeys<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws {
        let known = Keys.allCases.map(\.stringValue)
        for key in try container(keyedBy: AnyKey.self).allKeys.sorted(by: { $0.stringValue < $1.stringValue })
        where !key.stringValue.hasPrefix("_") && !known.contains(key.stringValue) {
            let path = (codingPath.map(\.stringValue) + [key.stringValue]).joined(separator: ".")
            let nearest = known.map { ($0, Self.editDistance($0.lowercased(), key.stringValue.lowercased())) }.min { $0.1 < $1.1 }
            throw UnknownConfigurationKey(path: path, suggestion: nearest.flatMap { $0.1 <= 2 ? $0.0 : nil })
        }
    }

    /// Levenshtein distance (insertions, deletions, substitutions), for the suggestion.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        // previous[j]: the distance between the first i - 1 characters of a and the first j of b.
        var previous = Array(0...b.count)
        for (i, character) in a.enumerated() {
            var current = [i + 1]
            for j in b.indices {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (character == b[j] ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
