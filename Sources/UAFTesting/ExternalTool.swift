import Foundation

/// Runs an independent program (a JOSE library in Python, `zbarimg`, …) for interoperability tests.
///
/// A test that needs one calls ``require(_:probe:)``: when the tool is missing it is skipped on a developer machine,
/// but `.ci/run` sets `MAUTH_REQUIRE_EXTERNAL_TOOLS=1` after installing the tools, and then a missing tool fails the
/// test instead, so CI can never pass by skipping the independent check.
public enum ExternalTool {
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    public enum Availability: Sendable, Equatable {
        case available
        /// Missing on this machine and not required: the caller skips.
        case skipped(String)
    }

    /// A required tool is missing, or it failed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Runs `arguments` through `/usr/bin/env` (so the PATH decides) and collects its output.
    public static func run(_ arguments: [String], stdin: [UInt8]? = nil) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin)) }
        try input.fileHandleForWriting.close()
        // Read before waiting, so a large output cannot fill the pipe and block the child.
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                      stderr: String(decoding: stderrData, as: UTF8.self))
    }

    /// Whether the tool answers `probe` with exit status 0; throws ``Failure`` when it does not and CI requires it.
    public static func require(_ name: String, probe: [String]) throws -> Availability {
        let works = (try? run(probe).status) == 0
        if works { return .available }
        if ProcessInfo.processInfo.environment["MAUTH_REQUIRE_EXTERNAL_TOOLS"] == "1" {
            throw Failure("\(name) is required (MAUTH_REQUIRE_EXTERNAL_TOOLS=1) but `\(probe.joined(separator: " "))` failed")
        }
        return .skipped("\(name) is not installed here; .ci/run installs it (see CONTRIBUTING.md)")
    }

    /// The repository's root, from a test file's `#filePath` (`<root>/Tests/<Target>/<File>.swift`).
    public static func repositoryRoot(fromTestFile path: String) -> URL {
        URL(fileURLWithPath: path).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
}

/// Reads QR codes with zbarimg (Debian's zbar-tools), as a phone's camera would: the one place the tests and the demo
/// call the independent decoder.
public enum QRCodeReader {
    public static let probe = ["zbarimg", "--version"]
    /// zbarimg's options: the payload only, as bytes, of QR codes only. zbarimg otherwise looks for every kind of
    /// barcode, and can find a linear one (an Interleaved 2 of 5 number) in a QR code's modules, which it prints
    /// right after the QR payload. `Tests/Browser/demo_site_test.py` passes the same options.
    public static let arguments = ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", "-Sqrcode.binary"]
    public static var isInstalled: Bool { (try? ExternalTool.run(probe).status) == 0 }

    /// The text of the QR code in `png`. `--raw` prints the payload only; binary mode keeps zbar from guessing a
    /// text encoding. Only QR codes are looked for (``arguments``).
    public static func read(png: [UInt8]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).png")
        try Data(png).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let output = try ExternalTool.run(["zbarimg"] + arguments + [file.path])
        guard output.status == 0 else { throw ExternalTool.Failure("zbarimg could not decode the QR code: \(output.stderr)") }
        return output.stdout.hasSuffix("\n") ? String(output.stdout.dropLast()) : output.stdout
    }
}
