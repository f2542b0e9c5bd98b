import Crypto
import FIDOAttestation
import Foundation
import NevisProtocol
import Primitives
import WebAuthn
import WireJSON
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
    /// The providers' names by AAGUID (the bundled list and `providerNamesPath`'s), read once.
    let providers: PasskeyProviders
    /// The key of the decoy credential IDs (`allowCredentials` `listWithDecoys`), shared by every instance through the
    /// database (``withDecoyKey(from:now:)``); nil in the other modes.
    private(set) var decoyKey: SymmetricKey?
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
        providers = try PasskeyProviders(file: configuration.providerNamesPath)
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

    /// These settings with the decoys' key, read from (or, on the first start, made in) the database, when the mode
    /// uses decoys.
    package func withDecoyKey(from secrets: ServerSecretStore, now: Date) async throws -> PasskeySettings {
        guard configuration.allowCredentials == "listWithDecoys" else { return self }
        var settings = self
        let secret = try await secrets.secret(named: "fido2-decoy-credentials", candidate: SecureRandom.bytes(32), now: now)
        settings.decoyKey = SymmetricKey(data: secret)
        return settings
    }

    /// One or two credential IDs for `username`, of the lengths platform and roaming authenticators use (16, 20, 32 or
    /// 64 bytes), with a synced passkey's transports: an HMAC of the RP ID and the username, so the same username gets
    /// the same decoys from every call and every instance, and nobody without the key can tell them from real ones.
    func decoys(for username: String) -> [FIDO2API.CredentialDescriptor] {
        guard let decoyKey else { return [] }
        var mac = HMAC<SHA256>(key: decoyKey)
        mac.update(data: Array("\(configuration.rpId)\u{0}\(username)".utf8))
        let seed = Array(mac.finalize())
        let lengths = [16, 20, 32, 64]
        return (0..<(1 + Int(seed[0] & 1))).map { index in
            let length = lengths[Int(seed[1 + index] & 3)]
            var bytes: [UInt8] = []
            // Each ID: HMAC(seed, index, block) blocks cut to its length.
            for block in 0..<((length + 31) / 32) {
                var expand = HMAC<SHA256>(key: decoyKey)
                expand.update(data: seed + [UInt8(index), UInt8(block)])
                bytes += Array(expand.finalize())
            }
            return FIDO2API.CredentialDescriptor(id: Base64URL.encode(bytes.prefix(length)), transports: ["hybrid", "internal"])
        }
    }

    /// The attestation conveyance registration options carry: what the request asks for, or the configured
    /// ``ServerConfiguration/FIDO2/attestationConveyance``, or the policy's (``AttestationPolicy/conveyance``); under a
    /// policy that requires trusted attestation a request for `none` or `indirect` is raised to `direct`, since the
    /// browser would strip the chain the policy then demands.
    func conveyance(asked: String?) throws -> String {
        let asked = asked ?? configuration.attestationConveyance ?? policy.conveyance
        guard ["none", "indirect", "direct", "enterprise"].contains(asked) else {
            throw Refusal(.badRequest, "bad_request", "attestation must be none, indirect, direct or enterprise")
        }
        return policy.requireTrustedAttestation && (asked == "none" || asked == "indirect") ? "direct" : asked
    }

    /// The extension inputs registration options carry for the relying party's configuration, in place of a
    /// request's: credential protection (nevisFIDO's names), `largeBlob` and `prf`.
    var registrationExtensions: [String: JSONValue] {
        var inputs: [String: JSONValue] = [:]
        if let protection = configuration.credentialProtection {
            inputs["credentialProtectionPolicy"] = .string(protection.policy)
            inputs["enforceCredentialProtectionPolicy"] = .bool(protection.enforce)
        }
        if let largeBlob = configuration.largeBlob { inputs["largeBlob"] = .object(["support": .string(largeBlob)]) }
        if configuration.prf { inputs["prf"] = .object([:]) }
        return inputs
    }

    /// The hints options carry: the request's when it names any (an empty list names none), the configured ones
    /// otherwise; nil when there are none, so the member is left out.
    func hints(asked: [String]?) throws -> [String]? {
        if let asked, let problem = ServerConfiguration.FIDO2.hintProblem(asked) {
            throw Refusal(.badRequest, "bad_request", "hints: \(problem)")
        }
        let hints = asked ?? configuration.hints
        return hints.isEmpty ? nil : hints
    }

    /// What a request asks for, echoed, unless the configured minimum is stronger: the floor only raises it. A request
    /// that asks nothing asks `preferred` (nevisFIDO's default), raised likewise.
    func userVerification(asked: String?) throws -> UserVerificationRequirement {
        guard let requested = UserVerificationRequirement(rawValue: asked ?? "preferred") else {
            throw Refusal(.badRequest, "bad_request", "userVerification must be required, preferred or discouraged")
        }
        let order: [UserVerificationRequirement] = [.discouraged, .preferred, .required]
        return order.firstIndex(of: requested)! > order.firstIndex(of: minimumUserVerification)! ? requested : minimumUserVerification
    }
}
