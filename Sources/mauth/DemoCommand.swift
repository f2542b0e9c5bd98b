import ArgumentParser
import AsyncHTTPClient
import DevelopmentStandIns
import FIDOServer
import FIDOSimulation
import Foundation
import JWTKit
import Logging
import MobileAuthentication
import MobileAuthenticationSimulator
import NIOCore
import NIOSSL
import Primitives
import UAF

/// `mauth demo`: the narrated tour (the default) and the web demo. The development aids they need (a relying party
/// minting JWTs, a stand-in for Google's push endpoints) are reached from here only, never from `mauth server`.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Development demos: the narrated tour (default) and the relying party's web demo.",
        subcommands: [DemoTour.self, DemoWeb.self], defaultSubcommand: DemoTour.self)
}

/// Runs the whole spine once, for real: embedded server over TLS on loopback, a virtual device with its own
/// secure storage, registration with a PIN, authentication. Exits non-zero if a step fails.
struct DemoTour: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tour",
        abstract: "Play a relying party and a virtual device against an embedded server: register, authenticate, verify the token, deregister.")

    @Option(help: "Username to register.") var username = "alice"
    @Flag(help: "Keep the temporary directory (server database, device storage).") var keep = false
    @Option(
        help:
            "Also write the server's audit stream (mauth.audit, one JSON line per decision) to this file. The tour narrates each decision once on standard output either way."
    )
    var auditLog: String?

    func run() async throws {
        let narrator = Narrator()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }

        narrator.step("Start the embedded FIDO server (UAF for the app, passkeys for the web), trusting the relying party's JWT key")
        let relyingParty = LocalRelyingParty(issuer: "https://rp.demo.example", audience: "mauth-demo")
        let jwksPath = work.appendingPathComponent("relying-party-jwks.json").path
        try relyingParty.writeJWKS(to: jwksPath)
        let database = work.appendingPathComponent("server.sqlite").path
        var configuration = ServerConfiguration(facets: [SoftwareAuthenticator.virtualDeviceFacetID], database: .sqlite(path: database))
        configuration.authorization.jwt = .init(jwksPath: jwksPath, issuer: relyingParty.issuer, audience: relyingParty.audience)
        // Passkeys for the bank's web pages beside the app's UAF keys, on the same server.
        configuration.fido2 = .init(rpId: "localhost", rpName: "Example Bank", origins: [Self.passkeyOrigin])
        // Push goes to a local stand-in for Google's OAuth and FCM endpoints: a real Firebase project needs its
        // service-account key file and outbound HTTPS to oauth2.googleapis.com and fcm.googleapis.com.
        let firebase = try await FirebaseStandIn.start(directory: work.appendingPathComponent("firebase"))
        configuration.dispatch.firebase = firebase.configuration
        // App attestation: the bank's policy requires every registration to come from its genuine app. The virtual
        // device's App Attest is software under a root of its own (Apple's App Attest needs an iPhone), which this
        // server is configured to trust; a production server keeps Apple's root.
        let appAttestAuthority = try SoftwareAppAttestAuthority()
        configuration.appAttestation = try .virtualDevice(
            trusting: appAttestAuthority, writingRootTo: work.appendingPathComponent("app-attest-root.pem"))
        configuration.policies = ["default": .init(appAttestation: .init(registration: .require))]
        let server = try await FIDOServerApplication.start(
            configuration: configuration,
            dependencies: ServerDependencies(
                logger: Self.quietLogger, auditLogger: try Self.auditLogger(path: auditLog),
                onDecision: { narrator.line("server", $0.description) }))
        narrator.line("server", "listening on \(server.baseURL.absoluteString) with TLS (self-signed development certificate), SQLite \(database)")
        narrator.line("rp", "JWKS \(jwksPath) (ES256 key \(relyingParty.kid)); issuer \(relyingParty.issuer), audience \(relyingParty.audience)")
        narrator.line("server", "push: FCM HTTP v1 at \(firebase.baseURL) (a local stand-in), service account \(firebase.clientEmail)")
        narrator.line(
            "server",
            "app attestation required for registration: App Attest of \(SoftwareAppAttestAuthority.virtualDeviceTeamID).\(SoftwareAppAttestAuthority.virtualDeviceBundleID) (development)"
        )

        var failed = false
        do {
            try await runDevice(
                server: server, relyingParty: relyingParty, firebase: firebase, appAttest: appAttestAuthority,
                storage: work.appendingPathComponent("device"), narrator: narrator)
            try await runAppAttestation(
                server: server, relyingParty: relyingParty, genuine: appAttestAuthority, storage: work.appendingPathComponent("devices-not-genuine"),
                narrator: narrator)
            try await runPasskeys(server: server, relyingParty: relyingParty, narrator: narrator)
        } catch {
            narrator.line("demo", "FAILED: \(error)")
            failed = true
        }
        try await server.stop()
        try await firebase.stop()
        if failed { throw ExitCode.failure }
        narrator.step(
            "Done: registration (PIN, password, Face ID, QR code) by the genuine app only (App Attest), authentication, transaction confirmation (in band and by encrypted push), pending operations, PIN change, token verification, deregistration and a passkey for the web (registration, sign-in with and without a username, a phishing origin refused) behaved as they must"
        )
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "mauth.demo.server")
        logger.logLevel = .error
        return logger
    }

    /// The tour narrates every decision itself (`server |` lines), so the audit stream goes to `path` as JSON lines
    /// when asked, and nowhere otherwise: on a terminal each decision appears once.
    static func auditLogger(path: String?) throws -> Logger {
        guard let path else { return Logger(label: "mauth.audit", factory: { _ in SwiftLogNoOpLogHandler() }) }
        let sink: LogSink
        do { sink = try LogSink.appending(to: path) } catch { throw ValidationError("--audit-log \(path): \(error)") }
        return Logger(label: "mauth.audit", factory: { label in ServerLogHandler(label: label, format: .json, sink: sink) })
    }

    /// Runs `body` with a client of `platform`, and shuts the client down afterwards whether `body` succeeded or not.
    func withClient(
        server: RunningFIDOServer, platform: SimulatedPlatform, narrator: Narrator,
        _ body: (any MobileAuthenticationClient) async throws -> Void
    ) async throws {
        let configuration = Configuration(baseUrl: server.baseURL, facetId: platform.applicationFacetId)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [server.certificatePEM]))
            .withAppAttestation(.appAttest)
        let client = try await MobileAuthenticationClientInitializer()
            .configuration(configuration).platform(platform)
            .httpTrace { narrator.trace($0) }
            .executeAsync()
        do { try await body(client) } catch {
            await client.shutdown()
            throw error
        }
        await client.shutdown()
    }

    func runDevice(
        server: RunningFIDOServer, relyingParty: LocalRelyingParty, firebase: FirebaseStandIn, appAttest: SoftwareAppAttestAuthority,
        storage: URL, narrator: Narrator
    ) async throws {
        narrator.step("Create a virtual device running the bank's genuine app (with App Attest)")
        let platform = SimulatedPlatform(storageDirectory: storage)
        platform.useAppAttest(
            SimulatedAppAttest(authority: appAttest, appID: SoftwareAppAttestAuthority.virtualDeviceAppID, clock: { platform.now() }))
        // A copy of the device taken after registration, to show later that the server, not the device, decides.
        let copy = storage.deletingLastPathComponent().appendingPathComponent("device-copy")
        try await withClient(server: server, platform: platform, narrator: narrator) { client in
            try await runDevice(
                client, platform: platform, server: server, relyingParty: relyingParty, firebase: firebase, storage: storage, copy: copy,
                narrator: narrator)
        }
        narrator.step("A copy of the device made before deregistration tries to authenticate")
        try await withClient(server: server, platform: SimulatedPlatform(storageDirectory: copy), narrator: narrator) { copyClient in
            // The server answers the copy's step-up as it answers any anonymous one (no key IDs, no 1404): the copy
            // signs with its removed key, and the response is refused.
            try await expectRefusal(copyClient, username: username, codes: [1481], narrator: narrator)
            narrator.step("The copy answers an authentication request for any user with its removed key")
            try await expectRefusal(copyClient, username: nil, codes: [1481], narrator: narrator)
        }
    }

    /// The device's own steps: refused registration, registration with the relying party's JWT, authentication,
    /// token verification, deregistration. A copy of its storage is taken after registration.
    func runDevice(
        _ client: any MobileAuthenticationClient, platform: SimulatedPlatform, server: RunningFIDOServer,
        relyingParty: LocalRelyingParty, firebase: FirebaseStandIn, storage: URL, copy: URL, narrator: Narrator
    ) async throws {
        narrator.line("device", "facet \(platform.applicationFacetId), storage \(storage.path) (encrypted, device-bound)")

        narrator.step("Try to register \(username) without credentials (the account-takeover hole stays shut)")
        do {
            try await client.operations.registration.username(username)
                .deviceInformation(DeviceInformation(name: "mauth virtual device"))
                .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
                .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
            throw DemoFailure("the server registered a key without authorization")
        } catch let error as OperationError {
            narrator.line("app", "refused as expected: \(error.localizedDescription)")
        }

        narrator.step("The relying party signs \(username) in its own way and mints a JWT; register with a PIN")
        let jwt = try await relyingParty.token(for: username)
        narrator.line("rp", "JWT for sub=\(username), valid 300 s: \(jwt.prefix(24))…")
        let enroller = ScriptedPinEnroller(pins: ["12a4", "123456"]) { context in
            narrator.line("app", "PIN enrollment asked" + (context.lastRecoverableError.map { " again after: \($0.localizedDescription)" } ?? ""))
        }
        try await client.operations.registration
            .username(username)
            .deviceInformation(DeviceInformation(name: "mauth virtual device"))
            .authorizationProvider(JwtAuthorizationProvider(jwt: jwt))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(enroller)
            .executeAsync()
        narrator.line("device", "registered; local accounts: \(client.localData.accounts.map(\.username))")
        try FileManager.default.copyItem(at: storage, to: copy)

        narrator.step("Authenticate \(username) (first with a wrong PIN)")
        let verifier = ScriptedPinUserVerifier(pins: ["999999", "123456"]) { context in
            narrator.line("app", "PIN asked, protection status: \(context.authenticatorProtectionStatus)")
        }
        let authorization = try await client.operations.authentication
            .username(username)
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(verifier)
            .executeAsync()
        guard let session = authorization as? JwtAuthorizationProvider else { throw DemoFailure("no JWT in the authentication answer") }
        narrator.line("device", "authenticated; the server handed out a JWT and a session cookie")

        narrator.step("The relying party verifies the token with the server's published keys")
        let claims = try await verifyWithPublishedKeys(session.jwt, server: server, narrator: narrator)
        guard claims.sub == username else { throw DemoFailure("the token names \(claims.sub), not \(username)") }
        narrator.line(
            "rp",
            "signature valid (kid \(server.tokenIssuer.kid.prefix(10))…); sub=\(claims.sub) aaid=\(claims.aaid) keyid=\(claims.keyid.prefix(10))… auth_time=\(claims.auth_time) sid=\(claims.sid.prefix(8))…"
        )

        narrator.step("Change \(username)'s PIN on the device (first with a wrong current PIN)")
        let changer = ScriptedPinChanger(pins: [("000000", "654321"), ("123456", "654321")]) { context in
            narrator.line(
                "app",
                "PIN change asked, status: \(context.authenticatorProtectionStatus)"
                    + (context.lastRecoverableError.map { ", after: \($0.localizedDescription)" } ?? ""))
        }
        try await client.operations.pinChange.username(username).pinChanger(changer).executeAsync()
        narrator.line("device", "PIN changed; the old PIN no longer verifies")

        narrator.step("Register a password authenticator for \(username) (the app's policy refuses a weak one first)")
        let passwordEnroller = ScriptedPasswordEnroller(passwords: ["secret", "blue horse 42"]) { context in
            narrator.line(
                "app", "password enrollment asked" + (context.lastRecoverableError.map { " again after: \($0.localizedDescription)" } ?? ""))
        }
        try await client.operations.registration.username(username)
            .authorizationProvider(JwtAuthorizationProvider(jwt: try await relyingParty.token(for: username)))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Password.rawValue))
            .passwordEnroller(passwordEnroller)
            .executeAsync()

        narrator.step("Register Face ID for \(username) and confirm a payment with it")
        let faceID = ScriptedOSVerifier([.verify(reason: "Register Face ID for mauth"), .verify(reason: "Confirm the payment")])
        try await client.operations.registration.username(username)
            .authorizationProvider(JwtAuthorizationProvider(jwt: try await relyingParty.token(for: username)))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.FaceRecognition.rawValue))
            .biometricUserVerifier(faceID)
            .executeAsync()
        let payment = "Pay CHF 120.00 to Example Shop"
        let paymentSelector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.FaceRecognition.rawValue)
        _ = try await client.operations.authentication
            .username(username)
            .transactionConfirmation(text: payment)
            .authenticatorSelector(paymentSelector)
            .biometricUserVerifier(faceID)
            .executeAsync()
        guard let shown = paymentSelector.shownContexts.first?.transactionConfirmationData, String(decoding: shown, as: UTF8.self) == payment else {
            throw DemoFailure("the transaction was not shown to the app before it was confirmed")
        }
        narrator.line("app", "showed \"\(payment)\" before confirming")
        for prompt in platform.shownOSPrompts {
            narrator.line("os", "Face ID prompt: \"\(prompt.reason)\", passcode fallback offered: \(prompt.fallbackButtonTitle != nil)")
        }
        narrator.line(
            "device",
            "authenticators of \(username): \(client.localData.authenticators.filter { $0.registration.isRegistered(username) }.map(\.aaid))")

        try await runOutOfBand(
            client, server: server, relyingParty: relyingParty, firebase: firebase, work: storage.deletingLastPathComponent(),
            narrator: narrator)

        narrator.step("Deregister \(username)'s authenticators, authorized by the session")
        try await client.operations.deregistration.username(username).authorizationProvider(session).executeAsync()
        narrator.line("device", "deregistered; local accounts: \(client.localData.accounts.map(\.username))")

    }

    /// Authenticates with the PIN and requires the server to refuse with one of `codes`.
    func expectRefusal(_ client: any MobileAuthenticationClient, username: String?, codes: Set<Int>, narrator: Narrator) async throws {
        let builder = client.operations.authentication
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
        if let username { builder.username(username) }
        do {
            _ = try await builder.executeAsync()
        } catch {
            let code = Self.serverStatusCode(error)
            narrator.line("app", "refused: \(error.localizedDescription)")
            guard let code, codes.contains(code) else { throw DemoFailure("expected \(codes.sorted()), got \(code.map(String.init) ?? "no status")") }
            return
        }
        throw DemoFailure("the server accepted a deregistered key")
    }

    static func serverStatusCode(_ error: AuthenticationError) -> Int? {
        switch error {
        case .FidoError(_, let cause, _), .NetworkError(let cause, _): return (cause as? ServerStatusError)?.statusCode
        default: return nil
        }
    }

    /// Fetches `/.well-known/jwks.json` over TLS and verifies `token` with it, as a relying party would.
    func verifyWithPublishedKeys(_ token: String, server: RunningFIDOServer, narrator: Narrator) async throws -> IssuedTokenClaims {
        let url = server.baseURL.absoluteString + "/.well-known/jwks.json"
        let (response, body) = try await Self.withRelyingPartyClient(trusting: server) { http in
            let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
            return (response, String(buffer: try await response.body.collect(upTo: 1 << 16)))
        }
        narrator.line("rp", "→ GET /.well-known/jwks.json ← HTTP \(response.status.code) \(body.count) bytes")
        let keys = try await JWTKeyCollection().add(jwksJSON: body)
        let claims = try await keys.verify(token, as: IssuedTokenClaims.self)
        guard Double(claims.exp) > Date().timeIntervalSince1970 else { throw DemoFailure("the token has expired") }
        return claims
    }
}

