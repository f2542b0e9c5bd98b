import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import XCTest

/// App attestation through the SDK, over loopback TLS against our server: the simulated device's App Attest (a
/// software service under a root the server is configured with) answers what each policy asks.
final class AppAttestationFlowTests: XCTestCase {
    let appID = "ABCDE12345.ch.nevis.mauth.virtualdevice"
    var env: Environment!
    var service: SimulatedAppAttest!

    func start(_ modes: ServerConfiguration.AppAttestationModes) async throws {
        let authority = try SoftwareAppAttestAuthority()
        env = try await Environment { configuration, directory in
            let root = directory.appendingPathComponent("app-attest-root.pem")
            try authority.rootPEM.write(to: root, atomically: true, encoding: .utf8)
            configuration.appAttestation = .init(
                apple: .init(
                    apps: [.init(teamId: "ABCDE12345", bundleId: "ch.nevis.mauth.virtualdevice")], environments: ["development"],
                    rootCertificatesPath: root.path))
            configuration.policies = ["default": .init(appAttestation: modes)]
        }
        service = SimulatedAppAttest(authority: authority, appID: appID)
        env.platform.useAppAttest(service)
    }

    override func tearDown() async throws { try await env?.shutdown() }

    func testAnAppThatDidNotConfigureAppAttestationAnswersNothing() async throws {
        try await start(.init(registration: .require))
        let client = try await env.client()
        let error = await captureError { try await client.register("alice") }
        guard case .AppAttestationError? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(service.attestationCount, 0)
    }

    func authenticate(_ client: any MobileAuthenticationClient, transaction: String? = nil) async throws(AuthenticationError) {
        let builder = client.operations.authentication.username("alice")
            .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
        if let transaction {
            builder.transactionConfirmation(text: transaction).authenticatorSelector(
                ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
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

extension MobileAuthenticationClient {
    /// Registers `username` with a PIN, authorized by the relying party's token.
    func register(_ username: String) async throws {
        try await authorizedRegistration(username, choose: AuthenticatorAaid.Pin.rawValue)
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
    }
}
