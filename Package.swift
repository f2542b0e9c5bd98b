// swift-tools-version:6.1
import PackageDescription

/// A product of swift-nio by name (most targets take several).
func nio(_ name: String) -> Target.Dependency { .product(name: name, package: "swift-nio") }

let package = Package(
    name: "mauth",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "Primitives", targets: ["Primitives"]),
        .library(name: "CBOR", targets: ["CBOR"]),
        .library(name: "FIDOAttestation", targets: ["FIDOAttestation"]),
        .library(name: "WebAuthn", targets: ["WebAuthn"]),
        .library(name: "AppAttestation", targets: ["AppAttestation"]),
        .library(name: "UAF", targets: ["UAF"]),
        .library(name: "JOSE", targets: ["JOSE"]),
        .library(name: "NevisProtocol", targets: ["NevisProtocol"]),
        .library(name: "SecureStorage", targets: ["SecureStorage"]),
        .library(name: "MobileAuthentication", targets: ["MobileAuthentication"]),
        .library(name: "MobileAuthenticationSimulator", targets: ["MobileAuthenticationSimulator"]),
        .library(name: "FIDOServer", targets: ["FIDOServer"]),
        .library(name: "FIDOSimulation", targets: ["FIDOSimulation"]),
        .executable(name: "mauth", targets: ["mauth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "4.5.2"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        // Hummingbird's HTTP vocabulary, which the HTTP layer names directly (HTTPTypes, NIOHTTPTypes).
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // Pinned to a minor version: EmbeddedSQLite calls the SQLite that sqlite-nio vendors (target VaporCSQLite, not a
        // product) by its `sqlite_nio_` symbols and declares one of them by hand; EmbeddedSQLiteTests fails if it goes.
        .package(url: "https://github.com/vapor/sqlite-nio.git", .upToNextMinor(from: "1.13.2")),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/vapor/sql-kit.git", from: "3.36.0"),
        .package(url: "https://github.com/vapor/sqlite-kit.git", from: "4.5.2"),
        .package(url: "https://github.com/vapor/postgres-kit.git", from: "2.17.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Traces: the standard API the server is instrumented with, and swift-otel's OTLP/HTTP exporter, which only
        // `mauth` links (the OTLP/gRPC trait would bring gRPC's packages for nothing).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // DocC catalogues build with `swift package generate-documentation --target <module>`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        // Byte-level helpers every module needs (base64url, secure random); knows no protocol.
        .target(name: "Primitives"),
        // CBOR (RFC 8949) as WebAuthn and CTAP2 use it: definite lengths, canonical or well-formed, depth and size
        // limits, typed errors. No CBOR package is on our list; cbor2 (Python) checks it in CBORTests. Knows no protocol.
        .target(name: "CBOR"),
        // What UAF, WebAuthn and app attestation share, so each has one home: the Metadata Service's statuses, status
        // reports and FIDO2 entries, Android's key attestation extension and Apple's nonce extension. Knows no
        // protocol's messages.
        .target(
            name: "FIDOAttestation",
            dependencies: [.product(name: "SwiftASN1", package: "swift-asn1")]
        ),
        // The WebAuthn protocol core beside `UAF`, which it does not import: COSE keys, authenticator and client data,
        // both ceremonies, every attestation statement format and the relying party's attestation policy. Knows no
        // HTTP and no database.
        .target(
            name: "WebAuthn",
            dependencies: [
                "CBOR", "FIDOAttestation", "Primitives", "WireJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // What proves an app genuine to its server: Apple's App Attest (attestation and assertions, verified as Apple
        // documents them, Apple's root shipped) and Google's Play Integrity verdicts (local decryption). Knows neither
        // UAF nor HTTP.
        .target(
            name: "AppAttestation",
            dependencies: [
                "CBOR", "FIDOAttestation", "JOSE", "Primitives",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // The JSON codec of UAF messages and bodies: Foundation's bytes, faster; a stricter reader. Knows no protocol.
        .target(name: "WireJSON"),
        .target(
            name: "UAF",
            dependencies: [
                "FIDOAttestation", "Primitives", "WireJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .target(
            name: "JOSE",
            dependencies: [
                "Primitives",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // What is Nevis's and not FIDO's, shared by the SDK and the server: the proprietary (nevisFIDO) wire contracts
        // (the out-of-band payload, plain and JWE; dispatch target bodies; device-signed requests) and the Nevis
        // authenticators' metadata, a JSON resource compiled in. `UAF` knows no vendor.
        .target(
            name: "NevisProtocol",
            dependencies: [
                "Primitives", "JOSE", "UAF", "WireJSON",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: [.embedInCode("NevisAuthenticatorMetadata.json")]
        ),
        .target(
            name: "SecureStorage",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            // Apple's privacy manifest: `fstat` (the store file's size) is a required-reason API.
            resources: [.copy("PrivacyInfo.xcprivacy")]
        ),
        // The SDK's runtime: the vocabulary (models, errors, configuration, interaction), the platform, the
        // authenticators (the ASM layer), local state, transport and the operation runner. It knows no builder:
        // MobileAuthentication, above it, hands out the Nevis SDK's operations and re-exports it.
        .target(
            name: "MobileAuthenticationCore",
            dependencies: [
                "Primitives", "UAF", "JOSE", "NevisProtocol", "SecureStorage", "WireJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "MobileAuthentication",
            dependencies: [
                "MobileAuthenticationCore", "UAF", "JOSE", "NevisProtocol", "WireJSON",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // One C function: SQLite's variadic sqlite3_db_config, which Swift cannot call (SQLiteEngine).
        .target(name: "CSQLiteSettings"),
        // The embedded SQLite engine (statements kept prepared, run inline, commits grouped, a background checkpointer)
        // behind SQLKit's SQLDatabase: the only target that touches sqlite-nio's vendored SQLite.
        .target(
            name: "EmbeddedSQLite",
            dependencies: [
                "CSQLiteSettings",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The server's domain: services (one per ceremony or resource), stores, configuration, dispatch, tokens and
        // metrics. It knows no HTTP: FIDOServer, above it, routes requests to it and turns its answers and refusals
        // into HTTP, and re-exports it.
        .target(
            name: "FIDOServerCore",
            dependencies: [
                "AppAttestation", "EmbeddedSQLite", "FIDOAttestation", "WireJSON",
                "Primitives", "UAF", "WebAuthn", "JOSE", "NevisProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "PostgresKit", package: "postgres-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            // The passkey providers' names by AAGUID (a community list, names only), compiled in.
            resources: [.embedInCode("Metadata/PasskeyProviders.json")]
        ),
        .target(
            name: "FIDOServer",
            dependencies: [
                "FIDOServerCore", "WireJSON", "Primitives", "UAF", "NevisProtocol",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The OpenAPI 3.1 document of the HTTP API: one file, compiled into the binary and served at /openapi.json.
            // The demo site's templates, style sheet and script, compiled in too: the binary needs no files beside it.
            resources: [
                .embedInCode("OpenAPI/openapi.json"),
                .embedInCode("DemoSite/Site/layout.mustache"),
                .embedInCode("DemoSite/Site/home.mustache"),
                .embedInCode("DemoSite/Site/waiting.mustache"),
                .embedInCode("DemoSite/Site/result.mustache"),
                .embedInCode("DemoSite/Site/demo.css"),
                .embedInCode("DemoSite/Site/demo.js"),
                .embedInCode("DemoSite/Site/favicon.svg"),
            ]
        ),
        // A simulated phone for the SDK (scriptable platform, scripted interaction): `mauth device`, `mauth demo` and the
        // tests run the SDK on it. The SDK product does not link it.
        .target(
            name: "MobileAuthenticationSimulator",
            dependencies: [
                "AppAttestation", "MobileAuthenticationCore", "SecureStorage", "FIDOSimulation",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The parties of a UAF exchange in software (authenticator, Android Keystore, App Attest, Play Integrity, relying party's
        // token signer, QR camera) for the tools that drive a server: `mauth device`, `mauth load`, `mauth demo`, benchmarks
        // and tests. A product.
        .target(
            name: "FIDOSimulation",
            dependencies: [
                "AppAttestation", "CBOR", "FIDOAttestation", "JOSE", "Primitives", "UAF", "WebAuthn", "WireJSON", "NevisProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        // Stand-ins for outside services (Google's OAuth token endpoint, FCM) that only `mauth demo` and tests reach.
        .target(
            name: "DevelopmentStandIns",
            dependencies: [
                "FIDOServer",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What only tests (and the fuzz tool) need: independent programs to check against, Foundation's
        // JSON as the wire codec's reference, the one deadline helper tests wait with. No product links it; `.ci/run`
        // checks the manifest for that.
        .target(
            name: "TestSupport",
            dependencies: ["FIDOSimulation"]
        ),
        // The server under test for the server's tests: in process (its router, HummingbirdTesting) or on loopback over
        // TLS, with one request API. Test-only: no product links it.
        .target(
            name: "FIDOServerTesting",
            dependencies: [
                "FIDOServer", "UAF", "FIDOSimulation", "Primitives", "NevisProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `mauth load`: many virtual devices (software authenticators, no storage) driving a server over HTTPS (its own
        // lean HTTP/1.1 client on NIO), with HdrHistogram latencies per endpoint. Knows UAF messages and HTTP, not the
        // server's insides.
        .target(
            name: "LoadGenerator",
            dependencies: [
                "Primitives", "WireJSON", "UAF", "FIDOSimulation", "NevisProtocol",
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "mauth",
            dependencies: [
                "Primitives", "UAF", "JOSE", "NevisProtocol", "FIDOServer", "FIDOServerCore", "MobileAuthentication", "MobileAuthenticationCore",
                "MobileAuthenticationSimulator", "FIDOSimulation", "DevelopmentStandIns", "LoadGenerator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The parsers that take outside bytes, as fuzz targets with their invariants, and the seed corpus maker.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "AppAttestation", "CBOR", "WebAuthn", "Primitives", "WireJSON", "UAF", "JOSE", "NevisProtocol", "SecureStorage", "FIDOSimulation",
                "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        // libFuzzer harness when built by Fuzz/run; otherwise replays saved inputs and writes the seeds.
        .executableTarget(name: "mauth-fuzz", dependencies: ["FuzzTargets"]),
        .testTarget(
            name: "UAFTests",
            dependencies: [
                "FIDOAttestation", "Primitives", "UAF", "FIDOSimulation",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ], resources: [.copy("Vectors")]),
        .testTarget(name: "CBORTests", dependencies: ["CBOR", "FIDOSimulation", "TestSupport"]),
        .testTarget(
            name: "WebAuthnTests",
            dependencies: [
                "WebAuthn", "CBOR", "FIDOAttestation", "Primitives", "FIDOSimulation", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ], resources: [.copy("Vectors"), .copy("MLDSAVectors")]),
        .testTarget(
            name: "AppAttestationTests",
            dependencies: [
                "AppAttestation", "CBOR", "FIDOSimulation", "JOSE", "Primitives", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ], resources: [.copy("Vectors")]),
        .testTarget(name: "WireJSONTests", dependencies: ["WireJSON", "Primitives", "UAF", "TestSupport"]),
        .testTarget(
            name: "JOSETests",
            dependencies: ["JOSE", "Primitives", "FIDOSimulation", "TestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "NevisProtocolTests",
            dependencies: ["NevisProtocol", "JOSE", "Primitives", "UAF", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "SecureStorageTests", dependencies: ["SecureStorage", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "FuzzTargetTests", dependencies: ["FuzzTargets"]),
        // Test only, Linux: the subset of LocalAuthentication, Security, DeviceCheck and Darwin that the Apple path calls, with
        // Apple's signatures, answered by a scripted device. `ApplePlatformTests` compiles the Apple path's own source
        // files (symbolic links to them) against it, so its decisions run in `swift test` without an Apple toolchain.
        .target(
            name: "AppleFrameworksShim",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/AppleFrameworksShim"
        ),
        .testTarget(
            name: "ApplePlatformTests",
            dependencies: [
                "AppleFrameworksShim", "MobileAuthentication", "MobileAuthenticationCore", "SecureStorage",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            // The links in AppleSources compile here against the shim on Linux, and to nothing elsewhere: on an
            // Apple platform their home modules compile them against the real frameworks.
            swiftSettings: [.define("APPLE_FRAMEWORKS_SHIM", .when(platforms: [.linux])), .define("APPLE_SOURCES_LINKED")]
        ),
        .testTarget(
            name: "MobileAuthenticationTests",
            dependencies: [
                "MobileAuthentication", "MobileAuthenticationCore", "MobileAuthenticationSimulator", "NevisProtocol", "Primitives", "UAF",
                "SecureStorage", .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // In-process tests of the server: units and route rules on a router (HummingbirdTesting).
        .testTarget(
            name: "FIDOServerTests",
            dependencies: [
                "AppAttestation", "FIDOServer", "FIDOServerCore", "FIDOAttestation", "Primitives", "UAF", "JOSE", "NevisProtocol", "FIDOSimulation",
                "TestSupport",
                "WireJSON", "FIDOServerTesting", "DevelopmentStandIns",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                nio("NIOCore"), nio("NIOHTTP1"), nio("NIOPosix"),
            ]),
        // Tests that need the real thing: a server on loopback over TLS, PostgreSQL, the SQLite engine's internals.
        .testTarget(
            name: "FIDOServerLiveTests",
            dependencies: [
                "FIDOServer", "FIDOServerCore", "EmbeddedSQLite", "Primitives", "UAF", "JOSE", "NevisProtocol", "FIDOSimulation", "WireJSON",
                "AppAttestation", "CBOR", "FIDOServerTesting", "TestSupport", "WebAuthn", "DevelopmentStandIns",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                nio("NIOCore"), nio("NIOHTTP1"), nio("NIOPosix"), nio("NIOConcurrencyHelpers"),
            ]),
        .testTarget(
            name: "EmbeddedSQLiteTests",
            dependencies: [
                "EmbeddedSQLite", "TestSupport",
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "SQLKit", package: "sql-kit"),
                .product(name: "SQLiteKit", package: "sqlite-kit"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "LoadGeneratorTests",
            dependencies: [
                "LoadGenerator", "FIDOServer", "FIDOServerTesting", "FIDOSimulation", nio("NIOCore"), nio("NIOEmbedded"),
                nio("NIOConcurrencyHelpers"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "FIDOServer", "MobileAuthentication", "MobileAuthenticationSimulator", "Primitives", "UAF", "JOSE", "NevisProtocol",
                "SecureStorage", "FIDOSimulation", "TestSupport", "DevelopmentStandIns", "MobileAuthenticationCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                nio("NIOCore"), nio("NIOHTTP1"), nio("NIOConcurrencyHelpers"), nio("NIOPosix"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
    ]
)
