import Foundation
import Logging
import MobileAuthentication
import MobileAuthenticationSimulator
import UAFServer
import UAFSimulation

/// `mauth-bench client`: registration and authentication round trips of the SDK against a real server on loopback
/// (TLS, SQLite file), one at a time. The simulated Face ID authenticator verifies at once, so the figures exclude
/// the PIN's scrypt (which a user waits for once per PIN entry by design) and include everything else: HTTPS,
/// server verification and storage, the client's policy matching, key generation, signing and its durable commit.
enum ClientBench {
    static func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-client-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let relyingParty = LocalRelyingParty(issuer: "https://rp.bench.example", audience: "mauth-bench")
        let jwks = directory.appendingPathComponent("jwks.json").path
        try relyingParty.writeJWKS(to: jwks)
        var configuration = ServerConfiguration(facets: [SoftwareAuthenticator.virtualDeviceFacetID], database: .sqlite(path: directory.appendingPathComponent("server.sqlite").path))
        configuration.authorization.jwt = .init(jwksPath: jwks, issuer: relyingParty.issuer, audience: relyingParty.audience, adminScope: "mauth:admin")
        configuration.limits.requestsPerMinutePerAddress = 0   // One client address makes every request: no rate limit.
        // A benchmark prints its figures only: the server's log and its audit stream (one line per decision) stay quiet.
        var logger = Logger(label: "mauth.bench.server")
        logger.logLevel = .error
        var audit = Logger(label: "mauth.bench.audit")
        audit.logLevel = .error
        let server = try await UAFServerApplication.start(configuration: configuration, dependencies: ServerDependencies(logger: logger, auditLogger: audit))
        let platform = SimulatedPlatform(storageDirectory: directory.appendingPathComponent("device"))
        let client = try await MobileAuthenticationClientInitializer()
            .configuration(Configuration(baseUrl: server.baseURL, facetId: platform.applicationFacetId)
                .withTransportSecurity(.debug(trustedCertificatesPEM: [server.certificatePEM])))
            .platform(platform).executeAsync()
        let faceID = ScriptedOSVerifier()
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.FaceRecognition.rawValue)

        func register(_ username: String, _ jwt: String) async throws {
            try await client.operations.registration.username(username).deviceInformation(DeviceInformation(name: "bench"))
                .authorizationProvider(JwtAuthorizationProvider(jwt: jwt))
                .authenticatorSelector(selector).biometricUserVerifier(faceID).executeAsync()
        }
        func authenticate(_ username: String) async throws {
            _ = try await client.operations.authentication.username(username).authenticatorSelector(selector).biometricUserVerifier(faceID).executeAsync()
        }

        // Warm up connections and caches.
        for i in 0..<20 {
            try await register("warm-\(i)", try await relyingParty.token(for: "warm-\(i)"))
            try await authenticate("warm-\(i)")
            try await client.localData.deleteAuthenticator(username: "warm-\(i)", aaid: nil)
        }
        // The device's own long-lived account, so the local state is not empty.
        try await register("owner", try await relyingParty.token(for: "owner"))
        let rounds = 300
        var registrations: [Double] = [], authentications: [Double] = []
        for i in 0..<rounds {
            // The relying party's token is minted outside the measured round trip: it is the relying party's work.
            let username = "user-\(i)"
            let jwt = try await relyingParty.token(for: username)
            registrations.append(try await Measure.nanoseconds { try await register(username, jwt) })
            authentications.append(try await Measure.nanoseconds { try await authenticate(username) })
            // A phone holds a handful of accounts, not hundreds: the device forgets each user after its round (the
            // server keeps the registrations), so every round runs against the same small local state.
            try await client.localData.deleteAuthenticator(username: username, aaid: nil)
        }
        await client.shutdown()
        try await server.stop()

        print("Client round trips against a loopback server (TLS, SQLite), \(rounds) each, simulated Face ID (no PIN KDF)")
        for (name, samples) in [("registration", registrations), ("authentication", authentications)] {
            let sorted = samples.sorted()
            func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            Measure.report("\(name) p50", percentile(0.5), target: 5e6)
            Measure.report("\(name) p90", percentile(0.9))
            Measure.report("\(name) p99", percentile(0.99))
        }
    }
}
