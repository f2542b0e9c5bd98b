// swift-tools-version:6.1
import Foundation
import PackageDescription

/// The project's package, by the identity SwiftPM gives a local path: its folder's name (`main`, `mauth`: whatever the
/// clone is called).
let project = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

// The benchmarks, a package of their own so that the product's manifest carries no benchmark dependency. They
// measure what this two-core machine measures reliably, allocations, and fail `.ci/run` when a change makes one
// allocate more than its committed threshold (`Thresholds/`). Run: `swift package benchmark` in this folder.
let package = Package(
    name: "mauth-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        // The malloc interposer counts every allocation on Swift 6.3; the runtime interposer (a default trait) is
        // left out: its package is not one this project may depend on.
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "MauthBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Primitives", package: project),
                .product(name: "UAF", package: project),
                .product(name: "WebAuthn", package: project),
                .product(name: "NevisProtocol", package: project),
                .product(name: "SecureStorage", package: project),
                .product(name: "FIDOSimulation", package: project),
                .product(name: "FIDOServer", package: project),
                .product(name: "MobileAuthentication", package: project),
                .product(name: "MobileAuthenticationSimulator", package: project),
            ],
            path: "Benchmarks/MauthBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
