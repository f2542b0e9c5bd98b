import ArgumentParser
import Foundation
import Logging
import MobileAuthentication
import UAF
import UAFServer

/// Runs the whole spine once, for real: embedded server over TLS on loopback, a virtual device with its own
/// secure storage, registration with a PIN, authentication. Exits non-zero if a step fails.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "demo", abstract: "Register and authenticate a virtual device against an embedded server.")

    @Option(help: "Username to register.") var username = "alice"
    @Flag(help: "Keep the temporary directory (server database, device storage).") var keep = false

    func run() async throws {
        let narrator = Narrator()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }

        narrator.step("Start the embedded FIDO UAF server")
        let database = work.appendingPathComponent("server.sqlite").path
        let server = try await UAFServerApplication.start(
            configuration: ServerConfiguration(database: .sqlite(path: database)), logger: Self.quietLogger,
            onDecision: { narrator.line("server", $0.description) })
        narrator.line("server", "listening on \(server.baseURL.absoluteString) with TLS (self-signed development certificate), SQLite \(database)")

        var failed = false
        do {
            try await runDevice(server: server, storage: work.appendingPathComponent("device"), narrator: narrator)
        } catch {
            narrator.line("demo", "FAILED: \(error.localizedDescription)")
            failed = true
        }
        try await server.stop()
        if failed { throw ExitCode.failure }
        narrator.step("Done: registration and authentication were accepted by the server")
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "mauth.demo.server")
        logger.logLevel = .error
        return logger
    }

    func runDevice(server: RunningUAFServer, storage: URL, narrator: Narrator) async throws {
        narrator.step("Create a virtual device")
        let platform = SimulatedPlatform(storageDirectory: storage)
        let configuration = Configuration(baseUrl: server.baseURL, facetId: platform.applicationFacetId)
            .withTransportSecurity(.debug(trustedCertificatesPEM: [server.certificatePEM]))
        let client = try await MobileAuthenticationClientInitializer()
            .configuration(configuration).platform(platform)
            .httpTrace { narrator.trace($0) }
            .executeAsync()
        narrator.line("device", "facet \(platform.applicationFacetId), storage \(storage.path) (encrypted, device-bound)")

        narrator.step("Register \(username) with a PIN")
        let enroller = ScriptedPinEnroller(pins: ["12a4", "123456"])
        try await client.operations.registration
            .username(username)
            .deviceInformation(DeviceInformation(name: "mauth virtual device"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(enroller)
            .executeAsync()
        for context in enroller.shownContexts {
            narrator.line("app", "PIN enrollment asked" + (context.lastRecoverableError.map { " again after: \($0.localizedDescription)" } ?? ""))
        }
        narrator.line("device", "registered; local accounts: \(client.localData.accounts.map(\.username))")

        narrator.step("Authenticate \(username) (first with a wrong PIN)")
        let verifier = ScriptedPinUserVerifier(pins: ["999999", "123456"])
        let authorization = try await client.operations.authentication
            .username(username)
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(verifier)
            .executeAsync()
        for context in verifier.shownContexts {
            narrator.line("app", "PIN asked, protection status: \(context.authenticatorProtectionStatus)")
        }
        narrator.line("device", "authenticated\(authorization == nil ? "" : " (authorization received)")")
        await client.shutdown()
    }
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
               let assertion = try? RegistrationAssertion(bytes: Array(bytes)) {
                let krd = assertion.keyRegistrationData
                return "  RegistrationResponse: \(krd.aaid), \(krd.signatureAlgorithm), \(krd.publicKeyEncoding), KeyID \(Base64URL.encode(krd.keyID).prefix(10))…, \(assertion.attestation.type) attestation, \(bytes.count)-byte TLV"
            }
            if let auth = try? UAFMessageCodec.decode(AuthenticationResponse.self, from: send.uafResponse).first,
               let bytes = auth.assertions.first.flatMap({ Base64URL.decode($0.assertion) }),
               let assertion = try? AuthenticationAssertion(bytes: Array(bytes)) {
                let signed = assertion.signedData
                return "  AuthenticationResponse: \(signed.aaid), mode \(signed.authenticationMode), counter \(signed.signCounter), \(signed.authenticatorNonce.count)-byte nonce, \(bytes.count)-byte TLV"
            }
        }
        return "  \(request.count) bytes"
    }

    private func summary(response: Data) -> String {
        if let answer = try? JSONDecoder().decode(ReturnUAFRequest.self, from: response), answer.uafRequest != nil || answer.op != nil {
            if let reg = answer.uafRequest.flatMap({ try? UAFMessageCodec.decode(RegistrationRequest.self, from: $0).first }) {
                return "  ReturnUAFRequest \(answer.statusCode): RegistrationRequest for \(reg.username), policy accepts \(reg.policy.accepted.count) authenticator(s), challenge \(reg.challenge.prefix(10))…"
            }
            if let auth = answer.uafRequest.flatMap({ try? UAFMessageCodec.decode(AuthenticationRequest.self, from: $0).first }) {
                return "  ReturnUAFRequest \(answer.statusCode): AuthenticationRequest, policy \(auth.policy.accepted.flatMap { $0.compactMap(\.aaid) }.flatMap { $0 }), challenge \(auth.challenge.prefix(10))…"
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
