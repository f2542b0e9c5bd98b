import FIDOSimulation
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOPosix
import NIOSSL
import NevisProtocol
import Primitives
import UAF
import WireJSON

/// One connection's closed loop: the UAF flows, each step timed per endpoint.
struct ConnectionLoop: Sendable {
    let connection: Int
    let shared: SharedBudget
    /// Where `--replay-check` sends an accepted response again: the next server.
    let replayTarget: LoadTarget

    /// A UAF endpoint: the path posted to and the name it is reported under.
    struct Endpoint: Sendable {
        let path: String
        var method: HTTPMethod = .POST
        var name: String { method.rawValue + " " + path }
        static let requestRegistration = Endpoint(path: "/nevisfido/uaf/1.1/request/registration")
        static let registration = Endpoint(path: "/nevisfido/uaf/1.1/registration")
        static let requestAuthentication = Endpoint(path: "/nevisfido/uaf/1.1/request/authentication")
        static let authentication = Endpoint(path: "/nevisfido/uaf/1.1/authentication")
        static let passkeyCreationOptions = Endpoint(path: FIDO2API.attestationOptionsPath)
        static let passkeyRegistration = Endpoint(path: FIDO2API.attestationResultPath)
        static let passkeyRequestOptions = Endpoint(path: FIDO2API.assertionOptionsPath)
        static let passkeySignIn = Endpoint(path: FIDO2API.assertionResultPath)
        /// The baseline flow's endpoint, reported as `GET /health/live`.
        static let liveness = Endpoint(path: "/health/live", method: .GET)
    }

