import NevisProtocol
import Primitives

/// The software passkey authenticator behind nevisFIDO's FIDO2 API, as a browser's page drives it: it answers the
/// server's options and writes its answer as `PublicKeyCredential.toJSON()` would. One home for the tools and tests
/// that play the browser (`mauth demo`, `mauth load --flow passkey`, the server's tests).
extension SoftwarePasskeyAuthenticator {
    /// `navigator.credentials.create()` for `options`: a new credential of the first algorithm offered it can make.
    public mutating func create(for options: FIDO2API.CreationOptions, attestation: Attestation = .none) throws -> FIDO2API.Credential {
        let made = try create(
            rpID: options.rp.id, challenge: Base64URL.decodeBytes(options.challenge) ?? [],
            userHandle: Base64URL.decodeBytes(options.user.id) ?? [], algorithms: options.pubKeyCredParams.map(\.alg),
            attestation: attestation)
        // credProps: the credential is discoverable, as a browser reports for a passkey.
        return FIDO2API.Credential(
            id: Base64URL.encode(made.credentialID),
            response: .init(
                clientDataJSON: Base64URL.encode(made.clientDataJSON),
                attestationObject: Base64URL.encode(made.attestationObject), transports: made.transports),
            clientExtensionResults: .init(credProps: .init(rk: true)))
    }

    /// `navigator.credentials.get()` for `options`: the newest credential the allow list names (any discoverable one
    /// for the RP ID when it is empty).
    public mutating func get(for options: FIDO2API.RequestOptions) throws -> FIDO2API.Credential {
        let signed = try get(
            rpID: options.rpId, challenge: Base64URL.decodeBytes(options.challenge) ?? [],
            allowCredentials: options.allowCredentials.compactMap { Base64URL.decodeBytes($0.id) })
        return FIDO2API.Credential(
            id: Base64URL.encode(signed.credentialID),
            response: .init(
                clientDataJSON: Base64URL.encode(signed.clientDataJSON),
                authenticatorData: Base64URL.encode(signed.authenticatorData),
                signature: Base64URL.encode(signed.signature), userHandle: Base64URL.encode(signed.userHandle)))
    }
}
