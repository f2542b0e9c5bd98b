import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// Draws the QR codes of the png-qr-code dispatchers and the Auth Cloud enrollments as PNG data URIs.
///
/// A QR code of version 40 takes milliseconds of CPU to draw (eight masks, each scored), and anonymous callers can
/// ask for one on the open `dispatch/authentication`. So drawing never happens on the threads that serve
/// requests: it runs on NIO's blocking thread pool, at most ``Limits/atOnce`` at a time (half the cores by default,
/// so the other half keeps answering logins and health checks); up to ``Limits/waiting`` more wait their turn, and
/// beyond that a request is refused at once with 503 and `Retry-After`, before anything is stored. Data too long
/// for any QR code is the caller's mistake: 400, never 500.
package final class QRRenderer: Sendable {
    package struct Limits: Sendable, Equatable {
        var atOnce: Int
        var waiting: Int
    }

    /// A drawn code: its data URI and its side in pixels.
    package struct Image: Sendable {
        var dataURI: String
        var side: Int
    }

    let moduleSize: Int
    let limits: Limits
    private let pool: NIOThreadPool
    private let state = NIOLockedValueBox(State())

    private struct State {
        var running = 0
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }

    package init(moduleSize: Int, limits: Limits, pool: NIOThreadPool = .singleton) {
        self.moduleSize = moduleSize
        self.limits = limits
        self.pool = pool
    }

    /// How many drawings run or wait right now (for tests).
    var occupancy: (running: Int, waiting: Int) { state.withLockedValue { ($0.running, $0.waiters.count) } }

    func render(_ text: String) async throws -> Image {
        let bytes = Array(text.utf8)
        // Checked before a slot is taken: a code that cannot exist costs nothing to refuse.
        let capacity = QRCode.byteCapacity(version: 40, level: .medium)
        guard bytes.count <= capacity else {
            throw ServiceFailure(.badRequest, "\(bytes.count) bytes do not fit in a QR code (at most \(capacity))")
        }
        try await acquire()
        defer { release() }
        let moduleSize = self.moduleSize
        return try await pool.runIfActive {
            let code = try QRCode(bytes: bytes)
            let png = try PNGImage.encode(code, moduleSize: moduleSize)
            return Image(dataURI: PNGImage.dataURI(png), side: PNGImage.side(of: code, moduleSize: moduleSize))
        }
    }

    /// Takes a slot, waits for one, or refuses (everything decided under one lock, so the bounds are exact).
    private func acquire() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Admission { case run, wait, refuse }
            let admission = state.withLockedValue { state -> Admission in
                if state.running < limits.atOnce {
                    state.running += 1
                    return .run
                }
                guard state.waiters.count < limits.waiting else { return .refuse }
                state.waiters.append(continuation)
                return .wait
            }
            switch admission {
            case .run: continuation.resume()
            case .wait: break
            case .refuse:
                continuation.resume(
                    throwing: Refusal(
                        .serviceUnavailable, "busy", "Too many QR codes are being drawn; retry in a second.",
                        retryAfterSeconds: 1))
            }
        }
    }

    /// Hands the slot to the longest waiter, or frees it.
    private func release() {
        let next = state.withLockedValue { state -> CheckedContinuation<Void, any Error>? in
            if state.waiters.isEmpty {
                state.running -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    /// Half the cores, at least one.
    package static var defaultAtOnce: Int { max(1, System.coreCount / 2) }
}
