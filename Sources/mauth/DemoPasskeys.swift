import AsyncHTTPClient
import FIDOServer
import FIDOSimulation
import Foundation
import NIOCore
import NevisProtocol

/// The tour's passkey part: the same server, the same user, a browser's passkey for the web beside the app's UAF keys.
/// The browser is the software passkey authenticator (P-256, `none` attestation, as synced passkeys send); the web
/// demo does the same in Chromium (`mauth demo web`).
extension DemoTour {
    static let passkeyOrigin = "https://localhost"

    func runPasskeys(server: RunningFIDOServer, relyingParty: LocalRelyingParty, narrator: Narrator) async throws {
        var browser = SoftwarePasskeyAuthenticator(origin: Self.passkeyOrigin)
        try await Self.withRelyingPartyClient(trusting: server) { http in
            narrator.step("The bank's web page registers a passkey for \(username), authorized by the relying party's JWT")
            let token = try await relyingParty.token(for: username)
            let creation: FIDO2API.CreationOptions = try await post(
                http, server, FIDO2API.attestationOptionsPath,
                FIDO2API.OptionsRequest(username: username, displayName: username.capitalized),
                bearer: token, narrator: narrator)
            narrator.line(
                "browser",
                "rp \(creation.rp.id), user handle \(creation.user.id.prefix(10))… (random, not the username), algorithms \(creation.pubKeyCredParams.map(\.alg))"
            )
            let registered: FIDO2API.ServerResponse = try await post(
                http, server, FIDO2API.attestationResultPath,
                try browser.create(for: creation), narrator: narrator)
            guard registered.status == "ok" else { throw DemoFailure("the passkey was not registered: \(registered.errorMessage)") }

            for name in [username, ""] {
                narrator.step(
                    name.isEmpty
                        ? "Sign in without a username (the browser's autofill): the passkey's user handle names the user"
                        : "Sign in to the web with the passkey, by username")
                let options: FIDO2API.RequestOptions = try await post(
                    http, server, FIDO2API.assertionOptionsPath,
                    FIDO2API.OptionsRequest(username: name), narrator: narrator)
                let answer: FIDO2API.ServerResponse = try await post(
                    http, server, FIDO2API.assertionResultPath,
                    try browser.get(for: options), narrator: narrator)
                guard answer.status == "ok", let jwt = answer.token else { throw DemoFailure("the passkey sign-in failed: \(answer.errorMessage)") }
                let claims = try await verifyWithPublishedKeys(jwt, server: server, narrator: narrator)
                guard claims.sub == username, claims.method == "passkey" else {
                    throw DemoFailure("the token names \(claims.sub) by \(claims.method ?? "?")")
                }
                narrator.line(
                    "rp", "the same session JWT as a UAF login: sub=\(claims.sub) method=\(claims.method ?? "?") keyid=\(claims.keyid.prefix(10))…")
            }

            narrator.step("A phishing page on another origin relays the bank's challenge to the same passkey")
            var phishing = browser
            phishing.origin = "https://bank-login.example"
            let options: FIDO2API.RequestOptions = try await post(
                http, server, FIDO2API.assertionOptionsPath,
                FIDO2API.OptionsRequest(username: username), narrator: narrator)
            let refused: FIDO2API.ServerResponse = try await post(
                http, server, FIDO2API.assertionResultPath,
                try phishing.get(for: options), expecting: 400, narrator: narrator)
            guard refused.status == "failed" else { throw DemoFailure("the phished sign-in was accepted") }
        }
    }

    /// Posts `body` as the browser's page would and decodes the answer, which must have `status` `expecting`.
    private func post<Answer: Decodable>(
        _ http: HTTPClient, _ server: RunningFIDOServer, _ path: String, _ body: some Encodable, bearer: String? = nil,
        expecting: UInt = 200, narrator: Narrator
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: server.baseURL.absoluteString + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(body)))
        let response = try await http.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 16)
        let text = String(buffer: bytes)
        let answer = (try? JSONDecoder().decode(FIDO2API.ServerResponse.self, from: Data(text.utf8)))
        narrator.line(
            "browser",
            "→ POST \(path) ← HTTP \(response.status.code)"
                + (answer.map { " status \($0.status)" + ($0.errorMessage.isEmpty ? "" : ": \($0.errorMessage)") } ?? ""))
        guard response.status.code == expecting else { throw DemoFailure("\(path) answered \(response.status.code): \(text)") }
        return try JSONDecoder().decode(Answer.self, from: Data(text.utf8))
    }
}
