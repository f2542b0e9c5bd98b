import AppAttestation
import Crypto
import FIDOAttestation
import FIDOServer
import FIDOServerCore
import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

/// App attestation per policy, in process: what a request asks of the app, and what a response without, with a bad
/// and with a good attestation or assertion gets under `off`, `report` and `require`.
final class AppAttestationRouteTests: XCTestCase {
    static let app = ServerConfiguration.AppAttestation.App(teamId: "ABCDE12345", bundleId: "ch.nevis.mauth.virtualdevice")
    static let appID = "ABCDE12345.ch.nevis.mauth.virtualdevice"
    let authority = try! SoftwareAppAttestAuthority()

    /// A server that trusts `authority` for the test app in development, with `modes` in the default policy set.
    func configuration(
        _ modes: ServerConfiguration.AppAttestationModes?, trusting trusted: SoftwareAppAttestAuthority? = nil
    ) throws -> ServerConfiguration {
        var configuration = InProcessServer.configuration()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("app-attest-root-\(UUID().uuidString).pem")
        try (trusted ?? authority).rootPEM.write(to: root, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: root) }
        configuration.appAttestation = .init(apple: .init(apps: [Self.app], environments: ["development"], rootCertificatesPath: root.path))
        if let modes { configuration.policies = ["default": .init(appAttestation: modes)] }
        return configuration
    }

    /// The extension an app answers with (the wire's own encoding).
    static func answer(keyID: [UInt8], attestation: [UInt8]? = nil, assertion: [UInt8]? = nil) throws -> Extension {
        try AppAttestationWire.Answer(
            platform: "apple", keyId: Base64URL.encode(keyID), attestation: attestation.map(Base64URL.encode),
            assertion: assertion.map(Base64URL.encode)
        ).headerExtension()
    }

    func clientDataHash(_ fcParams: String) -> [UInt8] { AppAttestationWire.clientDataHash(fcParams: fcParams) }

    /// Registers alice, attesting `key` when given; the UAF status.
    func register(
        _ server: InProcessServer, _ authenticator: SoftwareAuthenticator, attesting key: SoftwareAppAttestKey?, policy: String? = nil,
        by issuer: SoftwareAppAttestAuthority? = nil
    ) async throws -> (status: Int, request: RegistrationRequest) {
        let request = try await server.registrationRequest(username: "alice", policy: policy)
        var response = try authenticator.register(request, serverAppID: server.appID)
        if let key {
            let object = try (issuer ?? authority).attest(
                key, appID: Self.appID, environment: .development, clientDataHash: clientDataHash(response.fcParams), now: server.clock.now)
            response.header.exts = [try Self.answer(keyID: key.keyID, attestation: object)]
        }
        return (try await server.send("/nevisfido/uaf/1.1/registration", response).statusCode, request)
    }

    /// Signs alice in, asserting with `key` at `counter` when given; the UAF status.
    func authenticate(
        _ server: InProcessServer, _ authenticator: inout SoftwareAuthenticator, asserting key: SoftwareAppAttestKey?, counter: UInt32 = 1,
        transaction: [Transaction]? = nil
    ) async throws -> (status: Int, request: AuthenticationRequest) {
        let (_, request) = try await server.authenticationRequest(username: "alice", transaction: transaction)
        var response = try authenticator.authenticate(try XCTUnwrap(request), serverAppID: server.appID)
        if let key {
            let assertion = try key.assertion(appID: Self.appID, counter: counter, clientDataHash: clientDataHash(response.fcParams))
            response.header.exts = [try Self.answer(keyID: key.keyID, assertion: assertion)]
        }
        return (try await server.send("/nevisfido/uaf/1.1/authentication", response).statusCode, try XCTUnwrap(request))
    }

    func auditEvents(_ server: InProcessServer) async throws -> [[String: Any]] {
        await server.server.audit?.flush()
        var claims = server.relyingParty.claims(subject: "ops", now: server.clock.now)
        claims.scope = "mauth:admin"
        let headers = [("Authorization", "Bearer \(try await server.relyingParty.sign(claims))")]
        let audit = try await server.exchange(.GET, "/nevisfido/admin/audit?username=alice&limit=100", body: nil, headers: headers)
        return try XCTUnwrap((try JSONSerialization.jsonObject(with: audit.body) as? [String: Any])?["events"] as? [[String: Any]])
    }

    func events(_ events: [[String: Any]], _ operation: String) -> [String] {
        events.filter { $0["operation"] as? String == operation }.compactMap { $0["detail"] as? String }
    }

    // MARK: What a request asks

    func testARequestAsksTheAppOnlyWhereItsPolicySetDoes() async throws {
        let modes = ServerConfiguration.AppAttestationModes(registration: .require, authentication: .report)
        try await InProcessServer.with(try configuration(modes)) { server in
            let registration = try await server.registrationRequest(username: "alice")
            XCTAssertEqual(registration.header.exts, [Extension(id: AppAttestationWire.extensionID, data: "require", failIfUnknown: false)])
            let (_, login) = try await server.authenticationRequest(username: nil)
            XCTAssertEqual(try XCTUnwrap(login).header.exts, [Extension(id: AppAttestationWire.extensionID, data: "report", failIfUnknown: false)])
            // A transaction without a mode of its own follows the set's authentication mode.
            let (_, confirming) = try await server.authenticationRequest(
                username: nil, transaction: [Transaction(contentType: "text/plain", content: "UGF5IDEwMCBDSEY")])
            XCTAssertEqual(try XCTUnwrap(confirming).header.exts?.first?.data, "report")
        }
        try await InProcessServer.with(try configuration(nil)) { server in
            let registration = try await server.registrationRequest(username: "alice")
            XCTAssertNil(registration.header.exts, "no policy asks: nothing is asked")
        }
    }

    func testANamedPolicySetThatOnlyAsksForAppAttestationIsHonoured() async throws {
        var configuration = try configuration(nil)
        configuration.policies = ["app-only": .init(appAttestation: .init(registration: .require))]
        try await InProcessServer.with(configuration) { server in
            let plain = try await server.registrationRequest(username: "alice")
            XCTAssertNil(plain.header.exts)
            let refused = try await self.register(server, SoftwareAuthenticator(), attesting: nil, policy: "app-only")
            XCTAssertEqual(refused.status, 1497)
            let accepted = try await self.register(server, SoftwareAuthenticator(), attesting: SoftwareAppAttestKey(), policy: "app-only")
            XCTAssertEqual(accepted.status, 1200)
        }
    }

    // MARK: require

    func testRequireRefusesARegistrationWithoutAttestationWith1497AndAnAuditReason() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require))) { server in
            let authenticator = SoftwareAuthenticator()
            let (status, _) = try await register(server, authenticator, attesting: nil)
            XCTAssertEqual(status, 1497)
            let keys = try await server.server.stores.registrations.registrations(username: "alice")
            XCTAssertTrue(keys.isEmpty, "nothing registered")
            let refusals = events(try await auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals, ["registration: the app sent no attestation; refused"])
        }
    }

    func testRequireRegistersWithAValidAttestationAndStoresTheAppKey() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require))) { server in
            let key = SoftwareAppAttestKey()
            let (status, _) = try await register(server, SoftwareAuthenticator(), attesting: key)
            XCTAssertEqual(status, 1200)
            let stored = try await server.server.stores.appAttestKeys.key(id: key.keyID)
            XCTAssertEqual(stored?.publicKey, Array(key.privateKey.publicKey.x963Representation))
            XCTAssertEqual(stored?.counter, 0)
            XCTAssertEqual(stored?.environment, .development)
            XCTAssertFalse(stored?.receipt.isEmpty ?? true, "the receipt is kept")
            let verified = events(try await auditEvents(server), "app attestation verified")
            XCTAssertEqual(verified.count, 1)
            XCTAssertTrue(verified[0].contains("attested (\(Self.appID), development)"), verified[0])
        }
    }

    func testRequireRefusesAnAttestationUnderARootTheServerDoesNotTrust() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require))) { server in
            let stranger = try SoftwareAppAttestAuthority()
            let (status, _) = try await register(server, SoftwareAuthenticator(), attesting: SoftwareAppAttestKey(), by: stranger)
            XCTAssertEqual(status, 1497)
            let refusals = events(try await auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals.count, 1)
            XCTAssertTrue(refusals[0].contains("certificate chain does not reach an accepted root"), refusals[0])
        }
    }

    /// An attestation made for another operation (its fcParams) does not carry this one's challenge.
    func testRequireRefusesAnAttestationMadeForAnotherRequest() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require))) { server in
            let key = SoftwareAppAttestKey()
            let authenticator = SoftwareAuthenticator()
            let earlier = try await server.registrationRequest(username: "alice")
            let earlierResponse = try authenticator.register(earlier, serverAppID: server.appID)
            let object = try authority.attest(
                key, appID: Self.appID, environment: .development, clientDataHash: clientDataHash(earlierResponse.fcParams), now: server.clock.now)
            let request = try await server.registrationRequest(username: "alice")
            var response = try authenticator.register(request, serverAppID: server.appID)
            response.header.exts = [try Self.answer(keyID: key.keyID, attestation: object)]
            let answer = try await server.send("/nevisfido/uaf/1.1/registration", response)
            XCTAssertEqual(answer.statusCode, 1497)
            let refusals = events(try await auditEvents(server), "app attestation refused")
            XCTAssertTrue(refusals.first?.contains("another challenge") ?? false, "\(refusals)")
        }
    }

    func testRequireSignsInWithAnAssertionAndRaisesTheStoredCounter() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require, authentication: .require))) { server in
            let key = SoftwareAppAttestKey()
            var authenticator = SoftwareAuthenticator()
            let answer1 = try await register(server, authenticator, attesting: key)
            XCTAssertEqual(answer1.status, 1200)
            let answer2 = try await authenticate(server, &authenticator, asserting: key, counter: 1)
            XCTAssertEqual(answer2.status, 1200)
            let answer3 = try await authenticate(server, &authenticator, asserting: key, counter: 2)
            XCTAssertEqual(answer3.status, 1200)
            let answer4 = try await server.server.stores.appAttestKeys.key(id: key.keyID)
            XCTAssertEqual(answer4?.counter, 2)
        }
    }

    func testRequireRefusesASignInWithoutAnAssertion() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require, authentication: .require))) { server in
            var authenticator = SoftwareAuthenticator()
            let registered = try await register(server, authenticator, attesting: SoftwareAppAttestKey())
            XCTAssertEqual(registered.status, 1200)
            let before = try await server.server.stores.sessions.live(username: "alice", now: server.clock.now).count
            let refused = try await authenticate(server, &authenticator, asserting: nil)
            XCTAssertEqual(refused.status, 1497)
            let after = try await server.server.stores.sessions.live(username: "alice", now: server.clock.now).count
            XCTAssertEqual(after, before, "no session opened")
        }
    }

    /// An assertion's counter must rise: the same counter again is a replay, a lower one a copied key.
    func testRequireRefusesAnAssertionWhoseCounterDoesNotRise() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require, authentication: .require))) { server in
            let key = SoftwareAppAttestKey()
            var authenticator = SoftwareAuthenticator()
            let answer7 = try await register(server, authenticator, attesting: key)
            XCTAssertEqual(answer7.status, 1200)
            let answer8 = try await authenticate(server, &authenticator, asserting: key, counter: 5)
            XCTAssertEqual(answer8.status, 1200)
            let answer9 = try await authenticate(server, &authenticator, asserting: key, counter: 5)
            XCTAssertEqual(answer9.status, 1497)
            let answer10 = try await authenticate(server, &authenticator, asserting: key, counter: 3)
            XCTAssertEqual(answer10.status, 1497)
            let answer11 = try await server.server.stores.appAttestKeys.key(id: key.keyID)
            XCTAssertEqual(answer11?.counter, 5)
            let refusals = events(try await auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals.count, 2)
            XCTAssertTrue(refusals.allSatisfy { $0.contains("is not greater than the stored 5") }, "\(refusals)")
        }
    }

    func testRequireRefusesAnAssertionOfAKeyTheServerNeverAttested() async throws {
        try await InProcessServer.with(try configuration(.init(authentication: .require))) { server in
            var authenticator = SoftwareAuthenticator()
            let answer12 = try await register(server, authenticator, attesting: nil)
            XCTAssertEqual(answer12.status, 1200)
            let answer13 = try await authenticate(server, &authenticator, asserting: SoftwareAppAttestKey())
            XCTAssertEqual(answer13.status, 1497)
            let refusals = events(try await auditEvents(server), "app attestation refused")
            XCTAssertTrue(refusals.first?.contains("is unknown: the app must attest it") ?? false, "\(refusals)")
        }
    }

    func testATransactionConfirmationIsHeldToItsOwnMode() async throws {
        let modes = ServerConfiguration.AppAttestationModes(registration: .require, authentication: .off, transaction: .require)
        try await InProcessServer.with(try configuration(modes)) { server in
            var authenticator = SoftwareAuthenticator()
            let answer14 = try await register(server, authenticator, attesting: SoftwareAppAttestKey())
            XCTAssertEqual(answer14.status, 1200)
            let answer15 = try await authenticate(server, &authenticator, asserting: nil)
            XCTAssertEqual(answer15.status, 1200, "a login asks nothing")
            let text = [Transaction(contentType: "text/plain", content: "UGF5IDEwMCBDSEY")]
            let answer16 = try await authenticate(server, &authenticator, asserting: nil, transaction: text)
            XCTAssertEqual(answer16.status, 1497)
        }
    }

    // MARK: report and off

    func testReportLetsAnOperationWithoutAttestationThroughAndAuditsTheVerdict() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .report, authentication: .report))) { server in
            var authenticator = SoftwareAuthenticator()
            let answer17 = try await register(server, authenticator, attesting: nil)
            XCTAssertEqual(answer17.status, 1200)
            let answer18 = try await authenticate(server, &authenticator, asserting: SoftwareAppAttestKey())
            XCTAssertEqual(answer18.status, 1200)
            let refusals = events(try await auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals.count, 2, "\(refusals)")
            XCTAssertTrue(refusals.allSatisfy { $0.hasSuffix("; report only: the operation goes on") }, "\(refusals)")
        }
    }

    /// `GET /nevisfido/admin/user` as an operator: alice's only key, as JSON.
    func adminKey(_ server: InProcessServer) async throws -> [String: Any] {
        var claims = server.relyingParty.claims(subject: "ops", now: server.clock.now)
        claims.scope = "mauth:admin"
        let shown = try await server.exchange(
            .GET, "/nevisfido/admin/user?username=alice", body: nil,
            headers: [("Authorization", "Bearer \(try await server.relyingParty.sign(claims))")])
        XCTAssertEqual(shown.status, 200)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: shown.body) as? [String: Any])
        let keys = try XCTUnwrap(report["keys"] as? [[String: Any]])
        XCTAssertEqual(keys.count, 1)
        return keys[0]
    }

    func testAnOperatorSeesTheAttestationAKeyRegisteredWithAndItsAppKeysCounter() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .require, authentication: .require))) { server in
            let key = SoftwareAppAttestKey()
            var authenticator = SoftwareAuthenticator()
            let registered = try await register(server, authenticator, attesting: key)
            XCTAssertEqual(registered.status, 1200)
            for counter in UInt32(1)...2 {
                let signedIn = try await authenticate(server, &authenticator, asserting: key, counter: counter)
                XCTAssertEqual(signedIn.status, 1200)
            }
            let shown = try await adminKey(server)
            let attestation = try XCTUnwrap(shown["appAttestation"] as? [String: Any])
            let verdict = try XCTUnwrap(attestation["verdict"] as? String)
            XCTAssertTrue(verdict.hasPrefix("require: apple key ") && verdict.hasSuffix("attested (\(Self.appID), development)"), verdict)
            XCTAssertEqual(attestation["appAttestKeyID"] as? String, Base64URL.encode(key.keyID))
            XCTAssertEqual(attestation["appID"] as? String, Self.appID)
            XCTAssertEqual(attestation["environment"] as? String, "development")
            XCTAssertEqual(attestation["counter"] as? Int, 2, "the install's key as it is now, after two logins")
            XCTAssertNotNil(attestation["lastUsedAt"] as? String)
        }
    }

    func testAKeyRegisteredUnderReportWithoutAttestationShowsTheRefusal() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .report))) { server in
            let registered = try await register(server, SoftwareAuthenticator(), attesting: nil)
            XCTAssertEqual(registered.status, 1200)
            let shown = try await adminKey(server)
            let attestation = try XCTUnwrap(shown["appAttestation"] as? [String: Any])
            XCTAssertEqual(attestation["verdict"] as? String, "report: refused: the app sent no attestation")
            XCTAssertNil(attestation["appAttestKeyID"])
        }
    }

    func testAKeyWhoseRegistrationAskedNothingShowsNoAppAttestation() async throws {
        try await InProcessServer.with(try configuration(nil)) { server in
            let registered = try await register(server, SoftwareAuthenticator(), attesting: nil)
            XCTAssertEqual(registered.status, 1200)
            let shown = try await adminKey(server)
            XCTAssertNil(shown["appAttestation"])
        }
    }

    func testOffAsksNothingAndIgnoresWhatAnAppSends() async throws {
        try await InProcessServer.with(try configuration(.init(registration: .off))) { server in
            let key = SoftwareAppAttestKey()
            let (status, request) = try await register(server, SoftwareAuthenticator(), attesting: key)
            XCTAssertEqual(status, 1200)
            XCTAssertNil(request.header.exts)
            let stored = try await server.server.stores.appAttestKeys.key(id: key.keyID)
            XCTAssertNil(stored, "nothing recorded")
            let events = try await auditEvents(server)
            XCTAssertTrue(self.events(events, "app attestation verified").isEmpty && self.events(events, "app attestation refused").isEmpty)
        }
    }

    // MARK: configuration

    func testAPolicyThatAsksWithoutAConfiguredAppIsRefusedAtStart() throws {
        var configuration = InProcessServer.configuration()
        configuration.policies = ["strict": .init(appAttestation: .init(registration: .require))]
        XCTAssertThrowsError(try configuration.validate()) { error in
            XCTAssertEqual(
                error as? ServerConfiguration.ConfigurationError,
                .invalid("policies.strict.appAttestation asks for app attestation, but appAttestation configures no app"))
        }
    }

    func testAnAppConfigurationIsCheckedAtStart() throws {
        let cases: [(ServerConfiguration.AppAttestation, String)] = [
            (.init(apple: .init(apps: [])), "appAttestation.apple.apps is empty: it accepts no app"),
            (
                .init(apple: .init(apps: [.init(teamId: "abcde12345", bundleId: "com.example.app")])),
                "appAttestation.apple.apps[0].teamId \"abcde12345\" is not a Team ID (10 of A-Z 0-9)"
            ),
            (
                .init(apple: .init(apps: [.init(teamId: "ABCDE12345", bundleId: "com.example.app.")])),
                "appAttestation.apple.apps[0].bundleId \"com.example.app.\" is not a bundle ID (A-Z a-z 0-9 - . and no leading or trailing dot)"
            ),
            (
                .init(apple: .init(apps: [Self.app], environments: ["staging"])),
                "appAttestation.apple.environments must list production and/or development, each once, not [\"staging\"]"
            ),
            (.init(), "appAttestation configures no platform: set appAttestation.apple or appAttestation.android"),
        ]
        for (section, message) in cases {
            var configuration = InProcessServer.configuration()
            configuration.appAttestation = section
            XCTAssertThrowsError(try configuration.validate(), message) { error in
                XCTAssertEqual(error as? ServerConfiguration.ConfigurationError, .invalid(message))
            }
        }
    }

    func testAnAppAttestationSectionReadsFromJSONAndRefusesAMisspeltKey() throws {
        let json = """
            {"appAttestation": {"apple": {"apps": [{"teamId": "ABCDE12345", "bundleId": "ch.nevis.mauth.virtualdevice"}]}},
             "policies": {"default": {"appAttestation": {"registration": "require", "authentication": "report"}}}}
            """
        let configuration = try JSONDecoder().decode(ServerConfiguration.self, from: Data(json.utf8))
        XCTAssertEqual(configuration.appAttestation?.apple?.appIDs, [Self.appID])
        XCTAssertEqual(configuration.appAttestation?.apple?.environments, ["production"], "production unless told otherwise")
        XCTAssertEqual(configuration.policies["default"]?.appAttestation, .init(registration: .require, authentication: .report))
        let misspelt = json.replacingOccurrences(of: "\"registration\": \"require\"", with: "\"registration\": \"required\"")
        XCTAssertThrowsError(try JSONDecoder().decode(ServerConfiguration.self, from: Data(misspelt.utf8)))
        let unknownKey = json.replacingOccurrences(of: "\"bundleId\"", with: "\"bundleID\"")
        XCTAssertThrowsError(try JSONDecoder().decode(ServerConfiguration.self, from: Data(unknownKey.utf8)))
    }

    // MARK: Android (Play Integrity)

    static let digest = "8P1sW0EPJcslw7UzRsiXL64w-O50Ed-RBICtay1g24M"

    /// A server that verifies `google`'s tokens for the test package, its keys in files, with `modes` in the default set.
    func androidConfiguration(_ google: SoftwarePlayIntegrity, _ modes: ServerConfiguration.AppAttestationModes) throws -> ServerConfiguration {
        var configuration = InProcessServer.configuration()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("play-integrity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: directory) }
        let decryption = directory.appendingPathComponent("decryption.key")
        let verification = directory.appendingPathComponent("verification.key")
        try google.decryptionKeyBase64.write(to: decryption, atomically: true, encoding: .utf8)
        try google.verificationKeyBase64.write(to: verification, atomically: true, encoding: .utf8)
        configuration.appAttestation = .init(
            android: .init(
                packageName: "ch.nevis.mauth.virtualdevice", certificateSha256Digests: [Self.digest], decryptionKeyPath: decryption.path,
                verificationKeyPath: verification.path))
        configuration.policies = ["default": .init(appAttestation: modes)]
        return configuration
    }

    func registerOnAndroid(_ server: InProcessServer, _ google: SoftwarePlayIntegrity, requestHash: ((String) -> String)? = nil) async throws -> Int {
        let request = try await server.registrationRequest(username: "alice")
        var response = try SoftwareAuthenticator().register(request, serverAppID: server.appID)
        let hash = requestHash?(response.fcParams) ?? AppAttestationWire.requestHash(fcParams: response.fcParams)
        let token = try google.token(
            .init(packageName: "ch.nevis.mauth.virtualdevice", certificateSha256Digests: [Self.digest]), requestHash: hash,
            timestamp: server.clock.now)
        response.header.exts = [try AppAttestationWire.Answer(platform: "android", playIntegrityToken: token).headerExtension()]
        return try await server.send("/nevisfido/uaf/1.1/registration", response).statusCode
    }

    func testRequireRegistersAnAndroidAppWithAPlayIntegrityTokenForThisOperation() async throws {
        let google = SoftwarePlayIntegrity()
        try await InProcessServer.with(try androidConfiguration(google, .init(registration: .require))) { server in
            let status = try await self.registerOnAndroid(server, google)
            XCTAssertEqual(status, 1200)
            let verified = self.events(try await self.auditEvents(server), "app attestation verified")
            XCTAssertEqual(
                verified,
                [
                    "registration: android ch.nevis.mauth.virtualdevice: PLAY_RECOGNIZED, MEETS_BASIC_INTEGRITY MEETS_DEVICE_INTEGRITY, LICENSED (require)"
                ])
        }
    }

    func testRequireRefusesAPlayIntegrityTokenMadeForAnotherRequest() async throws {
        let google = SoftwarePlayIntegrity()
        try await InProcessServer.with(try androidConfiguration(google, .init(registration: .require))) { server in
            let status = try await self.registerOnAndroid(server, google) { _ in AppAttestationWire.requestHash(fcParams: "another operation") }
            XCTAssertEqual(status, 1497)
            let refusals = self.events(try await self.auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals, ["registration: Play Integrity token refused: requestHashMismatch; refused"])
        }
    }

    func testRequireRefusesATokenUnderKeysTheServerWasNotGiven() async throws {
        try await InProcessServer.with(try androidConfiguration(SoftwarePlayIntegrity(), .init(registration: .require))) { server in
            let status = try await self.registerOnAndroid(server, SoftwarePlayIntegrity())
            XCTAssertEqual(status, 1497)
        }
    }

    func testAnAndroidConfigurationIsCheckedAtStart() throws {
        let cases: [(ServerConfiguration.AppAttestation.Android, String)] = [
            (
                .init(packageName: "bank", certificateSha256Digests: [Self.digest]),
                "appAttestation.android.packageName \"bank\" is not an Android package name"
            ),
            (
                .init(packageName: "ch.example.bank", certificateSha256Digests: []),
                "appAttestation.android.certificateSha256Digests is empty: it accepts no app"
            ),
            (
                .init(packageName: "ch.example.bank", certificateSha256Digests: ["AB:CD"]),
                "appAttestation.android.certificateSha256Digests: \"AB:CD\" is not a SHA-256 digest in base64url without padding"
            ),
            (
                .init(packageName: "ch.example.bank", certificateSha256Digests: [Self.digest], deviceIntegrity: "MEETS_VIRTUAL_INTEGRITY"),
                "appAttestation.android.deviceIntegrity must be MEETS_BASIC_INTEGRITY, MEETS_DEVICE_INTEGRITY, MEETS_STRONG_INTEGRITY or null, not MEETS_VIRTUAL_INTEGRITY"
            ),
            (
                .init(packageName: "ch.example.bank", certificateSha256Digests: [Self.digest], maximumAgeSeconds: 5),
                "appAttestation.android.maximumAgeSeconds must be 10...3600"
            ),
        ]
        for (android, message) in cases {
            var configuration = InProcessServer.configuration()
            configuration.appAttestation = .init(android: android)
            XCTAssertThrowsError(try configuration.validate(), message) { error in
                XCTAssertEqual(error as? ServerConfiguration.ConfigurationError, .invalid(message))
            }
        }
    }

    /// The keys are secrets: a bad one stops the start, and the message says where it came from, not what it holds.
    func testAPlayIntegrityKeyThatIsNotWhatTheConsoleShowsStopsTheStartWithoutShowingIt() throws {
        let android = ServerConfiguration.AppAttestation.Android(packageName: "ch.example.bank", certificateSha256Digests: [Self.digest])
        var configuration = InProcessServer.configuration()
        configuration.appAttestation = .init(android: android)
        let secret = "not-base64-secret!"
        let cases: [([String: String], String)] = [
            ([:], "appAttestation.android needs appAttestation.android.decryptionKeyPath or MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY"),
            (["MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY": secret], "MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY is not base64"),
            (
                ["MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY": Data(count: 16).base64EncodedString()],
                "the Play Integrity decryption key is not 32 bytes (AES-256)"
            ),
            (
                [
                    "MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY": Data(count: 32).base64EncodedString(),
                    "MAUTH_PLAY_INTEGRITY_VERIFICATION_KEY": Data(count: 91).base64EncodedString(),
                ],
                "the Play Integrity verification key is not a DER P-256 public key"
            ),
        ]
        for (environment, message) in cases {
            XCTAssertThrowsError(try AppAttestationSettings(configuration, environment: environment)) { error in
                XCTAssertEqual(error as? ServerConfiguration.ConfigurationError, .invalid(message))
                XCTAssertFalse("\(error)".contains(secret))
            }
        }
        let google = SoftwarePlayIntegrity()
        let settings = try AppAttestationSettings(
            configuration,
            environment: [
                "MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY": google.decryptionKeyBase64,
                "MAUTH_PLAY_INTEGRITY_VERIFICATION_KEY": google.verificationKeyBase64,
            ])
        XCTAssertNotNil(settings)
    }

    // MARK: Android (the UAF key's own key attestation)

    static let hardwareAAID = "F1D0#2001"
    static let verifiedLockedBoot = AndroidKeyDescription.RootOfTrust(
        verifiedBootKey: Array(repeating: 1, count: 32), deviceLocked: true, verifiedBootState: .verified)

    /// `androidConfiguration`, and metadata that trusts `keystore`'s hardware authenticator (full basic attestation).
    func keystoreConfiguration(
        _ google: SoftwarePlayIntegrity, _ keystore: SoftwareAndroidKeystore, _ modes: ServerConfiguration.AppAttestationModes
    ) throws -> ServerConfiguration {
        var configuration = try androidConfiguration(google, modes)
        configuration.metadataJSON = String(
            decoding: try JSONEncoder().encode([keystore.metadataStatement(aaid: Self.hardwareAAID)]), as: UTF8.self)
        return configuration
    }

    /// Registers alice with a hardware key whose key attestation names `package` (signed with the configured
    /// certificate) and `boot`, and a good Play Integrity token; the UAF status.
    func registerWithKeyAttestation(
        _ server: InProcessServer, _ google: SoftwarePlayIntegrity, _ keystore: SoftwareAndroidKeystore,
        package: String = "ch.nevis.mauth.virtualdevice", boot: AndroidKeyDescription.RootOfTrust? = verifiedLockedBoot
    ) async throws -> Int {
        let request = try await server.registrationRequest(username: "alice")
        var authenticator = SoftwareAuthenticator()
        authenticator.aaid = Self.hardwareAAID
        let application = AndroidKeyDescription.ApplicationID(
            packages: [.init(name: package, version: 42)], signatureDigests: [try XCTUnwrap(Base64URL.decodeBytes(Self.digest))])
        var response = try keystore.register(
            authenticator, request, serverAppID: server.appID, application: application, rootOfTrust: boot, now: server.clock.now)
        let token = try google.token(
            .init(packageName: "ch.nevis.mauth.virtualdevice", certificateSha256Digests: [Self.digest]),
            requestHash: AppAttestationWire.requestHash(fcParams: response.fcParams), timestamp: server.clock.now)
        response.header.exts = [try AppAttestationWire.Answer(platform: "android", playIntegrityToken: token).headerExtension()]
        return try await server.send("/nevisfido/uaf/1.1/registration", response).statusCode
    }

    func testAHardwareKeyAttestedForTheBanksAppOnAVerifiedLockedDeviceRegisters() async throws {
        let (google, keystore) = (SoftwarePlayIntegrity(), try SoftwareAndroidKeystore())
        try await InProcessServer.with(try keystoreConfiguration(google, keystore, .init(registration: .require))) { server in
            let status = try await self.registerWithKeyAttestation(server, google, keystore)
            XCTAssertEqual(status, 1200)
            let verified = self.events(try await self.auditEvents(server), "app attestation verified")
            XCTAssertEqual(verified.count, 1)
            XCTAssertTrue(
                verified[0].contains("; Android key attestation: ch.nevis.mauth.virtualdevice, boot verified, bootloader locked (require)"),
                verified[0])
        }
    }

    /// A good token does not vouch for a key another app made: the key's own attestation names that app.
    func testAHardwareKeyAttestedForAnotherAppIsRefusedDespiteAGoodToken() async throws {
        let (google, keystore) = (SoftwarePlayIntegrity(), try SoftwareAndroidKeystore())
        try await InProcessServer.with(try keystoreConfiguration(google, keystore, .init(registration: .require))) { server in
            let status = try await self.registerWithKeyAttestation(server, google, keystore, package: "com.example.repackaged")
            XCTAssertEqual(status, 1497)
            let refusals = self.events(try await self.auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals, ["registration: the Android key attestation names another app (\"com.example.repackaged\"); refused"])
            let keys = try await server.server.stores.registrations.registrations(username: "alice")
            XCTAssertTrue(keys.isEmpty)
        }
    }

    func testAHardwareKeyFromAnUnlockedBootloaderIsRefused() async throws {
        let (google, keystore) = (SoftwarePlayIntegrity(), try SoftwareAndroidKeystore())
        try await InProcessServer.with(try keystoreConfiguration(google, keystore, .init(registration: .require))) { server in
            let unlocked = AndroidKeyDescription.RootOfTrust(
                verifiedBootKey: Array(repeating: 1, count: 32), deviceLocked: false, verifiedBootState: .verified)
            let status = try await self.registerWithKeyAttestation(server, google, keystore, boot: unlocked)
            XCTAssertEqual(status, 1497)
            let refusals = self.events(try await self.auditEvents(server), "app attestation refused")
            XCTAssertEqual(refusals, ["registration: the device's bootloader is unlocked; refused"])
        }
    }
}
