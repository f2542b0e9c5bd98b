import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import Primitives
import TestSupport
import XCTest

/// App attestation through the SDK, over loopback TLS against our server: the simulated device's App Attest (a
/// software service under a root the server is configured with) answers what each policy asks.
final class AppAttestationFlowTests: XCTestCase {
    let appID = "ABCDE12345.ch.nevis.mauth.virtualdevice"
    var env: Environment!
    var service: SimulatedAppAttest!

    var playIntegrity: SimulatedPlayIntegrity!
    let packageName = "ch.nevis.mauth.virtualdevice"
    let signingDigest = Base64URL.encode(Array(repeating: 0x5A, count: 32))
    let cloudProjectNumber: Int64 = 123_456_789_012

    /// A server that trusts the simulated device's App Attest and Play Integrity (each under keys of this test) with
    /// `modes` in its default policy, on `database` (nil: a SQLite file), and a device of `profile` with both.
    func start(
        _ modes: ServerConfiguration.AppAttestationModes, profile: DeviceProfile = .ios, database: ServerConfiguration.Database? = nil
    ) async throws {
        let authority = try SoftwareAppAttestAuthority()
        let issuer = SoftwarePlayIntegrity()
        env = try await Environment(profile: profile) { [packageName, signingDigest] configuration, directory in
            let root = directory.appendingPathComponent("app-attest-root.pem")
            try authority.rootPEM.write(to: root, atomically: true, encoding: .utf8)
            let decryptionKey = directory.appendingPathComponent("play-integrity-decryption.key")
            let verificationKey = directory.appendingPathComponent("play-integrity-verification.key")
            try issuer.decryptionKeyBase64.write(to: decryptionKey, atomically: true, encoding: .utf8)
            try issuer.verificationKeyBase64.write(to: verificationKey, atomically: true, encoding: .utf8)
            configuration.appAttestation = .init(
                apple: .init(
                    apps: [.init(teamId: "ABCDE12345", bundleId: "ch.nevis.mauth.virtualdevice")], environments: ["development"],
                    rootCertificatesPath: root.path),
                android: .init(
                    packageName: packageName, certificateSha256Digests: [signingDigest], decryptionKeyPath: decryptionKey.path,
                    verificationKeyPath: verificationKey.path))
            configuration.policies = ["default": .init(appAttestation: modes)]
            if let database { configuration.database = database }
        }
        service = SimulatedAppAttest(authority: authority, appID: appID)
        env.platform.useAppAttest(service)
        playIntegrity = SimulatedPlayIntegrity(
            issuer: issuer, cloudProjectNumber: cloudProjectNumber,
            verdicts: .init(packageName: packageName, certificateSha256Digests: [signingDigest]))
        env.platform.usePlayIntegrity(playIntegrity)
    }

    /// The PIN authenticator of the device's profile (Android numbers its AAIDs `F1D0#000x`).
    var pinAAID: String { env.platform.deviceProfile == .ios ? AuthenticatorAaid.Pin.rawValue : "F1D0#0001" }

    var withPlayIntegrity: Configuration { env.configuration.withAppAttestation(.init(googleCloudProjectNumber: cloudProjectNumber)) }

    override func tearDown() async throws { try await env?.shutdown() }

    func testAnAppThatDidNotConfigureAppAttestationAnswersNothing() async throws {
        try await start(.init(registration: .require))
        let client = try await env.client()
        let error = await captureError { try await client.register("alice") }
        guard case .AppAttestationError? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(service.attestationCount, 0)
    }

    func authenticate(
        _ client: any MobileAuthenticationClient, username: String = "alice", transaction: String? = nil
    ) async throws(AuthenticationError) {
        let builder = client.operations.authentication.username(username)
            .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
        if let transaction {
            builder.transactionConfirmation(text: transaction).authenticatorSelector(
                ScriptedAuthenticatorSelector(choose: pinAAID))
        }
        _ = try await builder.executeAsync()
    }

    func testAnAttestedAppRegistersSignsInAndConfirmsWhereEachIsRequired() async throws {
        try await start(.init(registration: .require, authentication: .require, transaction: .require))
        let client = try await env.client(configuration: env.configuration.withAppAttestation(.appAttest))
        try await client.register("alice")
        try await authenticate(client)
        try await authenticate(client, transaction: "Pay 100 CHF to Bob")
        XCTAssertEqual(service.attestationCount, 1, "attested once, then asserted")
        let keys = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertEqual(keys.count, 1)
    }

    func testADeviceThatCannotAttestIsRefusedWithAppAttestationErrorAndKeepsNothing() async throws {
        try await start(.init(registration: .require))
        service.setSupported(false)
        let client = try await env.client(configuration: env.configuration.withAppAttestation(.appAttest))
        let error = await captureError { try await client.register("alice") }
        guard case .AppAttestationError(let cause)? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertTrue("\(String(describing: cause))".contains("1497"), "\(String(describing: cause))")
        XCTAssertTrue(client.localData.accounts.isEmpty, "nothing registered on the device")
        let keys = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertTrue(keys.isEmpty)
    }

    func testReportLetsADeviceThatCannotAttestThrough() async throws {
        try await start(.init(registration: .report, authentication: .report))
        service.setSupported(false)
        let client = try await env.client(configuration: env.configuration.withAppAttestation(.appAttest))
        try await client.register("alice")
        try await authenticate(client)
        XCTAssertEqual(service.attestationCount, 0)
    }

