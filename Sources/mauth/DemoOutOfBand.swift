import AsyncHTTPClient
import Foundation
import MobileAuthentication
import NIOCore
import NIOHTTP1
import Primitives
import UAF
import UAFServer
import UAFTesting

/// The demo's out-of-band part: the relying party's backend dispatches over HTTPS, the virtual device reads the QR
/// code or link, redeems and runs the operation, and the backend follows the status.
extension DemoCommand {
    struct Backend {
        let server: RunningUAFServer
        let relyingParty: DemoRelyingParty
        let http: HTTPClient

        func post(_ path: String, _ body: [String: Any], as username: String?) async throws -> [String: Any] {
            var request = HTTPClientRequest(url: server.baseURL.absoluteString + path)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Accept", value: "application/json")
            if let username { request.headers.add(name: "Authorization", value: "Bearer \(try await relyingParty.token(for: username))") }
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
            let response = try await http.execute(request, timeout: .seconds(10))
            let data = Data(try await response.body.collect(upTo: 1 << 22).readableBytesView)
            guard response.status == .ok, let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw DemoFailure("\(path) answered HTTP \(response.status.code): \(String(decoding: data, as: UTF8.self))")
            }
            return object
        }

        func dispatch(_ op: UAFOperation, context: [String: Any], dispatcher: String, targetID: String?, as username: String?) async throws -> (sessionID: String, response: String) {
            let contextText = String(decoding: try JSONSerialization.data(withJSONObject: context, options: [.sortedKeys]), as: UTF8.self)
            var body: [String: Any] = ["dispatcher": dispatcher, "getUafRequest": ["op": op.rawValue, "context": contextText]]
            if let targetID { body["dispatchTargetId"] = targetID }
            let path = op == .registration ? "registration" : "authentication"
            let answer = try await post("/nevisfido/token/dispatch/\(path)", body, as: username)
            guard answer["dispatchResult"] as? String == "dispatched", let session = answer["sessionId"] as? String,
                  let response = (answer["dispatcherInformation"] as? [String: Any])?["response"] as? String else {
                throw DemoFailure("dispatch refused: \(answer)")
            }
            return (session, response)
        }

        func status(_ sessionID: String) async throws -> [String: Any] {
            try await post("/nevisfido/status", ["sessionId": sessionID], as: nil)
        }
    }

    func runOutOfBand(_ client: any MobileAuthenticationClient, server: RunningUAFServer, relyingParty: DemoRelyingParty,
                      work: URL, narrator: Narrator) async throws {
        try await Self.withRelyingPartyClient(trusting: server) { http in
            try await runOutOfBand(client, backend: Backend(server: server, relyingParty: relyingParty, http: http), work: work, narrator: narrator)
        }
    }

    private func runOutOfBand(_ client: any MobileAuthenticationClient, backend: Backend, work: URL, narrator: Narrator) async throws {
        let user = "bob"
        // The camera is zbarimg (Debian's zbar-tools, which .ci/run installs); without it the device opens the link
        // the page would offer on a phone, so the demo still needs nothing but the Swift toolchain.
        let canScan = QRCodeReader.isInstalled
        narrator.step("On a laptop, \(user) signs up; the relying party shows a \(canScan ? "QR code (link-png-qr-code)" : "link") and polls the status")
        let qr = try await backend.dispatch(.registration, context: ["username": user], dispatcher: canScan ? "link-png-qr-code" : "link", targetID: nil, as: user)
        let scanned: String
        if canScan {
            let pngPath = work.appendingPathComponent("registration-qr.png")
            guard let png = PNGImage.bytes(fromDataURI: qr.response) else { throw DemoFailure("the dispatcher did not answer a PNG") }
            try Data(png).write(to: pngPath)
            let initial = try await backend.status(qr.sessionID)["status"] ?? "?"
            narrator.line("rp", "QR code: a \(png.count)-byte PNG, written to \(pngPath.path); status: \(initial)")
            scanned = try QRCodeReader.read(png: png)
            narrator.line("device", "camera (zbarimg) read: \(scanned.prefix(60))…")
        } else {
            scanned = qr.response
            narrator.line("device", "zbarimg is not installed: opening the link instead of scanning (apt-get install zbar-tools to scan): \(scanned.prefix(48))…")
        }
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(scanned).executeAsync()
        narrator.line("device", "payload \(payload.contentType) v\(payload.version): redeem at \(payload.redeemData.redeemUrl.path)")
        guard case .registration(let registration) = try await client.operations.outOfBandOperation.payload(payload).executeAsync() else {
            throw DemoFailure("the QR code did not stand for a registration")
        }
        let redeemedStatus = try await backend.status(qr.sessionID)["status"] ?? "?"
        narrator.line("rp", "status: \(redeemedStatus)")
        try await registration.authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(ScriptedPinEnroller(pins: ["246810"])).executeAsync()
        let registered = try await backend.status(qr.sessionID)
        guard registered["status"] as? String == "succeeded" else { throw DemoFailure("the status is \(registered)") }
        narrator.line("rp", "status: succeeded, user \(registered["userId"] ?? "?"), authenticators \((registered["authenticators"] as? [[String: Any]])?.compactMap { $0["aaid"] } ?? [])")
        guard let pair = client.localData.deviceInformation?.idUsernamePairs.first(where: { $0.username == user }) else {
            throw DemoFailure("the device created no dispatch target for \(user)")
        }
        narrator.line("device", "dispatch target \(pair.identifier.prefix(8))… created with the device's signing and encryption keys")

        narrator.step("The bank sends \(user) a payment to confirm on the phone: the payload is encrypted to the device (JWE)")
        let payment = "Transfer EUR 250.00 to Carol"
        let link = try await backend.dispatch(.authentication, context: [
            "username": user, "transaction": [["contentType": "text/plain", "content": Base64URL.encode(Array(payment.utf8))]],
        ], dispatcher: "link", targetID: pair.identifier, as: nil)
        narrator.line("rp", "link \(link.response.prefix(48))… (its token is readable only with the device's key)")
        let encrypted = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(link.response).executeAsync()
        narrator.line("device", "decrypted a \(encrypted.contentType) payload with its key")
        guard case .authentication(let authentication) = try await client.operations.outOfBandOperation.payload(encrypted).executeAsync() else {
            throw DemoFailure("the link did not stand for an authentication")
        }
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(ScriptedPinUserVerifier(pins: ["246810"])).executeAsync()
        guard let shown = selector.shownContexts.first?.transactionConfirmationData, String(decoding: shown, as: UTF8.self) == payment else {
            throw DemoFailure("the payment was not shown before it was confirmed")
        }
        narrator.line("app", "showed \"\(payment)\" before confirming")
        let confirmed = try await backend.status(link.sessionID)
        guard confirmed["status"] as? String == "succeeded" else { throw DemoFailure("the status is \(confirmed)") }
        narrator.line("rp", "status: succeeded; token \((confirmed["tokenInformation"] as? [String: Any])?["tokenResult"] ?? "?")")

        narrator.step("The same link used a second time is refused")
        do {
            _ = try await client.operations.outOfBandOperation.payload(encrypted).executeAsync()
            throw DemoFailure("a redeemed token was accepted again")
        } catch let error as OutOfBandOperationError {
            narrator.line("app", "refused as expected: \(error.localizedDescription)")
        }
    }
}
