import Benchmark
import Crypto
import FIDOServer
import FIDOSimulation
import Foundation
import Logging
import MobileAuthentication
import MobileAuthenticationSimulator
import NevisProtocol
import Primitives
import SecureStorage
import UAF
import WebAuthn

/// The gate: allocations per operation, which this two-core machine counts the same in every run (time drifts 10–25 %
/// within the hour, and the machine offers no instruction counter). `.ci/run` fails when an operation allocates more
/// than its committed threshold in `Thresholds/` (`swift package benchmark thresholds check`); wall-clock time is
/// printed beside it, for reading only.
/// Names are single words: the benchmark tool writes a threshold file under a name with spaces replaced, and reads it
/// under the name as it is.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .wallClock],
        warmupIterations: 10,
        maxDuration: .seconds(2),
        maxIterations: 2_000,
        // Exact: the same code allocates the same count for the same input.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 0])]
    )
    uafVerification()
    webAuthnVerification()
    wireCodec()
    storage()
    clientRoundTrip()
    serverRequestPath()
}

/// A UAF step-up login's response, verified as the server verifies it (every rule of uaf-spec §5, the signature too).
func uafVerification() {
    var authenticator = SoftwareAuthenticator()
    let appID = "https://127.0.0.1:8443/nevisfido/uaf/1.1/facets"
    let challenge = Base64URL.encode((0..<32).map { UInt8($0) })
    let policy = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]])
    let request = AuthenticationRequest(
        header: OperationHeader(op: .authentication, appID: appID, serverData: "bench"), challenge: challenge, policy: policy)
    guard let response = try? authenticator.authenticate(request, serverAppID: appID),
        let metadata = try? UAFMetadata(NevisAuthenticatorMetadata.statements)
    else { fatalError("benchmark set-up: no response") }
    let verifier = AuthenticationVerifier(
        configuration: RelyingPartyConfiguration(appID: appID, trustedFacetIDs: [authenticator.facetID]),
        metadata: metadata)
    let issued = IssuedAuthentication(challenge: challenge, policy: policy)
    let registered = authenticator.registeredKey(username: "bench")
    Benchmark("UAFVerifyAuthentication") { benchmark async throws in
        for _ in benchmark.scaledIterations {
            blackHole(try await verifier.verify(response, issued: issued, lookup: { _, _ in registered }))
        }
    }
}

/// A passkey sign-in's assertion verified (WebAuthn §7.2), and raw P-256 verification of the same signature beside
/// it: the floor any verifier pays, to read the ceremony's own cost against.
func webAuthnVerification() {
    let key = P256.Signing.PrivateKey()
    let relyingParty = RelyingParty(id: "example.org", origins: ["https://example.org"])
    let challenge = [UInt8](repeating: 0x42, count: 32)
    let credentialID = [UInt8](repeating: 0xC1, count: 16)
    let clientData = Array(
        #"{"type":"webauthn.get","challenge":"\#(Base64URL.encode(challenge))","origin":"https://example.org","crossOrigin":false}"#.utf8)
    let authenticatorData = Array(SHA256.hash(data: Array("example.org".utf8))) + [0x05, 0, 0, 0, 1]  // UP, UV, counter 1
    let message = authenticatorData + SHA256.hash(data: clientData)
    guard let signature = try? Array(key.signature(for: message).derRepresentation),
        let publicKey = try? COSEKey(bytes: COSEKey(key.publicKey).encoded)
    else { fatalError("benchmark set-up: no signature") }
    let assertion = AssertionResponse(
        credentialID: credentialID, clientDataJSON: clientData, authenticatorData: authenticatorData,
        signature: signature, userHandle: [1])
    let stored = StoredCredential(id: credentialID, publicKey: publicKey, userHandle: [1], signCount: 0, backupEligible: false)
    let ceremony = AuthenticationCeremony(relyingParty: relyingParty)
    let expected = AssertionExpectation(challenge: challenge, allowCredentials: [credentialID])
    Benchmark("WebAuthnVerifyAuthentication") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try ceremony.verify(assertion, expected: expected, credential: stored)) }
    }
    let raw = key.publicKey
    Benchmark("P256VerifyRawReference") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(raw.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: message))
        }
    }
}

/// The wire JSON of one login: the request the server writes, the response it reads, and the fcParams inside it.
func wireCodec() {
    var authenticator = SoftwareAuthenticator()
    let appID = "https://bench.example/nevisfido/uaf/1.1/facets"
    let policy = Policy(
        accepted: NevisAuthenticatorMetadata.statements.map {
            [MatchCriteria(aaid: [$0.aaid], authenticationAlgorithms: [$0.authenticationAlgorithm])]
        })
    let request = AuthenticationRequest(
        header: OperationHeader(op: .authentication, appID: appID, serverData: Base64URL.encode((0..<18).map { UInt8($0) })),
        challenge: Base64URL.encode((0..<32).map { UInt8($0) }), policy: policy)
    guard let response = try? authenticator.authenticate(request, serverAppID: appID), let text = try? UAFMessageCodec.encode([response]),
        let fcParams = response.assertions.isEmpty ? nil : response.fcParams
    else { fatalError("benchmark set-up: no response") }
    Benchmark("WireEncodeAuthenticationRequest") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try UAFMessageCodec.encode([request])) }
    }
    Benchmark("WireDecodeAuthenticationResponse") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try UAFMessageCodec.decode(AuthenticationResponse.self, from: text)) }
    }
    Benchmark("WireDecodeAuthenticationResponseFoundationReference") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try JSONDecoder().decode([AuthenticationResponse].self, from: Data(text.utf8))) }
    }
    Benchmark("WireDecodeFCParams") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(FinalChallengeParams.decode(fcParams: fcParams)) }
    }
}