    /// A restore onto another device loses the App Attest key: the SDK makes a new one and attests it once more.
    func testAKeyTheServiceLostIsReplacedAndAttestedAgain() async throws {
        try await start(.init(registration: .require, authentication: .require))
        let client = try await env.client(configuration: env.configuration.withAppAttestation(.appAttest))
        try await client.register("alice")
        service.loseKeys()
        try await authenticate(client)
        XCTAssertEqual(service.attestationCount, 2)
        try await authenticate(client)
        XCTAssertEqual(service.attestationCount, 2, "the new key asserts from then on")
    }

    /// A server that no longer knows the key (its database restored) refuses the assertion once; the SDK then
    /// attests again, and the next operation passes.
    func testAServerThatLostTheKeyGetsAnAttestationOnTheNextOperation() async throws {
        try await start(.init(registration: .require, authentication: .require))
        let client = try await env.client(configuration: env.configuration.withAppAttestation(.appAttest))
        try await client.register("alice")
        try await env.server.stores.database.run { sql in try await sql.raw("DELETE FROM app_attest_keys").run() }
        let error = await captureError { try await self.authenticate(client) }
        guard case .AppAttestationError? = error as? AuthenticationError else { return XCTFail("\(String(describing: error))") }
        try await authenticate(client)
        XCTAssertEqual(service.attestationCount, 2)
    }
}

/// The same flows on the Android profile with Play Integrity, and both profiles on PostgreSQL.
extension AppAttestationFlowTests {
    func testAnAndroidAppWithPlayIntegrityRegistersSignsInAndConfirmsWhereEachIsRequired() async throws {
        try await start(.init(registration: .require, authentication: .require, transaction: .require), profile: .android)
        let client = try await env.client(configuration: withPlayIntegrity)
        try await client.register("alice", aaid: pinAAID)
        try await authenticate(client)
        try await authenticate(client, transaction: "Pay 100 CHF to Bob")
        XCTAssertEqual(playIntegrity.tokenCount, 3, "a fresh token for every operation")
        XCTAssertEqual(service.attestationCount, 0, "App Attest is not what the app configured")
    }

    func testAnAndroidAppPlayDoesNotRecognizeIsRefusedWithAppAttestationErrorAndKeepsNothing() async throws {
        try await start(.init(registration: .require), profile: .android)
        var verdicts = playIntegrity.currentVerdicts
        verdicts.appRecognitionVerdict = "UNRECOGNIZED_VERSION"
        playIntegrity.setVerdicts(verdicts)
        let client = try await env.client(configuration: withPlayIntegrity)
        let error = await captureError { try await client.register("alice", aaid: pinAAID) }
        guard case .AppAttestationError(let cause)? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertTrue("\(String(describing: cause))".contains("1497"), "\(String(describing: cause))")
        XCTAssertTrue(client.localData.accounts.isEmpty, "nothing registered on the device")
        let keys = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertTrue(keys.isEmpty)
    }

    /// The app configured another Google Cloud project: Google encrypts its token under keys the server lacks.
    func testAnAndroidAppConfiguredWithAnotherCloudProjectIsRefused() async throws {
        try await start(.init(registration: .require), profile: .android)
        let client = try await env.client(configuration: env.configuration.withAppAttestation(.playIntegrity(cloudProjectNumber: 1)))
        let error = await captureError { try await client.register("alice", aaid: pinAAID) }
        guard case .AppAttestationError? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(playIntegrity.tokenCount, 1)
    }

    /// Play Integrity's own failure (no Play Store) reaches the app as the cause, before anything is sent.
    func testPlayIntegrityUnavailableOnTheDeviceIsAnAppAttestationErrorWithItsCause() async throws {
        try await start(.init(registration: .report), profile: .android)
        playIntegrity.setAvailable(false)
        let client = try await env.client(configuration: withPlayIntegrity)
        let error = await captureError { try await client.register("alice", aaid: pinAAID) }
        guard case .AppAttestationError(let cause)? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(cause as? SimulatedPlayIntegrityUnavailable, SimulatedPlayIntegrityUnavailable())
        let keys = try await env.server.stores.registrations.registrations(username: "alice")
        XCTAssertTrue(keys.isEmpty)
    }

    /// Both profiles, the whole flow, against a server on PostgreSQL.
    func testBothProfilesAttestTheWholeFlowOnPostgreSQL() async throws {
        let url = try postgresURL()
        let suffix = String(UUID().uuidString.prefix(8)).lowercased()
        for profile in [DeviceProfile.ios, .android] {
            try await start(
                .init(registration: .require, authentication: .require, transaction: .require), profile: profile,
                database: .postgres(url: url, poolSize: 4))
            let client = try await env.client(configuration: profile == .ios ? env.configuration.withAppAttestation(.appAttest) : withPlayIntegrity)
            let username = "\(profile)-\(suffix)"
            try await client.register(username, aaid: pinAAID)
            try await authenticate(client, username: username)
            try await authenticate(client, username: username, transaction: "Pay 100 CHF to Bob")
            let keys = try await env.server.stores.registrations.registrations(username: username)
            XCTAssertEqual(keys.count, 1, "\(profile)")
            XCTAssertEqual(profile == .ios ? service.attestationCount : playIntegrity.tokenCount, profile == .ios ? 1 : 3, "\(profile)")
            try await env.shutdown()
            env = nil
        }
    }
}

extension MobileAuthenticationClient {
    /// Registers `username` with a PIN (`aaid`: the iOS profile's by default), authorized by the relying party's token.
    func register(_ username: String, aaid: String = AuthenticatorAaid.Pin.rawValue) async throws {
        try await authorizedRegistration(username, choose: aaid)
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
    }
}