    /// Registers `user`; true when the server answered 1200.
    func register(
        _ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
        recorder: inout PhaseRecorder
    ) async -> Bool {
        let start = ContinuousClock.now
        do {
            let headers = try await authorization(for: user.username, plan: plan, endpoint: .requestRegistration)
            let context = try encode(.requestRegistration) { try UAFMessageCodec.encodeObject(["username": user.username]) }
            let request = try await uafRequest(
                try requestBody(.registration, context: context, endpoint: .requestRegistration), as: RegistrationRequest.self,
                endpoint: .requestRegistration, target: target, headers: headers, client: client, recorder: &recorder)
            let response = try encode(.registration) {
                var response = try user.authenticator.register(request, serverAppID: target.appID)
                try user.attest(&response.header, fcParams: response.fcParams, asked: request.header)
                return response
            }
            try await respond(response, endpoint: .registration, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// One login (with the plan's transaction, if any) by `user`; true when the server answered 1200.
    func authenticate(
        _ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
        recorder: inout PhaseRecorder
    ) async -> Bool {
        struct Context: Encodable {
            var username: String
            var transaction: [Transaction]?
        }
        let start = ContinuousClock.now
        do {
            let body: ByteBuffer
            if let built = user.authenticationRequestBody {
                body = built
            } else {
                let transaction = plan.transactionText.map { [Transaction(contentType: "text/plain", content: Base64URL.encode(Array($0.utf8)))] }
                let context = try encode(.requestAuthentication) {
                    try UAFMessageCodec.encodeObject(Context(username: user.username, transaction: transaction))
                }
                body = try requestBody(.authentication, context: context, endpoint: .requestAuthentication)
                user.authenticationRequestBody = body
            }
            let request = try await uafRequest(
                body, as: AuthenticationRequest.self,
                endpoint: .requestAuthentication, target: target, headers: [], client: client, recorder: &recorder)
            let response = try encode(.authentication) {
                var response = try user.authenticator.authenticate(request, serverAppID: target.appID)
                try user.attest(&response.header, fcParams: response.fcParams, asked: request.header)
                return response
            }
            try await respond(response, endpoint: .authentication, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// The relying party's bearer token for `username` as a header (none without a relying party): its own work,
    /// minted before the flow's first request.
    private func authorization(for username: String, plan: LoadPlan, endpoint: Endpoint) async throws(LoadFailure) -> [(String, String)] {
        guard let relyingParty = plan.relyingParty else { return [] }
        do { return [("Authorization", "Bearer " + (try await relyingParty.token(for: username)))] } catch {
            throw LoadFailure.malformed(endpoint: endpoint.name, detail: "minting the JWT: \(LoadHTTP.short(error))")
        }
    }

    /// Registers a passkey for `user` over nevisFIDO's FIDO2 API; true when the server answered `ok`.
    func registerPasskey(
        _ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
        recorder: inout PhaseRecorder
    ) async -> Bool {
        let start = ContinuousClock.now
        do {
            let headers =
                [("Content-Type", "application/json")]
                + (try await authorization(for: user.username, plan: plan, endpoint: .passkeyCreationOptions))
            let body = try encode(.passkeyCreationOptions) {
                ByteBuffer(bytes: try WireJSONEncoder().encode(FIDO2API.OptionsRequest(username: user.username, displayName: user.username)))
            }
            let options = try await fido2(
                body, as: FIDO2API.CreationOptions.self, endpoint: .passkeyCreationOptions, target: target, headers: headers,
                client: client, recorder: &recorder)
            let credential = try encode(.passkeyRegistration) { try user.passkeys.create(for: options) }
            try await finish(
                credential, endpoint: .passkeyRegistration, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// One passkey sign-in by `user`'s username; true when the server answered `ok`.
    func signInWithPasskey(
        _ user: inout VirtualUser, target: LoadTarget, plan: LoadPlan, client: isolated LoadClient,
        recorder: inout PhaseRecorder
    ) async -> Bool {
        let start = ContinuousClock.now
        do {
            let body: ByteBuffer
            if let built = user.passkeyOptionsBody {
                body = built
            } else {
                body = try encode(.passkeyRequestOptions) {
                    ByteBuffer(bytes: try WireJSONEncoder().encode(FIDO2API.OptionsRequest(username: user.username)))
                }
                user.passkeyOptionsBody = body
            }
            let options = try await fido2(
                body, as: FIDO2API.RequestOptions.self, endpoint: .passkeyRequestOptions, target: target,
                headers: [("Content-Type", "application/json")], client: client, recorder: &recorder)
            let credential = try encode(.passkeySignIn) { try user.passkeys.get(for: options) }
            try await finish(credential, endpoint: .passkeySignIn, target: target, start: start, plan: plan, client: client, recorder: &recorder)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// Posts a FIDO2 options request and decodes a 200 answer.
    private func fido2<Answer: Decodable>(
        _ body: ByteBuffer, as: Answer.Type, endpoint: Endpoint, target: LoadTarget, headers: [(String, String)],
        client: isolated LoadClient, recorder: inout PhaseRecorder
    ) async throws -> Answer {
        let (status, answer) = try await timed(endpoint, target: target, body: body, headers: headers, client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status, detail: Self.fido2Reason(answer)) }
        return try decode(endpoint) { try WireJSONDecoder().decode(Answer.self, from: answer.readableBytesView) }
    }

    /// The FIDO2 API's `errorMessage` of a refusal, cut to 160 bytes (a report groups its errors by their text).
    static func fido2Reason(_ answer: ByteBuffer) -> String? {
        guard let refusal = try? WireJSONDecoder().decode(FIDO2API.ServerResponse.self, from: answer.readableBytesView),
            !refusal.errorMessage.isEmpty
        else { return nil }
        return String(decoding: Array(refusal.errorMessage.utf8.prefix(160)), as: UTF8.self)
    }

    /// Posts a FIDO2 result and requires `ok`; with `--replay-check` sends it again to the next server, where it must be
    /// refused; then counts the flow as completed.
    private func finish(
        _ credential: FIDO2API.Credential, endpoint: Endpoint, target: LoadTarget, start: ContinuousClock.Instant, plan: LoadPlan,
        client: isolated LoadClient, recorder: inout PhaseRecorder
    ) async throws {
        let bytes = try encode(endpoint) { ByteBuffer(bytes: try WireJSONEncoder().encode(credential)) }
        let headers = [("Content-Type", "application/json")]
        let (status, answer) = try await timed(endpoint, target: target, body: bytes, headers: headers, client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status, detail: Self.fido2Reason(answer)) }
        let elapsed = (ContinuousClock.now - start).microseconds
        if plan.replayCheck,
            let (status, _) = try? await client.post(replayTarget, path: endpoint.path, endpoint: endpoint.name, body: bytes, headers: headers),
            status == 200
        {
            throw LoadFailure.replayAccepted(endpoint: endpoint.name)
        }
        recorder.completed(flowMicroseconds: elapsed)
        shared.finished(success: true)
    }

    /// One baseline flow (see ``LoadPlan/Flow/baseline``): two liveness probes, each of which must answer 200.
    func probe(target: LoadTarget, client: isolated LoadClient, recorder: inout PhaseRecorder) async -> Bool {
        let start = ContinuousClock.now
        do {
            for _ in 0..<2 {
                let (status, _) = try await timed(.liveness, target: target, body: nil, headers: [], client: client, recorder: &recorder)
                guard status == 200 else { throw LoadFailure.http(endpoint: Endpoint.liveness.name, status: status) }
            }
            recorder.completed(flowMicroseconds: (ContinuousClock.now - start).microseconds)
            shared.finished(success: true)
            return true
        } catch {
            await failed(error, recorder: &recorder, client: client)
            return false
        }
    }

    /// Records a failed flow; after a connection error the loop pauses briefly, as a real client backs off, instead
    /// of spinning on a server that is down.
    private func failed(_ error: any Error, recorder: inout PhaseRecorder, client: isolated LoadClient) async {
        let failure = error as? LoadFailure ?? .malformed(endpoint: "flow", detail: LoadHTTP.short(error))
        recorder.failed(failure)
        shared.finished(success: false)
        if case .transport = failure { try? await Task.sleep(for: .milliseconds(100)) }
    }

    /// The JSON body of a GetUAFRequest for `operation` with `context`.
    private func requestBody(_ operation: UAFOperation, context: String, endpoint: Endpoint) throws(LoadFailure) -> ByteBuffer {
        try encode(endpoint) { ByteBuffer(bytes: try WireJSONEncoder().encode(GetUAFRequest(op: operation, context: context))) }
    }

    /// Posts a GetUAFRequest (its JSON `body`, see ``requestBody(_:context:endpoint:)``) and returns the first message
    /// of a 1200 answer's `uafRequest`.
    private func uafRequest<Message: Decodable>(
        _ body: ByteBuffer, as: Message.Type, endpoint: Endpoint, target: LoadTarget,
        headers: [(String, String)], client: isolated LoadClient,
        recorder: inout PhaseRecorder
    ) async throws -> Message {
        let (status, answer) = try await timed(endpoint, target: target, body: body, headers: headers, client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status) }
        let decoded = try decode(endpoint) { try WireJSONDecoder().decode(ReturnUAFRequest.self, from: answer.readableBytesView) }
        guard decoded.statusCode == 1200 else { throw LoadFailure.uaf(endpoint: endpoint.name, statusCode: decoded.statusCode) }
        guard let request = decoded.uafRequest else { throw LoadFailure.malformed(endpoint: endpoint.name, detail: "1200 without uafRequest") }
        guard let message = try decode(endpoint, { try UAFMessageCodec.decode(Message.self, from: request) }).first else {
            throw LoadFailure.malformed(endpoint: endpoint.name, detail: "no request")
        }
        return message
    }

    /// Posts the signed response and requires 1200; with `--replay-check` sends it again to the next server, where it
    /// must be refused; then counts the flow as completed.
    private func respond(
        _ response: some Encodable, endpoint: Endpoint, target: LoadTarget, start: ContinuousClock.Instant, plan: LoadPlan,
        client: isolated LoadClient, recorder: inout PhaseRecorder
    ) async throws {
        let bytes = try encode(endpoint) {
            ByteBuffer(bytes: try WireJSONEncoder().encode(SendUAFResponse(uafResponse: try UAFMessageCodec.encode([response]))))
        }
        let (status, answer) = try await timed(endpoint, target: target, body: bytes, headers: [], client: client, recorder: &recorder)
        guard status == 200 else { throw LoadFailure.http(endpoint: endpoint.name, status: status) }
        let decoded = try decode(endpoint) { try WireJSONDecoder().decode(StatusOnly.self, from: answer.readableBytesView) }
        guard decoded.statusCode == 1200 else { throw LoadFailure.uaf(endpoint: endpoint.name, statusCode: decoded.statusCode) }
        let elapsed = (ContinuousClock.now - start).microseconds
        if plan.replayCheck {
            // Anything but a refusal is a replay accepted. A replay that gets no answer at all proves nothing either
            // way and is not counted.
            if let (status, answer) = try? await client.post(replayTarget, path: endpoint.path, endpoint: endpoint.name, body: bytes, headers: []),
                status == 200, (try? WireJSONDecoder().decode(StatusOnly.self, from: answer.readableBytesView))?.statusCode == 1200
            {
                throw LoadFailure.replayAccepted(endpoint: endpoint.name)
            }
        }
        recorder.completed(flowMicroseconds: elapsed)
        shared.finished(success: true)
    }

    /// The one field of a ServerResponse the generator reads: the tokens it carries are not materialized.
    private struct StatusOnly: Decodable { var statusCode: Int }

    /// Sends `body` (none for a GET) to the endpoint with its method and records how long the answer took.
    private func timed(
        _ endpoint: Endpoint, target: LoadTarget, body: ByteBuffer?, headers: [(String, String)], client: isolated LoadClient,
        recorder: inout PhaseRecorder
    ) async throws(LoadFailure) -> (Int, ByteBuffer) {
        let start = ContinuousClock.now
        let answer = try await client.send(endpoint.method, target, path: endpoint.path, endpoint: endpoint.name, body: body, headers: headers)
        recorder.record(endpoint: endpoint.name, microseconds: (ContinuousClock.now - start).microseconds)
        return answer
    }

    private func encode<T>(_ endpoint: Endpoint, _ body: () throws -> T) throws(LoadFailure) -> T {
        do { return try body() } catch { throw .malformed(endpoint: endpoint.name, detail: "building the message: \(LoadHTTP.short(error))") }
    }

    private func decode<T>(_ endpoint: Endpoint, _ body: () throws -> T) throws(LoadFailure) -> T {
        do { return try body() } catch { throw .malformed(endpoint: endpoint.name, detail: "decoding the answer: \(LoadHTTP.short(error))") }
    }
}
