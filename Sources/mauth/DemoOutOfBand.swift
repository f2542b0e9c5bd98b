import AsyncHTTPClient
import DevelopmentStandIns
import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import NIOCore
import NIOHTTP1
import Primitives
import UAF

/// The demo's out-of-band part: the relying party's backend dispatches over HTTPS, the virtual device reads the QR
/// code or link, redeems and runs the operation, and the backend follows the status.
extension DemoTour {
    struct Backend {
        let server: RunningFIDOServer
        let relyingParty: LocalRelyingParty
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

        func dispatch(
            _ op: UAFOperation, context: [String: Any], dispatcher: String, targetID: String?, as username: String?
        ) async throws -> (sessionID: String, response: String) {
            let contextText = String(decoding: try JSONSerialization.data(withJSONObject: context, options: [.sortedKeys]), as: UTF8.self)
            var body: [String: Any] = ["dispatcher": dispatcher, "getUafRequest": ["op": op.rawValue, "context": contextText]]
            if let targetID { body["dispatchTargetId"] = targetID }
            let path = op == .registration ? "registration" : "authentication"
            let answer = try await post("/nevisfido/token/dispatch/\(path)", body, as: username)
            guard answer["dispatchResult"] as? String == "dispatched", let session = answer["sessionId"] as? String,
                let response = (answer["dispatcherInformation"] as? [String: Any])?["response"] as? String
            else {
                throw DemoFailure("dispatch refused: \(answer)")
            }
            return (session, response)
        }

        func status(_ sessionID: String) async throws -> [String: Any] {
            try await post("/nevisfido/status", ["sessionId": sessionID], as: nil)
        }
    }

    func runOutOfBand(
        _ client: any MobileAuthenticationClient, server: RunningFIDOServer, relyingParty: LocalRelyingParty, firebase: FirebaseStandIn,
        work: URL, narrator: Narrator
    ) async throws {
        try await Self.withRelyingPartyClient(trusting: server) { http in
            try await runOutOfBand(
                client, backend: Backend(server: server, relyingParty: relyingParty, http: http), firebase: firebase, work: work,
                narrator: narrator)
        }
    }