extension DemoTour {
    /// Runs `body` with the relying party backend's HTTPS client, which trusts the server's certificate, and shuts
    /// the client down afterwards whether `body` succeeded or not.
    static func withRelyingPartyClient<T: Sendable>(trusting server: RunningFIDOServer, _ body: (HTTPClient) async throws -> T) async throws -> T {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)))
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        do {
            let result = try await body(http)
            try await http.shutdown()
            return result
        } catch {
            try? await http.shutdown()
            throw error
        }
    }
}

struct DemoFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Prints the demo's steps; HTTP exchanges are summarised from their UAF messages.
final class Narrator: @unchecked Sendable {
    private let lock = NSLock()
    private var number = 0

    func step(_ title: String) {
        lock.withLock {
            number += 1
            say("\n[\(number)] \(title)")
        }
    }

    func line(_ who: String, _ text: String) {
        lock.withLock { say("    \(who.padding(toLength: 7, withPad: " ", startingAt: 0))| \(text)") }
    }

    func trace(_ event: HTTPTraceEvent) {
        if event.isResponse {
            line("device", "← HTTP \(event.status == 0 ? "no answer" : String(event.status))\(summary(response: event.responseBody))")
        } else {
            line("device", "→ \(event.method) \(event.url.path)\(summary(request: event.requestBody))")
        }
    }

