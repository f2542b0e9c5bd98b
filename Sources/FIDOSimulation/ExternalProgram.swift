import Foundation

/// Runs a program outside the process and collects what it printed: how the virtual device's camera reads a QR image
/// (``QRCodeReader``), and how the tests reach independent implementations.
public enum ExternalProgram {
    public struct Output: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// A program is missing, or it failed.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// Runs `arguments` through `/usr/bin/env` (so the PATH decides) and collects its output.
    public static func run(_ arguments: [String], stdin: [UInt8]? = nil) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let input = Pipe()
        process.standardInput = input
        try process.run()
        // Input is written, and standard error read, on their own threads while standard output is read here: a child
        // that answers line by line fills its output pipe long before it has read a large input, and would block
        // (and us with it) if we wrote all of the input first.
        let writer = input.fileHandleForWriting
        let wrote = DispatchGroup()
        DispatchQueue.global().async(group: wrote) {
            if let stdin { writer.write(Data(stdin)) }
            try? writer.close()
        }
        let errors = ErrorOutput()
        let errorReader = err.fileHandleForReading
        DispatchQueue.global().async(group: wrote) { errors.data = errorReader.readDataToEndOfFile() }
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        wrote.wait()
        let stderrData = errors.data
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
            stderr: String(decoding: stderrData, as: UTF8.self))
    }
}

/// Standard error as read on its own thread (read only after that thread is done).
private final class ErrorOutput: @unchecked Sendable {
    var data = Data()
}
