import Foundation
import NevisProtocol
import Primitives
import UAF

extension OperationRunner {
    /// What the app answered a server's app attestation ask with: the header extension, and for App Attest whether it
    /// attested (the key's first use with this server, remembered once the server accepts); nil for a Play Integrity
    /// token, which is good for its operation only and leaves nothing to remember.
    struct AppAttestationAnswer: Sendable {
        let headerExtension: Extension
        let attested: Bool?
    }

    /// The answer to the app attestation `header` asks for (NevisProtocol's `AppAttestationWire`), over
    /// `fcParams`; nil when nothing is asked, the app did not configure ``Configuration/appAttestation``, or the
    /// device cannot attest (the Simulator, a device without Play Integrity): then the server's policy decides.
    func appAttestation(asked header: OperationHeader, fcParams: String, server: Server) async throws(OperationError) -> AppAttestationAnswer? {
        guard AppAttestationWire.asked(in: header) != nil, let configured = core.configuration.appAttestation else { return nil }
        switch configured.kind {
        case .appAttest:
            guard let provider = core.platform.appAttest, provider.isSupported else { return nil }
            return try await appAttest(provider, fcParams: fcParams, server: server)
        case .playIntegrity(let cloudProjectNumber):
            guard let provider = core.platform.playIntegrity else { return nil }
            let token: String
            do {
                token = try await provider.standardIntegrityToken(
                    cloudProjectNumber: cloudProjectNumber, requestHash: AppAttestationWire.requestHash(fcParams: fcParams))
            } catch { throw .AppAttestationError(cause: error) }
            do {
                let answer = AppAttestationWire.Answer(platform: "android", playIntegrityToken: token)
                return AppAttestationAnswer(headerExtension: try answer.headerExtension(), attested: nil)
            } catch { throw .AppAttestationError(cause: error) }
        }
    }

    /// App Attest's answer: the install's key is made once and kept; a key the service no longer knows is made again
    /// once.
    private func appAttest(_ provider: any AppAttestProvider, fcParams: String, server: Server) async throws(OperationError) -> AppAttestationAnswer {
        let hash = Data(AppAttestationWire.clientDataHash(fcParams: fcParams))
        var state = core.mirror.snapshot.appAttest
        for attempt in 0..<2 {
            do {
                if state == nil {
                    let keyId = try await provider.generateKey()
                    // Kept before it is used: the key exists in the Secure Enclave from now on.
                    let fresh = LocalAppAttest(keyId: keyId, attestedServers: [])
                    try await core.commit { $0.appAttest = fresh }
                    state = fresh
                }
                guard let current = state, let keyID = Data(base64Encoded: current.keyId) else {
                    throw AppAttestKeyInvalid()
                }
                let attested = current.attestedServers.contains(server.baseUrl.absoluteString)
                let answer: AppAttestationWire.Answer
                if attested {
                    let assertion = try await provider.generateAssertion(current.keyId, clientDataHash: hash)
                    answer = AppAttestationWire.Answer(platform: "apple", keyId: Base64URL.encode(keyID), assertion: Base64URL.encode(assertion))
                } else {
                    let attestation = try await provider.attestKey(current.keyId, clientDataHash: hash)
                    answer = AppAttestationWire.Answer(platform: "apple", keyId: Base64URL.encode(keyID), attestation: Base64URL.encode(attestation))
                }
                return AppAttestationAnswer(headerExtension: try answer.headerExtension(), attested: !attested)
            } catch is AppAttestKeyInvalid where attempt == 0 {
                // The service lost the key (a restore onto another device): a new key, attested again everywhere.
                state = nil
                continue
            } catch { throw .AppAttestationError(cause: error) }
        }
        throw .AppAttestationError(cause: AppAttestKeyInvalid())
    }

    /// A response header's extensions: the request's, less the server's ask, plus the app's `answer` when it gave one.
    static func extensions(_ requested: [Extension]?, answering answer: AppAttestationAnswer?) -> [Extension]? {
        let kept = requested?.filter { $0.id != AppAttestationWire.extensionID }
        guard let answer else { return kept }
        return (kept ?? []) + [answer.headerExtension]
    }

    /// After the server's answer: an accepted attestation is remembered, so this server gets assertions from now on;
    /// a refused assertion (the server lost the key, UAF 1497) is forgotten, so the next operation attests again.
    func appAttestationSettled(_ answer: AppAttestationAnswer?, server: Server, accepted: Bool) async {
        guard let attested = answer?.attested, attested == accepted else { return }
        let name = server.baseUrl.absoluteString
        // Best effort: failing to remember costs one more attestation, never a wrong verdict.
        _ = try? await core.commit { data in
            guard var state = data.appAttest else { return }
            if accepted, !state.attestedServers.contains(name) { state.attestedServers.append(name) }
            if !accepted { state.attestedServers.removeAll { $0 == name } }
            data.appAttest = state
        }
    }
}
