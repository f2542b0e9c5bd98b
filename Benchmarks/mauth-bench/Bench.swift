import Crypto
import Foundation
import SecureStorage
import UAF

/// `swift run -c release mauth-bench [storage|verify|webauthn|client|messages|all]`
///
/// Medians over many repetitions, measured with the monotonic clock, one operation at a time (one core).
@main
struct Bench {
    static func main() async throws {
        let which = CommandLine.arguments.dropFirst().first ?? "all"
        #if DEBUG
        print("warning: debug build; run with `swift run -c release mauth-bench` for meaningful figures")
        #endif
        if which == "storage" || which == "all" { try await StorageBench.run() }
        if which == "verify" || which == "all" { try await VerificationBench.run() }
        if which == "webauthn" || which == "all" { try await WebAuthnBench.run() }
        if which == "client" || which == "all" { try await ClientBench.run() }
        if which == "messages" || which == "all" { try await MessageBench.run() }
        if which == "profile" { try await VerificationProfile.run() }
    }
}

/// Timing helpers.
enum Measure {
    static func nanoseconds(_ body: () async throws -> Void) async rethrows -> Double {
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        let d = clock.now - start
        return Double(d.components.seconds) * 1e9 + Double(d.components.attoseconds) / 1e9
    }

    static func median(_ samples: [Double]) -> Double {
        let sorted = samples.sorted()
        return sorted[sorted.count / 2]
    }

    static func format(_ ns: Double) -> String {
        if ns >= 1e6 { return String(format: "%.3f ms", ns / 1e6) }
        if ns >= 1e3 { return String(format: "%.2f µs", ns / 1e3) }
        return String(format: "%.0f ns", ns)
    }

    static func report(_ name: String, _ ns: Double, target: Double? = nil) {
        let verdict = target.map { ns <= $0 ? "  (target ≤ \(format($0)): met)" : "  (target ≤ \(format($0)): MISSED)" } ?? ""
        print("  \(name.padding(toLength: 46, withPad: " ", startingAt: 0)) \(format(ns))\(verdict)")
    }
}