    private func runOutOfBand(
        _ client: any MobileAuthenticationClient, backend: Backend, firebase: FirebaseStandIn, work: URL, narrator: Narrator
    ) async throws {
        let user = "bob"
        // The camera is zbarimg (Debian's zbar-tools, which .ci/run installs); without it the device opens the link
        // the page would offer on a phone, so the demo still needs nothing but the Swift toolchain.
        let canScan = QRCodeReader.isInstalled
        narrator.step(
            "On a laptop, \(user) signs up; the relying party shows a \(canScan ? "QR code (link-png-qr-code)" : "link") and polls the status")
        let qr = try await backend.dispatch(
            .registration, context: ["username": user], dispatcher: canScan ? "link-png-qr-code" : "link", targetID: nil, as: user)
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
            narrator.line(
                "device",
                "zbarimg is not installed: opening the link instead of scanning (apt-get install zbar-tools to scan): \(scanned.prefix(48))…")
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
        narrator.line(
            "rp",
            "status: succeeded, user \(registered["userId"] ?? "?"), authenticators \((registered["authenticators"] as? [[String: Any]])?.compactMap { $0["aaid"] } ?? [])"
        )
        guard let pair = client.localData.deviceInformation?.idUsernamePairs.first(where: { $0.username == user }) else {
            throw DemoFailure("the device created no dispatch target for \(user)")
        }
        narrator.line("device", "dispatch target \(pair.identifier.prefix(8))… created with the device's signing and encryption keys")

        narrator.step("The app registers its push token; the device's dispatch targets get it (DeviceInformationChange, device-signed)")
        try await client.operations.deviceInformationChange.fcmRegistrationToken("fcm-demo-phone").executeAsync()
        narrator.line(
            "device", "push token fcm-demo-phone set on \(client.localData.deviceInformation?.idUsernamePairs.count ?? 0) dispatch target(s)")

        narrator.step("The bank pushes \(user) a payment to confirm on the phone: the payload is encrypted to the device (JWE) before it leaves")
        let payment = "Transfer EUR 250.00 to Carol"
        let push = try await backend.dispatch(
            .authentication,
            context: [
                "username": user, "transaction": [["contentType": "text/plain", "content": Base64URL.encode(Array(payment.utf8))]],
            ], dispatcher: "firebase-cloud-messaging", targetID: pair.identifier, as: user)
        narrator.line("rp", "FCM accepted message \(push.response) (the server exchanged its service-account assertion for an access token)")
        guard let message = await firebase.messages(atLeast: 1).last else { throw DemoFailure("no push arrived") }
        narrator.line(
            "device",
            "push for \(message.registrationToken): \(message.data.keys.sorted().joined(separator: ", ")); nma_data \(message.data["nma_data"]?.prefix(32) ?? "")…"
        )
        let pushedJSON = String(decoding: try JSONEncoder().encode(message.data), as: UTF8.self)
        let encrypted = try await client.operations.outOfBandPayloadDecode.json(pushedJSON).executeAsync()
        narrator.line("device", "decrypted a \(encrypted.contentType) payload with its key")
        guard case .authentication(let authentication) = try await client.operations.outOfBandOperation.payload(encrypted).executeAsync() else {
            throw DemoFailure("the push did not stand for an authentication")
        }
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(ScriptedPinUserVerifier(pins: ["246810"])).executeAsync()
        guard let shown = selector.shownContexts.first?.transactionConfirmationData, String(decoding: shown, as: UTF8.self) == payment else {
            throw DemoFailure("the payment was not shown before it was confirmed")
        }
        narrator.line("app", "showed \"\(payment)\" before confirming")
        let confirmed = try await backend.status(push.sessionID)
        guard confirmed["status"] as? String == "succeeded" else { throw DemoFailure("the status is \(confirmed)") }
        narrator.line("rp", "status: succeeded; token \((confirmed["tokenInformation"] as? [String: Any])?["tokenResult"] ?? "?")")

        narrator.step("A second push is lost on the way; back in the foreground the app fetches pending operations, and \(user) declines")
        let lost = "Transfer EUR 9,999.00 to Mallory"
        let second = try await backend.dispatch(
            .authentication,
            context: [
                "username": user, "transaction": [["contentType": "text/plain", "content": Base64URL.encode(Array(lost.utf8))]],
            ], dispatcher: "firebase-cloud-messaging", targetID: pair.identifier, as: user)
        let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
        guard pending.errors.isEmpty, let operation = pending.operations.last else { throw DemoFailure("no pending operation: \(pending.errors)") }
        narrator.line(
            "device", "\(pending.operations.count) pending operation(s), newest by \(operation.dispatcherName) at \(operation.creationTime)")
        guard case .authentication(let declined) = try await client.operations.outOfBandOperation.payload(operation.payload).executeAsync() else {
            throw DemoFailure("the pending operation did not stand for an authentication")
        }
        let decliner = ScriptedAuthenticatorSelector(choose: nil)
        do {
            _ = try await declined.authenticatorSelector(decliner).pinUserVerifier(ScriptedPinUserVerifier(pins: ["246810"])).executeAsync()
            throw DemoFailure("a declined payment was confirmed")
        } catch let error as OperationError {
            let seen = decliner.shownContexts.first?.transactionConfirmationData.map { String(decoding: $0, as: UTF8.self) } ?? "nothing"
            narrator.line("app", "showed \"\(seen)\"; the user declined: \(error.localizedDescription)")
        }
        let declinedStatus = try await backend.status(second.sessionID)["status"] ?? "?"
        narrator.line("rp", "status: \(declinedStatus) (nothing was signed; the request expires unanswered)")

        narrator.step("The first push's payload used a second time is refused")
        do {
            _ = try await client.operations.outOfBandOperation.payload(encrypted).executeAsync()
            throw DemoFailure("a redeemed token was accepted again")
        } catch let error as OutOfBandOperationError {
            narrator.line("app", "refused as expected: \(error.localizedDescription)")
        }
    }
}
