import FIDOAttestation
import Foundation
import WebAuthn
import X509

/// The relying party's passkey settings, read once when the server is built from `fido2` (``ServerConfiguration/FIDO2``):
/// the RP ID and origins as the WebAuthn core takes them, the attestation policy, the attestation roots (parsed once,
/// not per registration) and the algorithms offered.
package struct PasskeySettings: Sendable {
    package let configuration: ServerConfiguration.FIDO2
    let relyingParty: RelyingParty
    let policy: AttestationPolicy
    let roots: [Certificate]
    let revocationLists: [RevocationList]
    let algorithms: [COSEAlgorithm]
    let minimumUserVerification: UserVerificationRequirement
    var rpName: String { configuration.rpName ?? configuration.rpId }
    var timeout: TimeInterval { TimeInterval(configuration.timeoutSeconds) }

    package init(_ configuration: ServerConfiguration.FIDO2) throws {
        self.configuration = configuration
        relyingParty = RelyingParty(id: configuration.rpId, origins: configuration.acceptedOrigins)
        algorithms = configuration.algorithms.compactMap { ServerConfiguration.FIDO2.algorithmIdentifiers[$0].flatMap(COSEAlgorithm.init(rawValue:)) }
        minimumUserVerification = UserVerificationRequirement(rawValue: configuration.userVerification) ?? .required
        // The user verification the configuration asks for holds at registration too: a passkey made without it
        // would later sign in under `required` and fail every time.
        let verifies = minimumUserVerification == .required
        switch configuration.attestationPolicy {
        case "enterprise":
            var policy = AttestationPolicy.enterprise(allowedAAGUIDs: configuration.allowedAAGUIDs.map { Set($0.compactMap(AAGUID.bytes)) })
            policy.requiresUserVerification = verifies
            self.policy = policy
        case "conformance":
            var policy = AttestationPolicy.conformance
            policy.requiresUserVerification = verifies
            self.policy = policy
        default:
            policy = AttestationPolicy(
                requireTrustedAttestation: false, allowsAuthenticatorsWithoutMetadata: true, requiresUserVerification: verifies)
        }
        roots =
            try configuration.attestationRootsPath.map { try ServerConfiguration.readCertificates($0, setting: "fido2.attestationRootsPath") } ?? []
        if let path = configuration.attestationRevocationListsPath {
            let bytes = try ServerConfiguration.readFile(path, setting: "fido2.attestationRevocationListsPath")
            do { revocationLists = try RevocationList.lists(in: Array(bytes)) } catch {
                throw ServerConfiguration.ConfigurationError.invalid("fido2.attestationRevocationListsPath \(path): \(error)")
            }
            guard !revocationLists.isEmpty else {
                throw ServerConfiguration.ConfigurationError.invalid("fido2.attestationRevocationListsPath \(path): no revocation list")
            }
        } else {
            revocationLists = []
        }
    }

    /// The attestation conveyance registration options carry: what the request asks for, or the policy's
    /// (``AttestationPolicy/conveyance``); under a policy that requires trusted attestation a request for `none` or
    /// `indirect` is raised to `direct`, since the browser would strip the chain the policy then demands.
    func conveyance(asked: String?) throws -> String {
        let asked = asked ?? policy.conveyance
        guard ["none", "indirect", "direct", "enterprise"].contains(asked) else {
            throw Refusal(.badRequest, "bad_request", "attestation must be none, indirect, direct or enterprise")
        }
        return policy.requireTrustedAttestation && (asked == "none" || asked == "indirect") ? "direct" : asked
    }

    /// The stronger of the configured minimum and what a request asks for; a request never lowers it.
    func userVerification(asked: String?) throws -> UserVerificationRequirement {
        guard let asked else { return minimumUserVerification }
        guard let requested = UserVerificationRequirement(rawValue: asked) else {
            throw Refusal(.badRequest, "bad_request", "userVerification must be required, preferred or discouraged")
        }
        let order: [UserVerificationRequirement] = [.discouraged, .preferred, .required]
        return order.firstIndex(of: requested)! > order.firstIndex(of: minimumUserVerification)! ? requested : minimumUserVerification
    }
}
