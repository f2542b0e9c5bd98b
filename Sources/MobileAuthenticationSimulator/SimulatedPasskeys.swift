import FIDOSimulation
import Foundation
import MobileAuthenticationCore

/// The simulated phone's passkeys: a `SoftwarePasskeyAuthenticator` (FIDOSimulation) behind the SDK's
/// `PasskeyProvider`, answering as the platform's authenticator does for the bank's app, associated with the relying
/// party's domain. Its client data names the app's origin: `https://<rpID>` on the iOS profile (what iOS writes for
/// an app with the `webcredentials` association), `android:apk-key-hash:<digest>` of the virtual device's signing
/// certificate on the Android profile (what Credential Manager writes). Its passkeys are synced ones (backup
/// eligible and backed up, counter 0, `none` attestation) and it verifies the user. A test scripts the user's
/// answer to the next sheet (``declineNext()``).
public final class SimulatedPasskeys: PasskeyProvider, @unchecked Sendable {
    private let lock = NSLock()
    private var authenticator = SoftwarePasskeyAuthenticator(origin: "https://localhost")
    private var declines = 0
    private var sheets = 0
    private let profile: DeviceProfile

    public init(profile: DeviceProfile = .ios) { self.profile = profile }

    /// The origin the platform writes for the app at `relyingPartyID`.
    public func origin(relyingPartyID: String) -> String {
        profile == .android ? "android:apk-key-hash:\(SoftwarePlayIntegrity.virtualDeviceCertificateDigest)" : "https://\(relyingPartyID)"
    }

    /// The user dismisses the next sheet.
    public func declineNext() { lock.withLock { declines += 1 } }

    /// How many sheets the platform showed.
    public var sheetCount: Int { lock.withLock { sheets } }

    /// The passkeys on the device, to keep between runs (`mauth device`). Private keys: store it as such.
    public var stored: [SoftwarePasskeyAuthenticator.StoredCredential] { lock.withLock { authenticator.stored } }

    public func restore(_ stored: [SoftwarePasskeyAuthenticator.StoredCredential]) { lock.withLock { authenticator.restore(stored) } }

    /// Forgets a passkey, as the user deleting it in Settings → Passwords does.
    public func remove(credentialID: Data) { lock.withLock { authenticator.remove(credentialID: Array(credentialID)) } }

    public func createPasskey(_ request: PasskeyCreationRequest) async throws(PasskeyFailure) -> PasskeyRegistrationResult {
        try lock.withLock { make(request) }.get()
    }

    public func assertPasskey(_ request: PasskeyAssertionRequest) async throws(PasskeyFailure) -> PasskeyAssertionResult {
        try lock.withLock { sign(request) }.get()
    }

    private func make(_ request: PasskeyCreationRequest) -> Result<PasskeyRegistrationResult, PasskeyFailure> {
        if let declined = sheet() { return .failure(declined) }
        let held = Set(authenticator.credentials.filter { $0.rpID == request.relyingPartyID }.map { Data($0.id) })
        guard held.isDisjoint(with: request.excludedCredentialIDs) else {
            return .failure(
                PasskeyFailure(.alreadyRegistered, "this device already holds a passkey of \(request.userName) for \(request.relyingPartyID)"))
        }
        authenticator.origin = origin(relyingPartyID: request.relyingPartyID)
        do {
            let made = try authenticator.create(
                rpID: request.relyingPartyID, challenge: Array(request.challenge), userHandle: Array(request.userID), algorithms: request.algorithms)
            return .success(
                PasskeyRegistrationResult(
                    credentialID: Data(made.credentialID), clientDataJSON: Data(made.clientDataJSON), attestationObject: Data(made.attestationObject),
                    transports: made.transports))
        } catch SoftwarePasskeyAuthenticator.Failure.noSupportedAlgorithm {
            return .failure(PasskeyFailure(.notSupported, "none of the relying party's algorithms \(request.algorithms) is one passkeys use"))
        } catch {
            return .failure(PasskeyFailure(.failed, "\(error)"))
        }
    }

    private func sign(_ request: PasskeyAssertionRequest) -> Result<PasskeyAssertionResult, PasskeyFailure> {
        if let declined = sheet() { return .failure(declined) }
        authenticator.origin = origin(relyingPartyID: request.relyingPartyID)
        do {
            let signed = try authenticator.get(
                rpID: request.relyingPartyID, challenge: Array(request.challenge), allowCredentials: request.allowedCredentialIDs.map { Array($0) })
            return .success(
                PasskeyAssertionResult(
                    credentialID: Data(signed.credentialID), clientDataJSON: Data(signed.clientDataJSON),
                    authenticatorData: Data(signed.authenticatorData), signature: Data(signed.signature), userHandle: Data(signed.userHandle)))
        } catch SoftwarePasskeyAuthenticator.Failure.noCredential {
            return .failure(PasskeyFailure(.noCredential, "no passkey for \(request.relyingPartyID) on this device"))
        } catch {
            return .failure(PasskeyFailure(.failed, "\(error)"))
        }
    }

    /// One sheet shown; the user's scripted dismissal, if any.
    private func sheet() -> PasskeyFailure? {
        sheets += 1
        guard declines > 0 else { return nil }
        declines -= 1
        return PasskeyFailure(.cancelled, "the user dismissed the passkey sheet")
    }
}
