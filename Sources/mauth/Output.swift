#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a line to standard output at once (unbuffered), so an operator or a log collector reading a pipe sees
/// each line when it happens, not when the process exits.
func say(_ line: String) { OutputLine.emit(line, to: STDOUT_FILENO) }

/// Whether a person can be asked: standard input is a terminal (not a pipe, a file or nothing, as in a script or CI).
var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

/// A line on standard error (progress and notes), so standard output carries only the report.
func note(_ line: String) { OutputLine.emit(line, to: STDERR_FILENO) }

/// Rewrites the current line of standard error (a count-down), without a newline unless `text` ends with one.
func noteInline(_ text: String) { OutputLine.emit("\r" + text, to: STDERR_FILENO, newline: false) }

enum OutputLine {
    /// The status a command ends with when its reader went away: what a shell reports for a process that SIGPIPE
    /// ended (128 + 13), the convention of every Unix filter.
    static let closedPipeStatus: Int32 = 141

    /// Writes `line` and a newline with `write(2)`, whole. A closed pipe (`mauth demo | head -1`) ends the process
    /// quietly with ``closedPipeStatus``: nobody reads what it would say. (Foundation's `FileHandle.write` traps on
    /// that error, and SwiftNIO ignores SIGPIPE process-wide, so the write does fail rather than end the process.)
    static func emit(_ line: String, to descriptor: Int32, newline: Bool = true) {
        var bytes = Array((newline ? line + "\n" : line).utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                bytes = bytes.dropFirst(written)
                continue
            }
            if written < 0, errno == EINTR || errno == EAGAIN { continue }
            if written < 0, errno == EPIPE { exit(closedPipeStatus) }
            return  // any other failure: the line is lost, the command goes on
        }
    }
}
