import FIDOAttestation
import FIDOServerTesting
import FIDOSimulation
import Foundation
import NIOHTTP1
import NevisProtocol
import Primitives
import WireJSON
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// nevisFIDO's FIDO2 API in process: each ceremony's rules, its refusals and the route rules, with the software
/// passkey authenticator in the browser's place. The live tests (`PasskeyLiveTests`) repeat the flows over TLS on both
/// databases and across instances.
final class PasskeyRouteTests: XCTestCase {
    static let origin = "https://bank.example"

    static func configuration(_ change: (inout ServerConfiguration.FIDO2) -> Void = { _ in }) -> ServerConfiguration {
        var configuration = InProcessServer.configuration()
        var fido2 = ServerConfiguration.FIDO2(rpId: "bank.example", origins: [origin, "https://www.bank.example"])
        change(&fido2)
        configuration.fido2 = fido2
        return configuration
    }

    func with(_ configuration: ServerConfiguration = configuration(), _ body: (InProcessServer) async throws -> Void) async throws {
        try await InProcessServer.with(configuration, body)
    }

    func text(_ answer: TestAnswer) -> String { String(decoding: answer.body, as: UTF8.self) }

    // MARK: The flows

    func testPasskeySignInOpensTheSessionAUAFLoginOpens() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let registered = try await server.registerPasskey(&phone, username: "alice")
            XCTAssertEqual(registered.status, 200, text(registered))
            XCTAssertEqual(try fido2Response(registered).status, "ok")
            XCTAssertEqual(try fido2Response(registered).errorMessage, "")

