import FIDOServer
import FIDOSimulation
import Foundation
import NevisProtocol

/// The passkey steps a browser takes against the server under test, with the software passkey authenticator in place
/// of the browser's: written once for the in-process and the loopback server.
extension ServerUnderTest {
    /// Posts `body` as `application/json` to the FIDO2 API.
    public func fido2(_ path: String, _ body: some Encodable, headers: [(String, String)] = []) async throws -> TestAnswer {
        try await exchange(.POST, path, body: try JSONEncoder().encode(body), contentType: "application/json", headers: headers)
    }

    /// Registration options for `username`, authorized by the relying party's token (or `headers`).
    public func passkeyCreationOptions(
        username: String, displayName: String? = nil, headers: [(String, String)]? = nil,
        selection: FIDO2API.AuthenticatorSelection? = nil
    ) async throws -> FIDO2API.CreationOptions {
        let credentials: [(String, String)]
        if let headers { credentials = headers } else { credentials = try await bearer(username) }
        let answer = try await fido2(
            FIDO2API.attestationOptionsPath,
            FIDO2API.OptionsRequest(username: username, displayName: displayName ?? username, authenticatorSelection: selection),
            headers: credentials)
        guard answer.status == 200 else {
            throw UnexpectedAnswer(
                description: "registration options for \(username): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        return try JSONDecoder().decode(FIDO2API.CreationOptions.self, from: answer.body)
    }

    /// What `authenticator` answers to `options`, as the browser's `toJSON()` sends it.
    public static func attestation(
        _ authenticator: inout SoftwarePasskeyAuthenticator, for options: FIDO2API.CreationOptions,
        attestation: SoftwarePasskeyAuthenticator.Attestation = .none
    ) throws -> FIDO2API.Credential {
        try authenticator.create(for: options, attestation: attestation)
    }

    /// Registers a passkey of `authenticator` for `username`; the answer of `/attestation/result`.
    @discardableResult
    public func registerPasskey(
        _ authenticator: inout SoftwarePasskeyAuthenticator, username: String, headers: [(String, String)]? = nil,
        attestation: SoftwarePasskeyAuthenticator.Attestation = .none
    ) async throws -> TestAnswer {
        let options = try await passkeyCreationOptions(username: username, headers: headers)
        return try await fido2(FIDO2API.attestationResultPath, try Self.attestation(&authenticator, for: options, attestation: attestation))
    }

    /// Authentication options (`username` empty: a sign-in without a username).
    public func passkeyRequestOptions(username: String, headers: [(String, String)] = []) async throws -> FIDO2API.RequestOptions {
        let answer = try await fido2(FIDO2API.assertionOptionsPath, FIDO2API.OptionsRequest(username: username), headers: headers)
        guard answer.status == 200 else {
            throw UnexpectedAnswer(
                description: "authentication options for \(username): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        return try JSONDecoder().decode(FIDO2API.RequestOptions.self, from: answer.body)
    }

    /// What `authenticator` answers to `options`.
    public static func assertion(
        _ authenticator: inout SoftwarePasskeyAuthenticator, for options: FIDO2API.RequestOptions
    ) throws -> FIDO2API.Credential {
        try authenticator.get(for: options)
    }

    /// Signs in with `authenticator` (by `username`, or without one when it is empty); the answer of `/assertion/result`.
    public func signInWithPasskey(
        _ authenticator: inout SoftwarePasskeyAuthenticator, username: String,
        headers: [(String, String)] = []
    ) async throws -> TestAnswer {
        let options = try await passkeyRequestOptions(username: username, headers: headers)
        return try await fido2(FIDO2API.assertionResultPath, try Self.assertion(&authenticator, for: options))
    }
}

extension ServerUnderTest {
    /// The status service's answer for `sessionID` (which must be 200).
    public func passkeyStatus(_ sessionID: String) async throws -> FIDO2API.StatusResponse {
        let answer = try await fido2(FIDO2API.statusPath, FIDO2API.StatusQuery(fido2SessionId: sessionID))
        guard answer.status == 200 else {
            throw UnexpectedAnswer(description: "status of \(sessionID): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
        }
        return try JSONDecoder().decode(FIDO2API.StatusResponse.self, from: answer.body)
    }
}

/// The answer body of the FIDO2 API's result endpoints and refusals.
public func fido2Response(_ answer: TestAnswer) throws -> FIDO2API.ServerResponse {
    try JSONDecoder().decode(FIDO2API.ServerResponse.self, from: answer.body)
}
