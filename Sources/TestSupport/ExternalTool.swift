import FIDOSimulation
import Foundation

/// The independent programs (a JOSE library in Python, `zbarimg`, …) the interoperability tests check against.
///
/// A test that needs one calls ``require(_:probe:)``: when the tool is missing it is skipped on a developer machine,
/// but `.ci/run` sets `MAUTH_REQUIRE_EXTERNAL_TOOLS=1` after installing the tools, and then a missing tool fails the
/// test instead, so CI can never pass by skipping the independent check. Tests run the tool with
/// `ExternalProgram.run`.
public enum ExternalTool {
    public enum Availability: Sendable, Equatable {
        case available
        /// Missing on this machine and not required: the caller skips.
        case skipped(String)
    }

    /// Whether the tool answers `probe` with exit status 0; throws `ExternalProgram.Failure` when it does not and CI
    /// requires it.
    public static func require(_ name: String, probe: [String]) throws -> Availability {
        let works = (try? ExternalProgram.run(probe).status) == 0
        if works { return .available }
        if ProcessInfo.processInfo.environment["MAUTH_REQUIRE_EXTERNAL_TOOLS"] == "1" {
            throw ExternalProgram.Failure("\(name) is required (MAUTH_REQUIRE_EXTERNAL_TOOLS=1) but `\(probe.joined(separator: " "))` failed")
        }
        return .skipped("\(name) is not installed here; .ci/run installs it (see CONTRIBUTING.md)")
    }

    /// The repository's root, from a test file's `#filePath` (`<root>/Tests/<Target>/<File>.swift`).
    public static func repositoryRoot(fromTestFile path: String) -> URL {
        URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}