            let signedIn = try await server.signInWithPasskey(&phone, username: "alice")
            XCTAssertEqual(signedIn.status, 200, text(signedIn))
            let token = try XCTUnwrap(try fido2Response(signedIn).token)
            let claims = try await server.server.tokenIssuer.verify(token, now: server.clock.now)
            XCTAssertEqual(claims.sub, "alice")
            XCTAssertEqual(claims.method, "passkey")
            XCTAssertEqual(claims.token_use, "authentication")
            XCTAssertEqual(claims.keyid, Base64URL.encode(phone.credentials[0].id))
            XCTAssertEqual(claims.aaid, "", "the JWT keeps its aaid claim, empty for a passkey (our contract)")
            // The session names the passkey that opened it, with no AAID.
            let session = try await server.server.stores.sessions.session(id: claims.sid, now: server.clock.now)
            XCTAssertEqual(session?.credential, .passkey(credentialID: Base64URL.encode(phone.credentials[0].id)))
            // The cookie is the UAF login's: it authorizes what a fresh UAF login authorizes, such as enrolling the app.
            let cookie = try XCTUnwrap(signedIn.headers.first(name: "Set-Cookie"))
            XCTAssertTrue(cookie.contains("HttpOnly; Secure; SameSite=Strict"))
            _ = try await server.registrationRequest(username: "alice", headers: [cookieHeader(cookie)])
            let stored = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(stored.count, 1)
            XCTAssertNotNil(stored[0].lastUsedAt)
            XCTAssertEqual(stored[0].discoverable, true)
            XCTAssertEqual(stored[0].transports, ["internal", "hybrid"])
        }
    }

    func testSignInWithoutAUsernameFindsTheUserByTheUserHandle() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "bob")
            let options = try await server.passkeyRequestOptions(username: "")
            XCTAssertEqual(options.allowCredentials, [])
            let answer = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: options))
            XCTAssertEqual(answer.status, 200, text(answer))
            let claims = try await server.server.tokenIssuer.verify(try XCTUnwrap(try fido2Response(answer).token), now: server.clock.now)
            XCTAssertEqual(claims.sub, "bob")
        }
    }

    func testSignInWithoutAUsernameNeedsTheUserHandle() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "bob")
            var credential = try InProcessServer.assertion(&phone, for: try await server.passkeyRequestOptions(username: ""))
            credential.response.userHandle = nil
            let answer = try await server.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(answer.status, 400)
            XCTAssertTrue(try fido2Response(answer).errorMessage.contains("user handle"), text(answer))
        }
    }

    func testEd25519PasskeyRegistersWhenOfferedFirst() async throws {
        try await with(Self.configuration { $0.algorithms = ["EdDSA", "ES256"] }) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let answer88 = try await server.registerPasskey(&phone, username: "carol", attestation: .packedSelf)
            XCTAssertEqual(answer88.status, 200)
            XCTAssertEqual(phone.credentials[0].algorithm, .edDSA)
            let answer90 = try await server.signInWithPasskey(&phone, username: "carol")
            XCTAssertEqual(answer90.status, 200)
            let answer91 = try await server.server.stores.passkeys.passkeys(username: "carol")
            XCTAssertEqual(answer91[0].attestationType, "self")
        }
    }

    func testRSAPasskeysRegisterAndSignInWithEachHash() async throws {
        for (name, algorithm) in [("RS256", SoftwarePasskeyAuthenticator.Algorithm.rs256), ("RS384", .rs384), ("RS512", .rs512)] {
            try await with(Self.configuration { $0.algorithms = [name] }) { server in
                var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
                let options = try await server.passkeyCreationOptions(username: "dana")
                XCTAssertEqual(options.pubKeyCredParams.map(\.alg), [algorithm.rawValue])
                let registered = try await server.fido2(
                    FIDO2API.attestationResultPath, try InProcessServer.attestation(&phone, for: options, attestation: .packedSelf))
                XCTAssertEqual(registered.status, 200, "\(name): \(text(registered))")
                XCTAssertEqual(phone.credentials.first?.algorithm, algorithm)
                let signedIn = try await server.signInWithPasskey(&phone, username: "dana")
                XCTAssertEqual(signedIn.status, 200, "\(name): \(text(signedIn))")
            }
        }
    }

    /// The answer of a client that ignores `options`' algorithms and makes an `algorithm` key.
    func registerIgnoringTheOffer(_ server: InProcessServer, _ options: FIDO2API.CreationOptions, algorithm: Int64) async throws -> TestAnswer {
        var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
        let made = try phone.create(
            rpID: "bank.example", challenge: Base64URL.decodeBytes(options.challenge)!, userHandle: Base64URL.decodeBytes(options.user.id)!,
            algorithms: [algorithm])
        return try await server.fido2(
            FIDO2API.attestationResultPath,
            FIDO2API.Credential(
                id: Base64URL.encode(made.credentialID),
                response: .init(clientDataJSON: Base64URL.encode(made.clientDataJSON), attestationObject: Base64URL.encode(made.attestationObject))))
    }

    func testPostQuantumPasskeysRegisterAndSignInOnlyWhereConfigured() async throws {
        for (name, algorithm) in [("ML-DSA-65", SoftwarePasskeyAuthenticator.Algorithm.mlDSA65), ("ML-DSA-87", .mlDSA87)] {
            try await with(Self.configuration { $0.algorithms = [name, "ES256"] }) { server in
                var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
                let options = try await server.passkeyCreationOptions(username: "quinn")
                XCTAssertEqual(options.pubKeyCredParams.map(\.alg), [algorithm.rawValue, -7])
                let registered = try await server.fido2(
                    FIDO2API.attestationResultPath, try InProcessServer.attestation(&phone, for: options, attestation: .packedSelf))
                XCTAssertEqual(registered.status, 200, "\(name): \(text(registered))")
                XCTAssertEqual(phone.credentials.first?.algorithm, algorithm)
                let signedIn = try await server.signInWithPasskey(&phone, username: "quinn")
                XCTAssertEqual(signedIn.status, 200, "\(name): \(text(signedIn))")
            }
        }
        try await with { server in
            let options = try await server.passkeyCreationOptions(username: "quinn")
            XCTAssertEqual(options.pubKeyCredParams.map(\.alg), [-7, -8], "not offered unless configured")
            let refused = try await registerIgnoringTheOffer(server, options, algorithm: -49)
            XCTAssertEqual(refused.status, 400)
            XCTAssertTrue(try fido2Response(refused).errorMessage.contains("-49 was not offered"), text(refused))
        }
    }

    func testAPasskeyOfAnAlgorithmNotOfferedIsRefused() async throws {
        try await with(Self.configuration { $0.algorithms = ["RS384"] }) { server in
            let options = try await server.passkeyCreationOptions(username: "dana")
            // A client that ignores pubKeyCredParams and makes an RS256 key.
            let answer = try await registerIgnoringTheOffer(server, options, algorithm: -257)
            XCTAssertEqual(answer.status, 400)
            XCTAssertEqual(try fido2Response(answer).errorCode, "registration_refused")
            XCTAssertTrue(try fido2Response(answer).errorMessage.contains("-257"), text(answer))
        }
    }

    // MARK: Hints and conveyance

    func testTheRequestsHintsAreEchoedAndTheConfiguredOnesFillIn() async throws {
        try await with(Self.configuration { $0.hints = ["security-key"] }) { server in
            let configured = try await server.passkeyCreationOptions(username: "alice")
            XCTAssertEqual(configured.hints, ["security-key"])
            let signIn = try await server.passkeyRequestOptions(username: "alice")
            XCTAssertEqual(signIn.hints, ["security-key"])
            let asked = try await server.fido2(
                FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "", hints: ["client-device", "hybrid"]))
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.RequestOptions.self, from: asked.body).hints, ["client-device", "hybrid"])
            let none = try await server.fido2(FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "", hints: []))
            XCTAssertFalse(text(none).contains("hints"), "an empty list asks for none: \(text(none))")
        }
        try await with { server in
            let options = try await server.passkeyCreationOptions(username: "alice")
            XCTAssertNil(options.hints, "none configured, none asked")
        }
    }

    func testAnUnknownOrRepeatedHintIs400() async throws {
        try await with { server in
            for hints in [["usb"], ["hybrid", "hybrid"]] {
                let answer = try await server.fido2(FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "", hints: hints))
                XCTAssertEqual(answer.status, 400, "\(hints)")
                XCTAssertTrue(try fido2Response(answer).errorMessage.hasPrefix("hints: "), text(answer))
            }
        }
    }

    func testTheConfiguredConveyanceIsAskedForAndARequestStillChooses() async throws {
        try await with(Self.configuration { $0.attestationConveyance = "direct" }) { server in
            let options = try await server.passkeyCreationOptions(username: "alice")
            XCTAssertEqual(options.attestation, "direct")
            let asked = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice", attestation: "none"),
                headers: try await server.bearer("alice"))
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: asked.body).attestation, "none")
        }
        try await with(
            Self.configuration {
                $0.attestationPolicy = "enterprise"
                $0.attestationConveyance = "enterprise"
            }
        ) { server in
            let options = try await server.passkeyCreationOptions(username: "alice")
            XCTAssertEqual(options.attestation, "enterprise")
            let raised = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice", attestation: "none"),
                headers: try await server.bearer("alice"))
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: raised.body).attestation, "direct")
        }
    }

    // MARK: Conditional create

    func testAConditionalCreateMayLackUserPresenceAndAnyOtherRegistrationMayNot() async throws {
        try await with { server in
            for mediation in [nil, "conditional"] as [String?] {
                var browser = SoftwarePasskeyAuthenticator(origin: Self.origin)
                browser.presentAtCreation = false
                let username = "upgrade-\(mediation ?? "modal")"
                let answer = try await server.fido2(
                    FIDO2API.attestationOptionsPath,
                    FIDO2API.OptionsRequest(username: username, displayName: username, mediation: mediation),
                    headers: try await server.bearer(username))
                let options = try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: answer.body)
                let registered = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&browser, for: options))
                if mediation == nil {
                    XCTAssertEqual(registered.status, 400, text(registered))
                    XCTAssertTrue(try fido2Response(registered).errorMessage.contains("user was not present"), text(registered))
                } else {
                    XCTAssertEqual(registered.status, 200, text(registered))
                    let signedIn = try await server.signInWithPasskey(&browser, username: username)
                    XCTAssertEqual(signedIn.status, 200, "a sign-in still needs presence, which the authenticator gives: \(text(signedIn))")
                }
            }
            let refused = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "eve", displayName: "Eve", mediation: "silent"),
                headers: try await server.bearer("eve"))
            XCTAssertEqual(refused.status, 400)
            XCTAssertEqual(try fido2Response(refused).errorMessage, "mediation must be conditional or absent")
        }
    }

    // MARK: Extensions

    func testTheConfiguredExtensionsAreAskedForAndThePolicyOverridesTheRequest() async throws {
        let configuration = Self.configuration {
            $0.credentialProtection = .init(policy: "userVerificationRequired", enforce: true)
            $0.largeBlob = "preferred"
            $0.prf = true
        }
        try await with(configuration) { server in
            let answer = try await server.fido2(
                FIDO2API.attestationOptionsPath,
                FIDO2API.OptionsRequest(
                    username: "alice", displayName: "Alice",
                    extensions: [
                        "credentialProtectionPolicy": .string("userVerificationOptional"), "enforceCredentialProtectionPolicy": .bool(false),
                    ]),
                headers: try await server.bearer("alice"))
            let extensions = try XCTUnwrap(try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: answer.body).extensions)
            XCTAssertEqual(extensions["credentialProtectionPolicy"], .string("userVerificationRequired"))
            XCTAssertEqual(extensions["enforceCredentialProtectionPolicy"], .bool(true))
            XCTAssertEqual(extensions["largeBlob"], .object(["support": .string("preferred")]))
            XCTAssertEqual(extensions["prf"], .object([:]))
            XCTAssertEqual(extensions["credProps"], .bool(true))
            let signIn = try await server.passkeyRequestOptions(username: "alice")
            XCTAssertNil(signIn.extensions, "the page brings its own prf salts and largeBlob reads")
        }
    }

    func testEnforcedCredentialProtectionRefusesAnAuthenticatorThatDidNotApplyIt() async throws {
        try await with(Self.configuration { $0.credentialProtection = .init(policy: "userVerificationRequired", enforce: true) }) { server in
            for (reported, expected) in [(nil, "no credProtect"), (2, "credProtect 2")] as [(Int?, String)] {
                var key = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false, counts: true)
                key.credentialProtection = reported
                let refused = try await server.registerPasskey(&key, username: "alice")
                XCTAssertEqual(refused.status, 400)
                XCTAssertEqual(
                    try fido2Response(refused).errorMessage,
                    "the authenticator did not apply credential protection userVerificationRequired (it reported \(expected))")
            }
            var key = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false, counts: true)
            key.credentialProtection = 3
            let registered = try await server.registerPasskey(&key, username: "alice")
            XCTAssertEqual(registered.status, 200, text(registered))
            await server.server.audit?.flush()
            let events = try await server.server.stores.audit.events(username: "alice", limit: 20)
            XCTAssertTrue(events.contains { $0.detail.contains("credProtect 3") }, "\(events.map(\.detail))")
        }
    }

    func testUnenforcedCredentialProtectionRegistersAPasskeyThatReportsNone() async throws {
        try await with(Self.configuration { $0.credentialProtection = .init(policy: "userVerificationRequired") }) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let registered = try await server.registerPasskey(&phone, username: "alice")
            XCTAssertEqual(registered.status, 200, text(registered))
        }
    }

    func testPRFAndLargeBlobOutputsAreAcceptedAndNotKept() async throws {
        try await with(
            Self.configuration {
                $0.prf = true
                $0.largeBlob = "preferred"
            }
        ) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let options = try await server.passkeyCreationOptions(username: "alice")
            let credential = try InProcessServer.attestation(&phone, for: options)
            var body = try XCTUnwrap(try JSONSerialization.jsonObject(with: JSONEncoder().encode(credential)) as? [String: Any])
            let secret = Base64URL.encode([UInt8](repeating: 0xC3, count: 32))
            body["clientExtensionResults"] = [
                "credProps": ["rk": true], "prf": ["enabled": true, "results": ["first": secret]], "largeBlob": ["supported": true],
            ]
            let answer = try await server.exchange(
                .POST, FIDO2API.attestationResultPath, body: try JSONSerialization.data(withJSONObject: body), contentType: "application/json")
            XCTAssertEqual(answer.status, 200, text(answer))
            let stored = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(stored.count, 1)
            XCTAssertFalse(String(describing: stored[0]).contains(secret), "a PRF output reached the passkey's record")
        }
    }

    // MARK: Her own passkeys

    static let iCloudKeychain: [UInt8] = AAGUID.bytes("fbfc3007-154e-4ecc-8c0b-6e020557d7bd")!

    /// A session of `username` opened by a sign-in with `authenticator`: its cookie header and JWT.
    func session(
        _ server: InProcessServer, _ authenticator: inout SoftwarePasskeyAuthenticator, _ username: String
    ) async throws -> (
        cookie: (String, String), bearer: (String, String)
    ) {
        let signedIn = try await server.signInWithPasskey(&authenticator, username: username)
        XCTAssertEqual(signedIn.status, 200, text(signedIn))
        return (
            cookieHeader(try XCTUnwrap(signedIn.headers.first(name: "Set-Cookie"))),
            ("Authorization", "Bearer \(try XCTUnwrap(try fido2Response(signedIn).token))")
        )
    }

    func passkeys(
        _ server: InProcessServer, _ method: HTTPMethod = .GET, _ path: String = FIDO2API.passkeysPath, body: String? = nil,
        as headers: [(String, String)]
    )
        async throws -> TestAnswer
    {
        try await server.exchange(method, path, body: body.map { Data($0.utf8) }, contentType: "application/json", headers: headers)
    }

    func list(_ answer: TestAnswer) throws -> FIDO2API.PasskeyList { try JSONDecoder().decode(FIDO2API.PasskeyList.self, from: answer.body) }

    func testHerSessionListsHerPasskeysWithWhatTheSignalsNeed() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin, aaguid: Self.iCloudKeychain)
            var key = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false, counts: true)
            try await server.registerPasskey(&phone, username: "alice")
            try await server.registerPasskey(&key, username: "alice")
            let (cookie, bearer) = try await session(server, &phone, "alice")
            for credentials in [cookie, bearer] {
                let answer = try await passkeys(server, as: [credentials])
                XCTAssertEqual(answer.status, 200, text(answer))
                XCTAssertEqual(answer.headers.first(name: "Cache-Control"), "no-store")
                let listed = try list(answer)
                let ids = [phone.credentials[0].id, key.credentials[0].id].map(Base64URL.encode)
                XCTAssertEqual(listed.rpId, "bank.example")
                XCTAssertEqual(listed.passkeys.map(\.credentialId), ids, "oldest first")
                XCTAssertEqual(listed.allAcceptedCredentialIds, ids)
                XCTAssertEqual(listed.user, .init(name: "alice", id: Base64URL.encode(phone.credentials[0].userHandle), displayName: "alice"))
                XCTAssertEqual(listed.passkeys[0].providerName, "iCloud Keychain")
                XCTAssertEqual(listed.passkeys[0].backedUp, true)
                XCTAssertNotNil(listed.passkeys[0].lastUsedAt)
                XCTAssertNil(listed.passkeys[1].providerName, "the all-zero AAGUID names no provider")
                XCTAssertEqual(listed.passkeys[1].backupEligible, false)
                XCTAssertNil(listed.passkeys[1].lastUsedAt)
            }
        }
    }

    func testOnlyACallerWhoMayAddHerCredentialsReachesHerPasskeys() async throws {
        try await with { server in
            var alice = SoftwarePasskeyAuthenticator(origin: Self.origin)
            var bob = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&alice, username: "alice")
            try await server.registerPasskey(&bob, username: "bob")
            let (bobs, _) = try await session(server, &bob, "bob")
            let aliceID = Base64URL.encode(alice.credentials[0].id)
            let forbidden = try await passkeys(server, .GET, FIDO2API.passkeysPath + "?username=alice", as: [bobs])
            XCTAssertEqual(forbidden.status, 403, text(forbidden))
            let own = try list(try await passkeys(server, as: [bobs]))
            XCTAssertEqual(own.allAcceptedCredentialIds, [Base64URL.encode(bob.credentials[0].id)], "without a username: his own")
            // Another user's credential ID in the path is not his: the same 404 as one that does not exist.
            let rename = try await passkeys(server, .PATCH, "\(FIDO2API.passkeysPath)/\(aliceID)", body: #"{"name":"mine"}"#, as: [bobs])
            XCTAssertEqual(rename.status, 404, text(rename))
            let removal = try await passkeys(server, .DELETE, "\(FIDO2API.passkeysPath)/\(aliceID)", as: [bobs])
            XCTAssertEqual(removal.status, 404, text(removal))
            let anonymous = try await passkeys(server, as: [])
            XCTAssertEqual(anonymous.status, 401)
            // The relying party's token for her, naming her.
            let relyingParty = try await passkeys(server, .GET, FIDO2API.passkeysPath + "?username=alice", as: try await server.bearer("alice"))
            XCTAssertEqual(try list(relyingParty).allAcceptedCredentialIds, [aliceID])
            let stillHers = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertNil(stillHers[0].name)
        }
    }

    func testARenameNamesHerPasskeyAndABadNameIs400() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let (cookie, _) = try await session(server, &phone, "alice")
            let path = "\(FIDO2API.passkeysPath)/\(Base64URL.encode(phone.credentials[0].id))"
            let renamed = try await passkeys(server, .PATCH, path, body: #"{"name":"Alice's iPhone"}"#, as: [cookie])
            XCTAssertEqual(renamed.status, 200, text(renamed))
            XCTAssertEqual(try list(renamed).passkeys.first?.name, "Alice's iPhone")
            for body in [#"{"name":""}"#, #"{"name":"a\nb"}"#, #"{"name":"\#(String(repeating: "x", count: 257))"}"#, #"{}"#] {
                let refused = try await passkeys(server, .PATCH, path, body: body, as: [cookie])
                XCTAssertEqual(refused.status, 400, body)
                XCTAssertEqual(try fido2Response(refused).status, "failed")
            }
            let stored = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(stored.first?.name, "Alice's iPhone")
        }
    }

    func testRemovingAPasskeyEndsItsSessionsAndHerLastOneIsKept() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            var laptop = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            try await server.registerPasskey(&laptop, username: "alice")
            let (phoneSession, _) = try await session(server, &phone, "alice")
            let (_, laptopToken) = try await session(server, &laptop, "alice")
            let laptopID = Base64URL.encode(laptop.credentials[0].id)
            let removed = try await passkeys(server, .DELETE, "\(FIDO2API.passkeysPath)/\(laptopID)", as: [phoneSession])
            XCTAssertEqual(removed.status, 200, text(removed))
            XCTAssertEqual(try list(removed).removed, laptopID)
            XCTAssertEqual(try list(removed).allAcceptedCredentialIds, [Base64URL.encode(phone.credentials[0].id)])
            let laptopSignedOut = try await passkeys(server, as: [laptopToken])
            XCTAssertEqual(laptopSignedOut.status, 401, "the removed passkey's session ended")
            let phoneID = Base64URL.encode(phone.credentials[0].id)
            let last = try await passkeys(server, .DELETE, "\(FIDO2API.passkeysPath)/\(phoneID)", as: [phoneSession])
            XCTAssertEqual(last.status, 409, text(last))
            XCTAssertEqual(try fido2Response(last).errorCode, "last_credential")
            let kept = try await server.server.stores.passkeys.count(username: "alice")
            XCTAssertEqual(kept, 1)
        }
    }

    func testTheLastPasskeyGoesWhereTheRelyingPartyAllowsItAndTheSignalStillNamesHer() async throws {
        try await with(Self.configuration { $0.allowRemovingLastCredential = true }) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let (cookie, _) = try await session(server, &phone, "alice")
            let id = Base64URL.encode(phone.credentials[0].id)
            let removed = try await passkeys(server, .DELETE, "\(FIDO2API.passkeysPath)/\(id)", as: [cookie])
            XCTAssertEqual(removed.status, 200, text(removed))
            let answer = try list(removed)
            XCTAssertEqual(answer.allAcceptedCredentialIds, [])
            XCTAssertEqual(answer.user?.id, Base64URL.encode(phone.credentials[0].userHandle), "signalAllAcceptedCredentials needs her user handle")
        }
    }

    func testRemovingAPasskeyNeedsARecentSignIn() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            var laptop = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            try await server.registerPasskey(&laptop, username: "alice")
            let (cookie, _) = try await session(server, &phone, "alice")
            server.clock.advance(TimeInterval(Self.configuration().tokens.recentAuthenticationSeconds + 1))
            let refused = try await passkeys(server, .DELETE, "\(FIDO2API.passkeysPath)/\(Base64URL.encode(laptop.credentials[0].id))", as: [cookie])
            XCTAssertEqual(refused.status, 403, text(refused))
            let listed = try await passkeys(server, as: [cookie])
            XCTAssertEqual(listed.status, 200, "listing needs no recent sign-in")
        }
    }

    func testTheOperatorRenamesAPasskeyAndSeesItsProvider() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin, aaguid: Self.iCloudKeychain)
            try await server.registerPasskey(&phone, username: "alice")
            let id = Base64URL.encode(phone.credentials[0].id)
            let renamed = try await server.exchange(
                .PATCH, "/nevisfido/admin/user/passkeys/\(id)?username=alice", body: Data(#"{"name":"Work phone"}"#.utf8),
                contentType: "application/json", headers: try await adminHeaders(server))
            XCTAssertEqual(renamed.status, 200, text(renamed))
            XCTAssertEqual(text(renamed), #"{"credentialID":"\#(id)","name":"Work phone"}"#)
            let shown = try await server.exchange(
                .GET, "/nevisfido/admin/user?username=alice", body: nil, contentType: "application/json", headers: try await adminHeaders(server))
            XCTAssertTrue(text(shown).contains(#""name":"Work phone""#), text(shown))
            XCTAssertTrue(text(shown).contains(#""providerName":"iCloud Keychain""#), text(shown))
            let notHers = try await server.exchange(
                .PATCH, "/nevisfido/admin/user/passkeys/\(id)?username=bob", body: Data(#"{"name":"x"}"#.utf8),
                contentType: "application/json", headers: try await adminHeaders(server))
            XCTAssertEqual(notHers.status, 404)
        }
    }

    // MARK: Who may ask

    func testRegistrationOptionsWithoutCredentialsAre401() async throws {
        try await with { server in
            let answer = try await server.fido2(FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice"))
            XCTAssertEqual(answer.status, 401)
        }
    }

    func testRegistrationOptionsWithAnotherUsersTokenAre403() async throws {
        try await with { server in
            let answer = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice"),
                headers: try await server.bearer("mallory"))
            XCTAssertEqual(answer.status, 403)
        }
    }

    func testRegistrationOptionsWithAnOldSessionAre403() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let signedIn = try await server.signInWithPasskey(&phone, username: "alice")
            let cookie = try XCTUnwrap(signedIn.headers.first(name: "Set-Cookie"))
            server.clock.advance(301)
            let answer = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice"),
                headers: [cookieHeader(cookie)])
            XCTAssertEqual(answer.status, 403)
        }
    }

    func testAnInvalidCredentialOnTheOpenOptionsIs401NotAnonymous() async throws {
        try await with { server in
            let answer = try await server.fido2(
                FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "alice"),
                headers: [("Authorization", "Bearer not-a-token")])
            XCTAssertEqual(answer.status, 401)
        }
    }

    // MARK: allowCredentials for a typed username

    /// The default, as every peer does: the browser offers only her passkeys; a username without any gets none.
    func testAUsernameFirstSignInListsHerCredentialsToAnyoneByDefault() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let anonymous = try await server.passkeyRequestOptions(username: "alice")
            XCTAssertEqual(anonymous.allowCredentials.map(\.id), [Base64URL.encode(phone.credentials[0].id)])
            XCTAssertEqual(anonymous.allowCredentials[0].transports, ["internal", "hybrid"])
            let nobody = try await server.passkeyRequestOptions(username: "nobody")
            XCTAssertEqual(nobody.allowCredentials, [])
            // The list narrows the sign-in: her passkey answers it.
            let signIn = try await server.signInWithPasskey(&phone, username: "alice")
            XCTAssertEqual(signIn.status, 200)
        }
    }

    func testAuthorizedCallersModeListsNothingToAnAnonymousCaller() async throws {
        try await with(Self.configuration { $0.allowCredentials = "authorizedCallers" }) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            for name in ["alice", "nobody"] {
                let options = try await server.passkeyRequestOptions(username: name)
                XCTAssertEqual(options.allowCredentials, [], name)
            }
            let authorized = try await server.passkeyRequestOptions(username: "alice", headers: try await server.bearer("alice"))
            XCTAssertEqual(authorized.allowCredentials.map(\.id), [Base64URL.encode(phone.credentials[0].id)])
        }
    }

    /// Decoys: an unknown username gets credential IDs of the usual shape, the same every time, different per name.
    func testADecoyListForAnUnknownUsernameHasTheShapeOfARealOneAndDoesNotChange() async throws {
        try await with(Self.configuration { $0.allowCredentials = "listWithDecoys" }) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let real = try await server.passkeyRequestOptions(username: "alice").allowCredentials
            XCTAssertEqual(real.map(\.id), [Base64URL.encode(phone.credentials[0].id)], "a user with passkeys gets hers, not decoys")
            var seen: Set<[String]> = []
            for name in ["nobody", "mallory", "eve", "trent", "peggy", "victor", "walter", "oscar"] {
                let first = try await server.passkeyRequestOptions(username: name).allowCredentials
                let again = try await server.passkeyRequestOptions(username: name).allowCredentials
                XCTAssertEqual(first, again, "\(name): decoys must not change between calls")
                XCTAssertTrue((1...2).contains(first.count), "\(name): \(first.count)")
                for decoy in first {
                    XCTAssertEqual(decoy.type, "public-key")
                    XCTAssertTrue([16, 20, 32, 64].contains(Base64URL.decodeBytes(decoy.id)?.count ?? 0), decoy.id)
                    XCTAssertEqual(decoy.transports, ["hybrid", "internal"])
                }
                seen.insert(first.map(\.id))
            }
            XCTAssertEqual(seen.count, 8, "each username its own decoys")
        }
    }

    func testAuthorizedCallerAskingForAUserWithoutPasskeysGets404() async throws {
        try await with { server in
            let answer = try await server.fido2(
                FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "alice"),
                headers: try await server.bearer("alice"))
            XCTAssertEqual(answer.status, 404)
            XCTAssertEqual(try fido2Response(answer).status, "failed")
        }
    }

    func testUnansweredRegistrationsAreCappedPerUser() async throws {
        var configuration = Self.configuration()
        configuration.limits.outstandingRequestsPerUsername = 2
        try await with(configuration) { server in
            _ = try await server.passkeyCreationOptions(username: "alice")
            _ = try await server.passkeyCreationOptions(username: "alice")
            let answer = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice"),
                headers: try await server.bearer("alice"))
            XCTAssertEqual(answer.status, 429)
            XCTAssertEqual(answer.headers.first(name: "Retry-After"), "300")
            // Anonymous sign-in options naming her are not counted: they cannot lock her out.
            for _ in 0..<3 { _ = try await server.passkeyRequestOptions(username: "alice") }
        }
    }

    // MARK: The status service

    func testStatusFollowsARegistrationAndASignInWithoutAUsername() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let creation = try await server.passkeyCreationOptions(username: "alice")
            let issued = try await server.passkeyStatus(creation.fido2SessionId)
            XCTAssertEqual(issued, .init(status: .initialized, fido2SessionId: creation.fido2SessionId, operation: "registration", username: "alice"))
            let registered = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&phone, for: creation))
            XCTAssertEqual(registered.status, 200, text(registered))
            let afterRegistration = try await server.passkeyStatus(creation.fido2SessionId)
            XCTAssertEqual(afterRegistration.status, .succeeded)
            XCTAssertEqual(afterRegistration.errorMessage, "")

            let options = try await server.passkeyRequestOptions(username: "")
            let waiting = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(waiting, .init(status: .initialized, fido2SessionId: options.fido2SessionId, operation: "authentication"))
            let signedIn = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: options))
            XCTAssertEqual(signedIn.status, 200, text(signedIn))
            let afterSignIn = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(afterSignIn.status, .succeeded)
            XCTAssertEqual(afterSignIn.username, "alice", "a sign-in without a username reports who signed in")
        }
    }

    func testStatusOfARefusedSignInIsFailedWithTheWordsItsCallerHeard() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let options = try await server.passkeyRequestOptions(username: "alice")
            var credential = try InProcessServer.assertion(&phone, for: options)
            credential.response.signature = Base64URL.encode([0])
            let refused = try await server.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(refused.status, 400)
            let status = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(status.status, .failed)
            XCTAssertEqual(status.errorMessage, try fido2Response(refused).errorMessage)
            // A replay of the same answer changes nothing: the first outcome is final.
            _ = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&phone, for: options))
            let final = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(final.status, .failed)
        }
    }

    func testStatusOfACeremonyNobodyAnsweredIsFailedAfterItExpiresAndUnknownAfterTheRetention() async throws {
        var configuration = Self.configuration()
        configuration.limits.statusRetentionSeconds = 600
        try await with(configuration) { server in
            let options = try await server.passkeyRequestOptions(username: "alice")
            let purger = ExpiryPurger(
                stores: server.server.stores, clock: { server.clock.now }, interval: .seconds(1), ceremonyRetention: 600, logger: .init(label: "test")
            )
            server.clock.advance(301)
            _ = await purger.purgeOnce(payloadsClearedUntil: .distantPast)
            let expired = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(expired.status, .failed)
            XCTAssertEqual(expired.errorMessage, "nothing answered the ceremony before it expired")
            server.clock.advance(598)
            _ = await purger.purgeOnce(payloadsClearedUntil: .distantPast)
            let kept = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(kept.status, .failed, "kept the retention past its expiry")
            server.clock.advance(2)
            _ = await purger.purgeOnce(payloadsClearedUntil: .distantPast)
            let gone = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(gone, .init(status: .unknown, fido2SessionId: options.fido2SessionId))
        }
    }

    func testStatusReadsEitherNameOfTheSessionIdAndRefusesABodyWithNeitherOrBoth() async throws {
        try await with { server in
            let options = try await server.passkeyRequestOptions(username: "alice")
            let never = try await server.passkeyStatus("0123456789abcdef")
            XCTAssertEqual(never, .init(status: .unknown, fido2SessionId: "0123456789abcdef"))
            let id = options.fido2SessionId
            let bodies: [(String, Int)] = [
                (#"{"sessionId":"\#(id)"}"#, 200), (#"{}"#, 400), (#"{"sessionId":"\#(id)","fido2SessionId":"\#(id)"}"#, 400),
                (#"{"fido2SessionId":7}"#, 400), (#"{"fido2SessionId":"\#(String(repeating: "a", count: 129))"}"#, 400),
                (#"{"fido2SessionId":""}"#, 400),
            ]
            for (body, expected) in bodies {
                let answer = try await server.exchange(.POST, FIDO2API.statusPath, body: Data(body.utf8), contentType: "application/json")
                XCTAssertEqual(answer.status, expected, body)
                if expected == 200 {
                    XCTAssertEqual(try JSONDecoder().decode(FIDO2API.StatusResponse.self, from: answer.body).status, .initialized)
                } else {
                    XCTAssertEqual(try fido2Response(answer).status, "failed", body)
                }
            }
            let get = try await server.exchange(.GET, FIDO2API.statusPath, body: nil, contentType: "application/json")
            XCTAssertEqual(get.status, 405)
        }
    }

    // MARK: Signals

    func testOnlyACredentialNobodyHoldsIsSignalledUnknown() async throws {
        try await with(Self.configuration { $0.allowCredentials = "listWithDecoys" }) { server in
            var alice = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&alice, username: "alice")
            // A passkey the relying party no longer has (removed, or registered elsewhere): signalled.
            var stranger = SoftwarePasskeyAuthenticator(origin: Self.origin)
            _ = try stranger.create(rpID: "bank.example", challenge: Array(repeating: 7, count: 32), userHandle: [9, 9])
            let unknown = try await server.fido2(
                FIDO2API.assertionResultPath, try InProcessServer.assertion(&stranger, for: try await server.passkeyRequestOptions(username: "")))
            XCTAssertEqual(unknown.status, 400)
            XCTAssertEqual(try fido2Response(unknown).errorCode, FIDO2API.ErrorCode.unknownCredential, text(unknown))
            XCTAssertEqual(try fido2Response(unknown).errorMessage, "the credential is not registered for this relying party and user")
            // Alice's passkey used for bob's sign-in is hers: not signalled, or her provider would drop it.
            var forBob = try await server.passkeyRequestOptions(username: "bob")
            let decoys = forBob.allowCredentials
            forBob.allowCredentials = []
            let hers = try await server.fido2(FIDO2API.assertionResultPath, try InProcessServer.assertion(&alice, for: forBob))
            XCTAssertEqual(try fido2Response(hers).errorCode, "authentication_refused", text(hers))
            XCTAssertEqual(try fido2Response(hers).errorMessage, try fido2Response(unknown).errorMessage)
            // A decoy bob's options listed answers as a real credential with a bad signature would: not signalled.
            XCTAssertFalse(decoys.isEmpty)
            var probing = try await server.passkeyRequestOptions(username: "bob")
            probing.allowCredentials = []
            var probe = try InProcessServer.assertion(&stranger, for: probing)
            probe.id = decoys[0].id
            probe.rawId = decoys[0].id
            let decoy = try await server.fido2(FIDO2API.assertionResultPath, probe)
            XCTAssertEqual(try fido2Response(decoy).errorCode, "authentication_refused", text(decoy))
            var forged = try InProcessServer.assertion(&alice, for: try await server.passkeyRequestOptions(username: "alice"))
            forged.response.signature = Base64URL.encode([0])
            let badSignature = try await server.fido2(FIDO2API.assertionResultPath, forged)
            XCTAssertEqual(try fido2Response(badSignature).errorCode, "authentication_refused", text(badSignature))
        }
    }

    // MARK: Challenges

    func testAnsweredChallengeIsRefusedTheSecondTime() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let credential = try InProcessServer.assertion(&phone, for: try await server.passkeyRequestOptions(username: "alice"))
            let answer185 = try await server.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(answer185.status, 200)
            let replay = try await server.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(replay.status, 400)
            XCTAssertEqual(try fido2Response(replay).errorMessage, "the challenge is unknown, expired or already answered")
        }
    }

    /// A sign-in's answer only reads its ceremony; a refused one must still spend the challenge, so the refusal
    /// (not only the completion) takes the ceremony.
    func testAForgedSignInAnswerSpendsTheChallengeForTheGenuineOne() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let options = try await server.passkeyRequestOptions(username: "alice")
            let genuine = try InProcessServer.assertion(&phone, for: options)
            var forged = genuine
            var signature = try XCTUnwrap(Base64URL.decodeBytes(try XCTUnwrap(genuine.response.signature)))
            signature[signature.count - 1] ^= 0x01
            forged.response.signature = Base64URL.encode(signature)
            let refused = try await server.fido2(FIDO2API.assertionResultPath, forged)
            XCTAssertEqual(refused.status, 400, text(refused))
            let late = try await server.fido2(FIDO2API.assertionResultPath, genuine)
            XCTAssertEqual(late.status, 400, text(late))
            XCTAssertEqual(try fido2Response(late).errorMessage, "the challenge is unknown, expired or already answered")
            XCTAssertNil(late.headers.first(name: "Set-Cookie"), "the genuine answer opened a session after a forged one")
            let status = try await server.passkeyStatus(options.fido2SessionId)
            XCTAssertEqual(status.status, .failed)
            XCTAssertEqual(status.errorMessage, try fido2Response(refused).errorMessage)
        }
    }

    func testExpiredChallengeIsRefused() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let options = try await server.passkeyCreationOptions(username: "alice")
            server.clock.advance(301)
            let answer = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&phone, for: options))
            XCTAssertEqual(answer.status, 400)
            let answer199 = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(answer199.count, 0)
        }
    }

    func testAuthenticationChallengeDoesNotRegister() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let sign = try await server.passkeyRequestOptions(username: "alice")
            let made = try phone.create(rpID: "bank.example", challenge: Base64URL.decodeBytes(sign.challenge)!, userHandle: [1, 2, 3])
            let answer = try await server.fido2(
                FIDO2API.attestationResultPath,
                FIDO2API.Credential(
                    id: Base64URL.encode(made.credentialID),
                    response: .init(
                        clientDataJSON: Base64URL.encode(made.clientDataJSON),
                        attestationObject: Base64URL.encode(made.attestationObject))))
            XCTAssertEqual(answer.status, 400)
            XCTAssertEqual(try fido2Response(answer).errorMessage, "the challenge was issued for authentication")
        }
    }

    // MARK: What the ceremonies refuse

    func testOriginNotConfiguredIsRefused() async throws {
        try await with { server in
            var phishing = SoftwarePasskeyAuthenticator(origin: "https://bank-example.evil")
            let answer = try await server.registerPasskey(&phishing, username: "alice")
            XCTAssertEqual(answer.status, 400)
            XCTAssertTrue(try fido2Response(answer).errorMessage.contains("https://bank-example.evil"), text(answer))
            XCTAssertTrue(try fido2Response(answer).errorMessage.contains("is not allowed"), text(answer))
        }
    }

    func testSecondConfiguredOriginIsAccepted() async throws {
        try await with { server in
            var www = SoftwarePasskeyAuthenticator(origin: "https://www.bank.example")
            let answer231 = try await server.registerPasskey(&www, username: "alice")
            XCTAssertEqual(answer231.status, 200)
        }
    }

    // MARK: The apps that share the site's passkeys

    static let androidDigest = SoftwarePlayIntegrity.virtualDeviceCertificateDigest
    static func withApps() -> ServerConfiguration {
        configuration {
            $0.apps = .init(
                apple: [.init(teamId: "ABCDE12345", bundleId: "ch.example.bank")],
                android: [.init(packageName: "ch.example.bank", certificateSha256Digests: [androidDigest])])
        }
    }

    func testTheAppleAppSiteAssociationNamesTheAppsForWebCredentials() async throws {
        try await with(Self.withApps()) { server in
            let answer = try await server.exchange(.GET, "/.well-known/apple-app-site-association", body: nil, contentType: "application/json")
            XCTAssertEqual(answer.status, 200)
            XCTAssertEqual(answer.contentType, "application/json")
            let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            XCTAssertEqual((document["webcredentials"] as? [String: Any])?["apps"] as? [String], ["ABCDE12345.ch.example.bank"])
            XCTAssertEqual(document.count, 1, "credential sharing only: no applinks section")
        }
    }

    /// The digest (base64url) becomes Google's fingerprint notation: the same 32 bytes in colon-separated upper hex.
    func testTheAssetLinksGrantLoginCredentialsToTheAndroidApp() async throws {
        try await with(Self.withApps()) { server in
            let answer = try await server.exchange(.GET, "/.well-known/assetlinks.json", body: nil, contentType: "application/json")
            XCTAssertEqual(answer.status, 200)
            XCTAssertEqual(answer.contentType, "application/json")
            let statements = try XCTUnwrap(try JSONSerialization.jsonObject(with: answer.body) as? [[String: Any]])
            XCTAssertEqual(statements.count, 1)
            XCTAssertEqual(statements[0]["relation"] as? [String], ["delegate_permission/common.get_login_creds"])
            let target = try XCTUnwrap(statements[0]["target"] as? [String: Any])
            XCTAssertEqual(target["namespace"] as? String, "android_app")
            XCTAssertEqual(target["package_name"] as? String, "ch.example.bank")
            let fingerprint = try XCTUnwrap((target["sha256_cert_fingerprints"] as? [String])?.first)
            let bytes = fingerprint.split(separator: ":").map { UInt8($0, radix: 16) }
            XCTAssertEqual(bytes.count, 32)
            XCTAssertTrue(fingerprint.allSatisfy { $0 == ":" || ("0"..."9").contains($0) || ("A"..."F").contains($0) }, fingerprint)
            XCTAssertEqual(bytes.compactMap { $0 }, Base64URL.decodeBytes(Self.androidDigest))
        }
    }

    func testWithoutAppsNeitherFileIsServed() async throws {
        try await with { server in
            for path in ["/.well-known/apple-app-site-association", "/.well-known/assetlinks.json"] {
                let answer = try await server.exchange(.GET, path, body: nil, contentType: "application/json")
                XCTAssertEqual(answer.status, 404, path)
            }
        }
    }

    func testAConfiguredAndroidAppsOriginRegistersAndAnotherDigestIsRefused() async throws {
        try await with(Self.withApps()) { server in
            var app = SoftwarePasskeyAuthenticator(origin: "android:apk-key-hash:\(Self.androidDigest)")
            let accepted = try await server.registerPasskey(&app, username: "alice")
            XCTAssertEqual(accepted.status, 200, text(accepted))
            let other = Base64URL.encode([UInt8](repeating: 7, count: 32))
            var repackaged = SoftwarePasskeyAuthenticator(origin: "android:apk-key-hash:\(other)")
            let refused = try await server.registerPasskey(&repackaged, username: "bob")
            XCTAssertEqual(refused.status, 400)
            XCTAssertTrue(try fido2Response(refused).errorMessage.contains("android:apk-key-hash:\(other)"), text(refused))
        }
    }

    func testCounterRegressionIsRefused() async throws {
        try await with { server in
            var key = SoftwarePasskeyAuthenticator(origin: Self.origin, backupEligible: false, counts: true)
            try await server.registerPasskey(&key, username: "alice")
            let first = try await server.passkeyRequestOptions(username: "alice")
            let second = try await server.passkeyRequestOptions(username: "alice")
            let earlier = try InProcessServer.assertion(&key, for: first)
            let later = try InProcessServer.assertion(&key, for: second)
            let answer243 = try await server.fido2(FIDO2API.assertionResultPath, later)
            XCTAssertEqual(answer243.status, 200)
            let answer = try await server.fido2(FIDO2API.assertionResultPath, earlier)
            XCTAssertEqual(answer.status, 400)
            XCTAssertTrue(try fido2Response(answer).errorMessage.contains("counter went from 3 to 2"), text(answer))
        }
    }

    func testUserVerificationMissingWhenRequiredIsRefused() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            phone.verifiesUser = false
            let answer = try await server.signInWithPasskey(&phone, username: "alice")
            XCTAssertEqual(answer.status, 400)
            XCTAssertTrue(try fido2Response(answer).errorMessage.contains("not verified"), text(answer))
        }
    }

    func testUserVerificationMissingUnderPreferredSignsIn() async throws {
        try await with(Self.configuration { $0.userVerification = "preferred" }) { server in
            var key = SoftwarePasskeyAuthenticator(origin: Self.origin, verifiesUser: false)
            let answer264 = try await server.registerPasskey(&key, username: "alice")
            XCTAssertEqual(answer264.status, 200)
            let signedIn = try await server.signInWithPasskey(&key, username: "alice")
            XCTAssertEqual(signedIn.status, 200, text(signedIn))
        }
    }

    /// Under a floor of `discouraged` every request's value is echoed, and one that asks nothing gets `preferred`; a
    /// floor of `preferred` raises only `discouraged`.
    func testUserVerificationIsEchoedAndTheFloorOnlyRaisesIt() async throws {
        for (floor, expected) in [
            ("discouraged", ["required": "required", "preferred": "preferred", "discouraged": "discouraged", "": "preferred"]),
            ("preferred", ["required": "required", "preferred": "preferred", "discouraged": "preferred", "": "preferred"]),
        ] {
            try await with(Self.configuration { $0.userVerification = floor }) { server in
                for (asked, answered) in expected {
                    let request = FIDO2API.OptionsRequest(username: "", userVerification: asked.isEmpty ? nil : asked)
                    let answer = try await server.fido2(FIDO2API.assertionOptionsPath, request)
                    let options = try JSONDecoder().decode(FIDO2API.RequestOptions.self, from: answer.body)
                    XCTAssertEqual(options.userVerification, answered, "floor \(floor), asked \(asked.isEmpty ? "nothing" : asked)")
                }
            }
        }
    }

    func testRequestCannotLowerTheConfiguredUserVerification() async throws {
        try await with { server in
            let answer = try await server.fido2(FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "", userVerification: "discouraged"))
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.RequestOptions.self, from: answer.body).userVerification, "required")
        }
    }

    /// A signature that does not verify under the stored key is answered as an unknown credential is: before, the
    /// reason ("signature does not verify") told a caller holding a credential ID and a username that the credential
    /// was that user's, since another user's got "not registered". The audit line keeps the reason.
    func testBadSignatureIsRefusedAsAnUnknownCredentialIs() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            var credential = try InProcessServer.assertion(&phone, for: try await server.passkeyRequestOptions(username: "alice"))
            credential.response.signature = Base64URL.encode([0])
            let answer = try await server.fido2(FIDO2API.assertionResultPath, credential)
            XCTAssertEqual(answer.status, 400)
            XCTAssertEqual(try fido2Response(answer).errorMessage, "the credential is not registered for this relying party and user", text(answer))
            var other = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&other, username: "bob")
            // Bob's browser ignores the options' list of alice's credentials, as an attacker's does.
            var forAlice = try await server.passkeyRequestOptions(username: "alice")
            forAlice.allowCredentials = []
            var bobs = try InProcessServer.assertion(&other, for: forAlice)
            bobs.response.signature = Base64URL.encode([0])
            let notHers = try await server.fido2(FIDO2API.assertionResultPath, bobs)
            XCTAssertEqual(try fido2Response(notHers).errorMessage, try fido2Response(answer).errorMessage, "the two answers differ")
            await server.server.audit?.flush()
            let events = try await server.server.stores.audit.events(username: "alice", limit: 20)
            XCTAssertTrue(events.contains { $0.detail.contains("signature does not verify") }, "\(events.map(\.detail))")
        }
    }

    func testAnotherUsersPasskeyIsRefusedForANamedUser() async throws {
        try await with { server in
            var mallory = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&mallory, username: "mallory")
            let answer = try await server.signInWithPasskey(&mallory, username: "alice")
            XCTAssertEqual(answer.status, 400)
            XCTAssertEqual(try fido2Response(answer).errorMessage, "the credential is not registered for this relying party and user")
        }
    }

    /// YSA-2026-02: a credential registered for one user is never accepted for another. The user handle is not
    /// signed, so mallory can send alice's beside her own credential's signature; with or without a username, the
    /// user handle, the credential's owner and the user the session is opened for must agree.
    func testAnotherUsersUserHandleBesideMyCredentialIsRefused() async throws {
        try await with { server in
            var alice = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&alice, username: "alice")
            var mallory = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&mallory, username: "mallory")
            let alicesHandle = try await server.server.stores.passkeys.passkeys(username: "alice")[0].userHandle
            for username in ["", "mallory", "alice"] {
                // Mallory's browser ignores the options' list of the named user's credentials.
                var options = try await server.passkeyRequestOptions(username: username)
                options.allowCredentials = []
                var credential = try InProcessServer.assertion(&mallory, for: options)
                credential.response.userHandle = alicesHandle
                let answer = try await server.fido2(FIDO2API.assertionResultPath, credential)
                XCTAssertEqual(answer.status, 400, "named \(username.isEmpty ? "nobody" : username): \(text(answer))")
                XCTAssertNil(try fido2Response(answer).token)
            }
        }
    }

    /// The session a passkey opens is its owner's, whoever the options named: mallory's own sign-in gives a token
    /// for mallory, which may not register a passkey for alice.
    func testASessionIsTheCredentialOwnersAndActsForNoOneElse() async throws {
        try await with { server in
            var mallory = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&mallory, username: "mallory")
            let answer = try await server.signInWithPasskey(&mallory, username: "")
            let token = try XCTUnwrap(try fido2Response(answer).token)
            let claims = try await server.server.tokenIssuer.verify(token, now: server.clock.now)
            XCTAssertEqual(claims.sub, "mallory")
            let forAlice = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "alice", displayName: "Alice"),
                headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(forAlice.status, 403)
        }
    }

    func testSameCredentialCannotRegisterTwice() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let options = try await server.passkeyCreationOptions(username: "alice")
            let credential = try InProcessServer.attestation(&phone, for: options)
            let answer304 = try await server.fido2(FIDO2API.attestationResultPath, credential)
            XCTAssertEqual(answer304.status, 200)
            // The same credential for another user, answering a fresh challenge with the same ID.
            let other = try await server.passkeyCreationOptions(username: "bob")
            var copy = try InProcessServer.attestation(&phone, for: other)
            copy = FIDO2API.Credential(id: credential.id, response: copy.response)
            let answer = try await server.fido2(FIDO2API.attestationResultPath, copy)
            XCTAssertEqual(answer.status, 400)
            let answer311 = try await server.server.stores.passkeys.passkeys(username: "bob")
            XCTAssertEqual(answer311.count, 0)
        }
    }

    func testSecondRegistrationExcludesTheFirstAndKeepsTheUserHandle() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let first = try await server.passkeyCreationOptions(username: "alice")
            let answer319 = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&phone, for: first))
            XCTAssertEqual(answer319.status, 200)
            let second = try await server.passkeyCreationOptions(username: "alice")
            XCTAssertEqual(second.excludeCredentials.map(\.id), [Base64URL.encode(phone.credentials[0].id)])
            XCTAssertEqual(second.user.id, first.user.id)
            XCTAssertNotEqual(second.challenge, first.challenge)
            XCTAssertEqual(Base64URL.decodeBytes(second.challenge)?.count, 32)
        }
    }

    func testEnterprisePolicyRefusesUnattestedPasskeys() async throws {
        try await with(Self.configuration { $0.attestationPolicy = "enterprise" }) { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let answer = try await server.registerPasskey(&phone, username: "alice", attestation: .packedSelf)
            XCTAssertEqual(answer.status, 400)
            XCTAssertTrue(
                try fido2Response(answer).errorMessage.contains("step 24): attestation type self is not allowed by the policy"), text(answer))
        }
    }

    func testEnterprisePolicyRefusesAnAAGUIDNotAllowed() async throws {
        try await with(
            Self.configuration {
                $0.attestationPolicy = "enterprise"
                $0.allowedAAGUIDs = ["cb69481e-8ff7-4039-93ec-0a2729a154a8"]
            }
        ) { server in
            var key = SoftwarePasskeyAuthenticator(origin: Self.origin, aaguid: [UInt8](repeating: 7, count: 16))
            let answer = try await server.registerPasskey(&key, username: "alice")
            XCTAssertEqual(answer.status, 400)
            let answer342 = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(answer342.count, 0)
        }
    }

    // MARK: The wire

    func testAttestationOptionsWithoutDisplayNameAnswersAuthenticationOptionsToACallerWithCredentials() async throws {
        try await with { server in
            let anonymous = try await server.fido2(FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: ""))
            XCTAssertEqual(anonymous.status, 401)
            let answer = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: ""), headers: try await server.bearer("alice"))
            XCTAssertEqual(answer.status, 200, text(answer))
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.RequestOptions.self, from: answer.body).rpId, "bank.example")
        }
    }

    func testOptionsEchoTheRequestsExtensions() async throws {
        try await with { server in
            let answer = try await server.fido2(
                FIDO2API.assertionOptionsPath,
                FIDO2API.OptionsRequest(username: "", extensions: ["example.extension": .bool(true)]))
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.RequestOptions.self, from: answer.body).extensions, ["example.extension": .bool(true)])
        }
    }

    func testAUsernameTheServerRefusesIs400NotAnInternalError() async throws {
        try await with { server in
            let long = try await server.fido2(FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: String(repeating: "u", count: 257)))
            XCTAssertEqual(long.status, 400, text(long))
            XCTAssertEqual(try fido2Response(long).errorMessage, "username must be 1...256 UTF-8 bytes")
            let empty = try await server.fido2(
                FIDO2API.attestationOptionsPath, FIDO2API.OptionsRequest(username: "", displayName: ""),
                headers: try await server.bearer("alice"))
            XCTAssertEqual(empty.status, 400, text(empty))
        }
    }

    func testMoreThanSixteenExtensionsAre400() async throws {
        try await with { server in
            let extensions = Dictionary(uniqueKeysWithValues: (0..<17).map { ("x\($0)", JSONValue.number(42)) })
            let answer = try await server.fido2(FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: "", extensions: extensions))
            XCTAssertEqual(answer.status, 400, text(answer))
        }
    }

    func testContentTypeOtherThanJSONIs415() async throws {
        try await with { server in
            for contentType in ["text/plain", "application/fido+uaf", ""] {
                let answer = try await server.exchange(
                    .POST, FIDO2API.assertionOptionsPath, body: Data(#"{"username":""}"#.utf8), contentType: contentType)
                XCTAssertEqual(answer.status, 415, contentType)
                XCTAssertEqual(try fido2Response(answer).status, "failed")
            }
            let charset = try await server.exchange(
                .POST, FIDO2API.assertionOptionsPath, body: Data(#"{"username":""}"#.utf8),
                contentType: "application/json;charset=UTF-8")
            XCTAssertEqual(charset.status, 200)
        }
    }

    func testAcceptWithoutJSONIs406AndGetIs405() async throws {
        try await with { server in
            let html = try await server.exchange(
                .POST, FIDO2API.assertionOptionsPath, body: Data(#"{"username":""}"#.utf8), contentType: "application/json",
                headers: [("Accept", "text/html")])
            XCTAssertEqual(html.status, 406)
            let get = try await server.exchange(.GET, FIDO2API.assertionResultPath, body: nil, contentType: "application/json")
            XCTAssertEqual(get.status, 405)
            XCTAssertEqual(get.headers.first(name: "Allow"), "POST")
        }
    }

    func testMalformedResultsAreRefusedWithStatusFailed() async throws {
        let bodies = [
            #"{"type":"public-key","response":{"clientDataJSON":"e30"}}"#,  // no id
            #"{"id":7,"type":"public-key","response":{"clientDataJSON":"e30"}}"#,  // id not a string
            #"{"id":"AAAA","type":"private-key","response":{"clientDataJSON":"e30","signature":"AA","authenticatorData":"AA"}}"#,
            #"{"id":"AA+A","type":"public-key","response":{"clientDataJSON":"e30","signature":"AA","authenticatorData":"AA"}}"#,
            #"{"id":"AAAA","type":"public-key","response":"x"}"#,  // response not an object
            #"{"id":"AAAA","type":"public-key","response":{"clientDataJSON":"","signature":"AA","authenticatorData":"AA"}}"#,
            #"{"id":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","signature":"","authenticatorData":"AA"}}"#,
            #"{"id":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","signature":"AA","authenticatorData":"AA","userHandle":5}}"#,
            #"{"id":"AAAA","id":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","signature":"AA","authenticatorData":"AA"}}"#,
        ]
        try await with { server in
            for body in bodies {
                let answer = try await server.exchange(.POST, FIDO2API.assertionResultPath, body: Data(body.utf8), contentType: "application/json")
                XCTAssertEqual(answer.status, 400, body)
                let response = try fido2Response(answer)
                XCTAssertEqual(response.status, "failed", body)
                XCTAssertFalse(response.errorMessage.isEmpty, body)
            }
        }
    }

    func testRelatedOriginsAreServedAtTheWellKnownPath() async throws {
        try await with(Self.configuration { $0.relatedOrigins = ["https://bank.example.co.uk"] }) { server in
            let answer = try await server.exchange(.GET, FIDO2API.relatedOriginsPath, body: nil, contentType: "application/json")
            XCTAssertEqual(answer.status, 200)
            XCTAssertEqual(answer.contentType, "application/json")
            XCTAssertEqual(try JSONDecoder().decode(FIDO2API.RelatedOrigins.self, from: answer.body).origins, ["https://bank.example.co.uk"])
            // The related origin may run the ceremonies, as the specification has the relying party check.
            var uk = SoftwarePasskeyAuthenticator(origin: "https://bank.example.co.uk")
            let answer419 = try await server.registerPasskey(&uk, username: "alice")
            XCTAssertEqual(answer419.status, 200)
        }
    }

    func testWithoutFIDO2ConfiguredThePathsAreNotServed() async throws {
        try await InProcessServer.with { server in
            let answer = try await server.exchange(
                .POST, FIDO2API.assertionOptionsPath, body: Data(#"{"username":""}"#.utf8), contentType: "application/json")
            XCTAssertEqual(answer.status, 404)
        }
    }

    // MARK: Operations

    func adminHeaders(_ server: InProcessServer) async throws -> [(String, String)] {
        var claims = server.relyingParty.claims(subject: "ops", now: server.clock.now)
        claims.scope = "mauth:admin"
        return [("Authorization", "Bearer \(try await server.relyingParty.sign(claims))")]
    }

    func testPasskeyTheAdminRemovedCannotSignInAndItsSessionEnds() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let signedIn = try await server.signInWithPasskey(&phone, username: "alice")
            let token = try XCTUnwrap(try fido2Response(signedIn).token)
            let id = Base64URL.encode(phone.credentials[0].id)
            let shown = try await server.exchange(
                .GET, "/nevisfido/admin/user?username=alice", body: nil, contentType: "application/json",
                headers: try await adminHeaders(server))
            XCTAssertTrue(text(shown).contains(#""passkeys":[{"aaguid":"00000000-0000-0000-0000-000000000000""#), text(shown))
            let removed = try await server.exchange(
                .DELETE, "/nevisfido/admin/user/passkeys?username=alice&id=\(id)", body: nil,
                contentType: "application/json", headers: try await adminHeaders(server))
            XCTAssertEqual(removed.status, 200, text(removed))
            XCTAssertEqual(text(removed), #"{"removed":["\#(id)"]}"#)
            let again = try await server.signInWithPasskey(&phone, username: "alice")
            XCTAssertEqual(again.status, 400)
            XCTAssertEqual(try fido2Response(again).errorMessage, "the credential is not registered for this relying party and user")
            // The session the passkey opened ended with it.
            let signOut = try await server.exchange(
                .DELETE, "/nevisfido/session", body: nil, contentType: "application/json",
                headers: [("Authorization", "Bearer \(token)")])
            XCTAssertEqual(signOut.status, 401)
        }
    }

    func testRemovingPasskeysNeedsOneSelection() async throws {
        try await with { server in
            let neither = try await server.exchange(
                .DELETE, "/nevisfido/admin/user/passkeys?username=alice", body: nil, contentType: "application/json",
                headers: try await adminHeaders(server))
            XCTAssertEqual(neither.status, 400)
            let none = try await server.exchange(
                .DELETE, "/nevisfido/admin/user/passkeys?username=alice&all=true", body: nil,
                contentType: "application/json", headers: try await adminHeaders(server))
            XCTAssertEqual(none.status, 404)
            let notAdmin = try await server.exchange(
                .DELETE, "/nevisfido/admin/user/passkeys?username=alice&all=true", body: nil,
                contentType: "application/json", headers: try await server.bearer("alice"))
            XCTAssertEqual(notAdmin.status, 403)
        }
    }

    func testErasingAUserRemovesHerPasskeys() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            let pending = try await server.passkeyCreationOptions(username: "alice")
            let erased = try await server.exchange(
                .DELETE, "/nevisfido/admin/user?username=alice", body: nil, contentType: "application/json",
                headers: try await adminHeaders(server))
            XCTAssertTrue(text(erased).contains(#""passkeys":1"#), text(erased))
            let left = try await server.server.stores.passkeys.passkeys(username: "alice")
            XCTAssertEqual(left.count, 0)
            // A registration begun before the erasure registers nothing now.
            var other = SoftwarePasskeyAuthenticator(origin: Self.origin)
            let late = try await server.fido2(FIDO2API.attestationResultPath, try InProcessServer.attestation(&other, for: pending))
            XCTAssertEqual(late.status, 400)
        }
    }

    func testDecisionsReachTheAuditTrailWithTheUser() async throws {
        try await with { server in
            var phone = SoftwarePasskeyAuthenticator(origin: Self.origin)
            try await server.registerPasskey(&phone, username: "alice")
            phone.verifiesUser = false
            _ = try await server.signInWithPasskey(&phone, username: "alice")
            await server.server.audit?.flush()
            let audit = try await server.exchange(
                .GET, "/nevisfido/admin/audit?username=alice", body: nil, contentType: "application/json",
                headers: try await adminHeaders(server))
            XCTAssertTrue(text(audit).contains("passkey registration"), text(audit))
            XCTAssertTrue(text(audit).contains("not verified"), text(audit))
            let metrics = try await server.exchange(.GET, "/metrics", body: nil, contentType: "text/plain")
            XCTAssertTrue(text(metrics).contains(#"operation="passkey authentication""#), "metrics lack the passkey decisions")
        }
    }
}