/// The SDK's encrypted store (1,000 entries): a read, and a durable write of one change.
func storage() {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-benchmark-\(UUID().uuidString)")
    let location = StoreLocation(directory: directory, name: "bench")
    nonisolated(unsafe) var store: SecureStore?
    let setUp: Benchmark.BenchmarkSetupHook = {
        // scrypt at its lowest cost: the key derivation is not what is measured, and the protector keeps its key.
        let protector = try SoftwareKeyProtector(iterationCount: 1 << 10)
        let created = try await SecureStore.create(at: location, fingerprint: "bench-device", protector: protector)
        for i in 0..<1000 { try await created.set((0..<64).map { UInt8(truncatingIfNeeded: $0 &+ i) }, for: "entry-\(i)") }
        try await created.write()
        store = created
    }
    let tearDown: Benchmark.BenchmarkTeardownHook = { try? FileManager.default.removeItem(at: directory) }
    Benchmark("StorageRead", configuration: .init(setup: setUp, teardown: tearDown)) { benchmark async throws in
        guard let store else { return }
        for i in benchmark.scaledIterations { blackHole(try await store.bytes(for: "entry-\((i &* 7919) % 1000)")) }
    }
    Benchmark("StorageDurableWrite", configuration: .init(maxIterations: 200, setup: setUp, teardown: tearDown)) { benchmark async throws in
        guard let store else { return }
        for i in benchmark.scaledIterations {
            try await store.set(Array("value-\(i % 10)".utf8), for: "entry-\(i % 1000)")
            try await store.write()
        }
    }
}

/// The SDK against a real server on loopback (TLS, SQLite): one registration and one authentication of a new user
/// per iteration, with simulated Face ID (no PIN key derivation). Client and server run in this process, so the
/// count is both sides' allocations; the threads they run on make it vary a little, hence its tolerance.
func clientRoundTrip() {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-benchmark-client-\(UUID().uuidString)")
    let relyingParty = LocalRelyingParty(issuer: "https://rp.bench.example", audience: "mauth-benchmarks")
    let rounds = 60
    nonisolated(unsafe) var server: RunningFIDOServer?
    nonisolated(unsafe) var client: (any MobileAuthenticationClient)?
    nonisolated(unsafe) var tokens: [String] = []
    nonisolated(unsafe) var next = 0
    let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.FaceRecognition.rawValue)
    let faceID = ScriptedOSVerifier()
    let setUp: Benchmark.BenchmarkSetupHook = {
        var configuration = try benchmarkServerConfiguration(in: directory, relyingParty: relyingParty)
        configuration.authorization.jwt?.adminScope = "mauth:admin"
        configuration.observability.auditRetentionDays = 0
        let running = try await FIDOServerApplication.start(
            configuration: configuration, dependencies: ServerDependencies(logger: quietLogger, auditLogger: quietLogger))
        let platform = SimulatedPlatform(storageDirectory: directory.appendingPathComponent("device"))
        client = try await MobileAuthenticationClientInitializer()
            .configuration(
                Configuration(baseUrl: running.baseURL, facetId: platform.applicationFacetId)
                    .withTransportSecurity(.debug(trustedCertificatesPEM: [running.certificatePEM]))
            )
            .platform(platform).executeAsync()
        server = running
        // The relying party's tokens are its work, not the round trip's: minted before.
        for i in 0..<(rounds + 20) { tokens.append(try await relyingParty.token(for: "user-\(i)")) }
    }
    let tearDown: Benchmark.BenchmarkTeardownHook = {
        await client?.shutdown()
        try await server?.stop()
        try? FileManager.default.removeItem(at: directory)
    }
    // The threads of two HTTP stacks move the count by a few hundred allocations from run to run.
    let configuration = Benchmark.Configuration(
        warmupIterations: 10, maxDuration: .seconds(20), maxIterations: rounds,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 5.0])],
        setup: setUp, teardown: tearDown)
    Benchmark("ClientRoundTrip", configuration: configuration) { benchmark async throws in
        guard let client else { return }
        for _ in benchmark.scaledIterations {
            let username = "user-\(next)"
            let jwt = tokens[next % tokens.count]
            next += 1
            try await client.operations.registration.username(username).deviceInformation(DeviceInformation(name: "bench"))
                .authorizationProvider(JwtAuthorizationProvider(jwt: jwt))
                .authenticatorSelector(selector).biometricUserVerifier(faceID).executeAsync()
            blackHole(
                try await client.operations.authentication.username(username).authenticatorSelector(selector)
                    .biometricUserVerifier(faceID).executeAsync())
            // A phone holds a handful of accounts: each round runs against the same small local state.
            try await client.localData.deleteAuthenticator(username: username, aaid: nil)
        }
    }
}