    private func summary(request: Data?) -> String {
        guard let request else { return "" }
        if let get = try? JSONDecoder().decode(GetUAFRequest.self, from: request), get.op != nil {
            return "  GetUAFRequest op=\(get.op?.rawValue ?? "-") context=\(get.context ?? "{}")"
        }
        if let send = try? JSONDecoder().decode(SendUAFResponse.self, from: request) {
            if let reg = try? UAFMessageCodec.decode(RegistrationResponse.self, from: send.uafResponse).first,
                let bytes = reg.assertions.first.flatMap({ Base64URL.decode($0.assertion) }),
                let assertion = try? RegistrationAssertion(bytes: Array(bytes))
            {
                let krd = assertion.keyRegistrationData
                return
                    "  RegistrationResponse: \(krd.aaid), \(krd.signatureAlgorithm), \(krd.publicKeyEncoding), KeyID \(Base64URL.encode(krd.keyID).prefix(10))…, \(assertion.attestation.type) attestation, \(bytes.count)-byte TLV"
            }
            if let auth = try? UAFMessageCodec.decode(AuthenticationResponse.self, from: send.uafResponse).first,
                let bytes = auth.assertions.first.flatMap({ Base64URL.decode($0.assertion) }),
                let assertion = try? AuthenticationAssertion(bytes: Array(bytes))
            {
                let signed = assertion.signedData
                return
                    "  AuthenticationResponse: \(signed.aaid), mode \(signed.authenticationMode), counter \(signed.signCounter), \(signed.authenticatorNonce.count)-byte nonce, \(bytes.count)-byte TLV"
            }
        }
        return "  \(request.count) bytes"
    }

