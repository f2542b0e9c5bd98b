import AppAttestation
import FIDOAttestation
import Foundation
import NevisProtocol
import Primitives
import UAF
import WireJSON

/// App attestation: whether an operation's request came from the bank's genuine app (Apple's App Attest), asked
/// per policy set and operation (``ServerConfiguration/AppAttestationModes``), on the wire as
/// `NevisProtocol/AppAttestationWire` says. Refused under `require`: UAF status 1497 (unacceptable client
/// capabilities), the reason in the audit line.
package struct AppAttestationGate: Sendable {
    /// The stores it writes: the App Attest keys.
    struct UsedStores: Sendable {
        let keys: AppAttestKeyStore
        init(_ stores: Stores) { keys = stores.appAttestKeys }
    }

    /// The operation an app attestation protects.
    enum Operation: String, Sendable {
        case registration, authentication, transaction
    }

    let environment: ServiceEnvironment
    let stores: UsedStores
    let settings: AppAttestationSettings
    var apple: AppleAppAttest? { settings.apple }

    /// What a request for `operation` under the policy set its context names (`policyName`; nil: `default`) asks of
    /// the app: the set's mode, then the `default` set's, then `off`; a transaction without its own follows the
    /// set's authentication mode. The request keeps it (``UAFCeremony/appAttestation``).
    func ask(_ operation: Operation, policyName: String?) -> ServerConfiguration.AppAttestationMode {
        func mode(in set: String) -> ServerConfiguration.AppAttestationMode? {
            guard let modes = settings.policies[set]?.appAttestation else { return nil }
            switch operation {
            case .registration: return modes.registration
            case .authentication: return modes.authentication
            case .transaction: return modes.transaction ?? modes.authentication
            }
        }
        return (policyName.flatMap { mode(in: $0) } ?? mode(in: "default")) ?? .off
    }

    /// The stored ask: nil when the mode is off.
    static func stored(_ mode: ServerConfiguration.AppAttestationMode) -> String? { mode == .off ? nil : mode.rawValue }

    /// The extensions a request's header carries for its stored ask: none when it asks nothing.
    static func requestExtensions(asked: String?) -> [Extension]? {
        guard let asked else { return nil }
        return [Extension(id: AppAttestationWire.extensionID, data: asked, failIfUnknown: false)]
    }

    /// A verdict that refuses: the reason, for the audit line and the description.
    package struct Refused: Error, CustomStringConvertible {
        package let reason: String
        package var description: String { "app attestation refused: \(reason)" }
    }

    /// What a checked operation's app attestation came to: what a registration it let through remembers
    /// (``RegistrationRecord/appAttestation``), for an operator.
    package struct Outcome: Sendable, Equatable {
        /// The mode and the verdict, as the audit line gives them: `require: apple key … attested (…)`, or under
        /// `report` also `report: refused: …`.
        package let summary: String
        /// The App Attest key that answered and passed (base64url), if one did.
        package let appAttestKeyID: String?
    }

    /// Checks the app attestation of a response to a request for `operation` that asked `asked` of the app
    /// (``UAFCeremony/appAttestation``), records it (the key, its counter) and audits the verdict. Under `require`
    /// a missing or failed attestation throws ``Refused``; under `report` it is audited and the operation goes on.
    /// Nil when the request asked nothing.
    @discardableResult
    func check(
        _ operation: Operation, asked: String?, header: OperationHeader, fcParams: String, username: String?,
        keyAttestations: [AndroidKeyDescription] = []
    ) async throws -> Outcome? {
        guard let asked else { return nil }
        // A stored ask this build does not know is held to the strictest reading.
        let mode = ServerConfiguration.AppAttestationMode(rawValue: asked) ?? .require
        guard mode != .off else { return nil }
        let outcome: Result<(verdict: String, appAttestKeyID: String?), Refused>
        do {
            var (verdict, keyID) = try await verify(header: header, fcParams: fcParams)
            // A registered key's own Android key attestation names the app it was made for: it must be the bank's.
            for description in keyAttestations { verdict += "; " + (try settings.keyAttestationVerdict(description)) }
            outcome = .success((verdict, keyID))
        } catch let refused as Refused { outcome = .failure(refused) }
        let consequence = mode == .require ? "refused" : "report only: the operation goes on"
        switch outcome {
        case .success(let passed):
            environment.decide("app attestation verified", username, 1200, "\(operation.rawValue): \(passed.verdict) (\(mode.rawValue))")
            return Outcome(summary: "\(mode.rawValue): \(passed.verdict)", appAttestKeyID: passed.appAttestKeyID)
        case .failure(let refused):
            environment.decide(
                "app attestation refused", username, UAFStatusCode.unacceptableClientCapabilities.rawValue,
                "\(operation.rawValue): \(refused.reason); \(consequence)")
            if mode == .require { throw refused }
            return Outcome(summary: "\(mode.rawValue): refused: \(refused.reason)", appAttestKeyID: nil)
        }
    }

    /// The verdict of a response's extension and the App Attest key that answered, or why it fails.
    private func verify(header: OperationHeader, fcParams: String) async throws -> (String, String?) {
        let values = (header.exts ?? []).filter { $0.id == AppAttestationWire.extensionID }
        guard let data = values.first?.data else { throw Refused(reason: "the app sent no attestation") }
        guard values.count == 1, data.utf8.count <= AppAttestationWire.maximumDataBytes else {
            throw Refused(
                reason: "the \(AppAttestationWire.extensionID) extension must appear once, at most \(AppAttestationWire.maximumDataBytes) bytes")
        }
        guard let answer = try? WireJSONDecoder().decode(AppAttestationWire.Answer.self, from: data) else {
            throw Refused(reason: "the extension is not a JSON object with platform")
        }
        switch answer.platform {
        case "apple": return (try await verifyApple(answer, fcParams: fcParams), answer.keyId)
        case "android": return (try verifyAndroid(answer, fcParams: fcParams), nil)
        default: throw Refused(reason: "platform \(UntrustedText.quoted(answer.platform, limit: 32)) is not supported")
        }
    }

    /// A Play Integrity token for this operation's request hash, under the configured keys and verdicts. Nothing is
    /// stored: the token is good for this operation only (its hash covers the one-time challenge).
    private func verifyAndroid(_ answer: AppAttestationWire.Answer, fcParams: String) throws -> String {
        guard let android = settings.android else { throw Refused(reason: "Play Integrity is not configured (appAttestation.android)") }
        guard let token = answer.playIntegrityToken else { throw Refused(reason: "the android answer carries no playIntegrityToken") }
        let verdict: PlayIntegrity.Verdict
        do { verdict = try android.verify(token, requestHash: AppAttestationWire.requestHash(fcParams: fcParams), at: environment.clock()) } catch {
            throw Refused(reason: "\(error)")
        }
        let licence = verdict.appLicensingVerdict.map { ", \($0)" } ?? ""
        return
            "android \(verdict.packageName): \(verdict.appRecognitionVerdict), \(verdict.deviceRecognitionVerdict.joined(separator: " "))\(licence)"
    }

    /// An App Attest attestation (the key's first use here) or assertion.
    private func verifyApple(_ answer: AppAttestationWire.Answer, fcParams: String) async throws -> String {
        guard let apple else { throw Refused(reason: "App Attest is not configured (appAttestation.apple)") }
        guard let keyId = answer.keyId, let keyID = Base64URL.decodeBytes(keyId), keyID.count == 32 else {
            throw Refused(reason: "keyId is not 32 bytes of base64url")
        }
        let clientDataHash = AppAttestationWire.clientDataHash(fcParams: fcParams)
        let now = environment.clock()
        let label = "key \(String(keyId.prefix(10)))…"
        switch (answer.attestation, answer.assertion) {
        case (let attestation?, nil):
            guard let object = Base64URL.decodeBytes(attestation) else { throw Refused(reason: "attestation is not base64url") }
            let key: AttestedAppKey
            do { key = try await apple.verifyAttestation(object, keyID: keyID, clientDataHash: clientDataHash, at: now) } catch {
                throw Refused(reason: "\(label): \(error)")
            }
            try await stores.keys.attested(key, now: now)
            return "apple \(label) attested (\(key.appID), \(key.environment.rawValue))"
        case (nil, let assertion?):
            guard let object = Base64URL.decodeBytes(assertion) else { throw Refused(reason: "assertion is not base64url") }
            // A key this server never attested (or lost) cannot assert: the app attests it again.
            guard let key = try await stores.keys.key(id: keyID) else { throw Refused(reason: "\(label) is unknown: the app must attest it") }
            // A key of an environment no longer accepted (development keys after a switch to production only).
            guard apple.environments.contains(key.environment) else { throw Refused(reason: "\(label) is a \(key.environment.rawValue) key") }
            let counter: UInt32
            do { counter = try apple.verifyAssertion(object, clientDataHash: clientDataHash, key: key, storedCounter: key.counter) } catch {
                throw Refused(reason: "\(label): \(error)")
            }
            // Compare-and-set: of two operations carrying one assertion, one counts it.
            guard try await stores.keys.advance(keyID: keyID, to: counter, now: now) else {
                throw Refused(reason: "\(label): counter \(counter) was already reached (a replayed assertion)")
            }
            return "apple \(label) asserted, counter \(counter)"
        default:
            throw Refused(reason: "the extension must carry an attestation or an assertion, not both or neither")
        }
    }
}
