import Foundation
import NevisProtocol
import Primitives
import WireJSON

/// A passkey sign-in's outcome: the server's session, as a UAF login hands it out.
package struct PasskeySignIn: Sendable {
    /// The session's JWT (`method` `passkey`), when the server sent one.
    package let authorizationProvider: (any AuthorizationProvider)?
    /// The credential that signed, base64url.
    package let credentialID: String
}

/// nevisFIDO's FIDO2 API (passkeys) around the platform's passkey authenticator: options, the platform's ceremony,
/// result. The options may be retried as any request; a result never is (its challenge is single-use).
extension OperationRunner {
    static let jsonContentType = "application/json"

    /// Registers a new passkey of `username` (the operation's headers carry the authorization the server requires: a
    /// session of hers, or the relying party's token).
    package func registerPasskey(
        server: Server, username: String, displayName: String?, friendlyName: String?, provider: any PasskeyProvider
    ) async throws(OperationError) -> String {
        let options: FIDO2API.CreationOptions = try await fido2(
            server: server, path: FIDO2API.attestationOptionsPath,
            body: FIDO2API.OptionsRequest(
                username: username, displayName: displayName ?? username,
                authenticatorSelection: .init(authenticatorAttachment: "platform", residentKey: "required", userVerification: "required"),
                attestation: "none"),
            retried: true)
        guard let challenge = Base64URL.decode(options.challenge), let userID = Base64URL.decode(options.user.id) else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the server's creation options are not base64url"))
        }
        let request = PasskeyCreationRequest(
            relyingPartyID: options.rp.id, challenge: challenge, userID: userID, userName: options.user.name,
            displayName: options.user.displayName, excludedCredentialIDs: options.excludeCredentials.compactMap { Base64URL.decode($0.id) },
            userVerification: options.authenticatorSelection.userVerification ?? "preferred", attestation: options.attestation,
            algorithms: options.pubKeyCredParams.map(\.alg))
        let created: PasskeyRegistrationResult
        do { created = try await provider.createPasskey(request) } catch { throw Self.operationError(error) }
        let credentialID = Base64URL.encode(created.credentialID)
        var credential = FIDO2API.Credential(
            id: credentialID,
            response: .init(
                clientDataJSON: Base64URL.encode(created.clientDataJSON), attestationObject: Base64URL.encode(created.attestationObject),
                transports: created.transports),
            userFriendlyName: friendlyName)
        credential.clientExtensionResults = .init(credProps: .init(rk: true))
        let _: FIDO2API.ServerResponse = try await fido2(server: server, path: FIDO2API.attestationResultPath, body: credential, retried: false)
        return credentialID
    }

    /// Signs in with a passkey: `username` narrows the allowed credentials where the server lists them; nil (or
    /// empty) asks for any of the relying party's passkeys on the device (discoverable).
    package func authenticateWithPasskey(
        server: Server, username: String?, mediation: PasskeyMediation, provider: any PasskeyProvider
    ) async throws(OperationError) -> PasskeySignIn {
        let options: FIDO2API.RequestOptions = try await fido2(
            server: server, path: FIDO2API.assertionOptionsPath,
            body: FIDO2API.OptionsRequest(username: username ?? "", userVerification: "required"),
            retried: true)
        guard let challenge = Base64URL.decode(options.challenge) else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the server's request options are not base64url"))
        }
        let request = PasskeyAssertionRequest(
            relyingPartyID: options.rpId, challenge: challenge, allowedCredentialIDs: options.allowCredentials.compactMap { Base64URL.decode($0.id) },
            userVerification: options.userVerification, mediation: mediation)
        let signed: PasskeyAssertionResult
        do { signed = try await provider.assertPasskey(request) } catch { throw Self.operationError(error) }
        let credentialID = Base64URL.encode(signed.credentialID)
        let credential = FIDO2API.Credential(
            id: credentialID,
            response: .init(
                clientDataJSON: Base64URL.encode(signed.clientDataJSON), authenticatorData: Base64URL.encode(signed.authenticatorData),
                signature: Base64URL.encode(signed.signature), userHandle: signed.userHandle.map { Base64URL.encode($0) }))
        let answer: FIDO2API.ServerResponse = try await fido2(server: server, path: FIDO2API.assertionResultPath, body: credential, retried: false)
        return PasskeySignIn(authorizationProvider: answer.token.map { JwtAuthorizationProvider(jwt: $0) }, credentialID: credentialID)
    }

    /// The operation's error for a platform that made no passkey or signature.
    static func operationError(_ failure: PasskeyFailure) -> OperationError {
        switch failure.kind {
        case .cancelled: return .FidoError(errorCode: .userCanceled, cause: failure)
        case .noCredential, .alreadyRegistered, .notSupported: return .FidoError(errorCode: .noSuitableAuthenticator, cause: failure)
        case .failed: return .FidoError(errorCode: .unknown, cause: failure)
        }
    }

    /// POSTs `body` as JSON to one of the FIDO2 API's endpoints and decodes a 200 `ok` answer. A refusal in the API's
    /// shape (`status` `failed`, `errorMessage`) is the operation's error with the server's message; 401, 403 and 429
    /// as for UAF.
    private func fido2<Body: Encodable, Answer: Decodable>(
        server: Server, path: String, body: Body, retried: Bool
    ) async throws(OperationError) -> Answer {
        let data: Data
        do { data = Data(try WireJSONEncoder().encode(body)) } catch { throw .Unknown(cause: error) }
        let request = HTTPRequest(
            method: .POST, url: core.configuration.url(path, base: server.baseUrl), body: data, headers: headers, accept: Self.jsonContentType,
            contentType: Self.jsonContentType)
        let exchange: HTTPExchange
        if retried {
            exchange = try await send(request, server: server)
        } else {
            do { exchange = try await core.transport.send(request) } catch { throw map(error, request: request, server: server) }
        }
        let refusal = try? WireJSONDecoder().decode(FIDO2API.ServerResponse.self, from: exchange.body)
        if exchange.status == 200, refusal?.status != "failed", let answer = try? WireJSONDecoder().decode(Answer.self, from: exchange.body) {
            return answer
        }
        if let refusal, refusal.status == "failed", ![401, 403, 429].contains(exchange.status) {
            let http = HttpError(request: request, server: server, exchange: exchange, underlying: nil)
            throw .FidoError(
                errorCode: .protocolError,
                cause: ServerStatusError(statusCode: 0, httpStatus: exchange.status, message: refusal.errorMessage, httpError: http))
        }
        throw Self.serverFailure(exchange, statusCode: 0, request: request, server: server, now: core.platform.now())
    }
}