    private func summary(response: Data) -> String {
        if let answer = try? JSONDecoder().decode(ReturnUAFRequest.self, from: response), answer.uafRequest != nil || answer.op != nil {
            if let reg = answer.uafRequest.flatMap({ try? UAFMessageCodec.decode(RegistrationRequest.self, from: $0).first }) {
                return
                    "  ReturnUAFRequest \(answer.statusCode): RegistrationRequest for \(reg.username), policy accepts \(reg.policy.accepted.count) authenticator(s), challenge \(reg.challenge.prefix(10))…"
            }
            if let auth = answer.uafRequest.flatMap({ try? UAFMessageCodec.decode(AuthenticationRequest.self, from: $0).first }) {
                return
                    "  ReturnUAFRequest \(answer.statusCode): AuthenticationRequest, policy \(auth.policy.accepted.flatMap { $0.compactMap(\.aaid) }.flatMap { $0 }), challenge \(auth.challenge.prefix(10))…"
            }
            return "  ReturnUAFRequest \(answer.statusCode)"
        }
        if let facets = try? JSONDecoder().decode(TrustedFacets.self, from: response) {
            return "  TrustedFacets \(facets.trustedFacets.flatMap(\.ids))"
        }
        if let answer = try? JSONDecoder().decode(ServerResponse.self, from: response) {
            return "  ServerResponse \(answer.statusCode)\(answer.description.map { " \"\($0)\"" } ?? "")"
        }
        return ""
    }
}
