import Foundation
import Primitives

/// What `mauth --version` prints: the product version first (what scripts compare), then the build: the commit when
/// the binary sits in a git work tree (a `swift build` in a clone; an installed copy knows none), the compiler, the
/// platform and the configuration, e.g. `0.8.0 (commit 0cf3483, Swift 6.3, Linux x86_64, debug build)`.
enum BuildDescription {
    static var text: String {
        let parts = [commit.map { "commit \($0)" }, "Swift \(swiftVersion)", platform, configuration].compactMap { $0 }
        return "\(ProductVersion.text) (\(parts.joined(separator: ", ")))"
    }

    /// The compiler that built this binary, to the minor version.
    static var swiftVersion: String {
        #if compiler(>=6.5)
        "6.5 or later"
        #elseif compiler(>=6.4)
        "6.4"
        #elseif compiler(>=6.3)
        "6.3"
        #elseif compiler(>=6.2)
        "6.2"
        #elseif compiler(>=6.1)
        "6.1"
        #else
        "6.0"
        #endif
    }

    static var platform: String {
        #if os(Linux)
        let system = "Linux"
        #elseif os(macOS)
        let system = "macOS"
        #else
        let system = "unknown system"
        #endif
        #if arch(x86_64)
        return system + " x86_64"
        #elseif arch(arm64)
        return system + " arm64"
        #else
        return system
        #endif
    }

    static var configuration: String {
        #if DEBUG
        "debug build"
        #else
        "release build"
        #endif
    }

    /// The commit checked out in the work tree the binary was built in (`.build/…/mauth` of a clone), shortened to 7
    /// hex digits; nil for a binary outside one. Read from `.git` itself (HEAD, then the branch's ref or packed-refs):
    /// no process is started.
    static var commit: String? {
        guard let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() else { return nil }
        var folder = executable.deletingLastPathComponent()
        for _ in 0..<6 {
            let git = folder.appendingPathComponent(".git")
            if FileManager.default.fileExists(atPath: git.path) { return commit(in: git) }
            folder = folder.deletingLastPathComponent()
        }
        return nil
    }

    static func commit(in git: URL) -> String? {
        guard
            let head = try? String(contentsOf: git.appendingPathComponent("HEAD"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        else { return nil }
        guard head.hasPrefix("ref: ") else { return short(head) }
        let ref = String(head.dropFirst(5))
        if let loose = try? String(contentsOf: git.appendingPathComponent(ref), encoding: .utf8) { return short(loose) }
        let packed = (try? String(contentsOf: git.appendingPathComponent("packed-refs"), encoding: .utf8)) ?? ""
        for line in packed.split(separator: "\n") where line.hasSuffix(" " + ref) { return short(String(line.prefix(40))) }
        return nil
    }

    /// The first 7 of 40 hex digits; nil for anything else.
    private static func short(_ text: String) -> String? {
        let hash = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard hash.count == 40, hash.allSatisfy(\.isHexDigit) else { return nil }
        return String(hash.prefix(7))
    }
}
