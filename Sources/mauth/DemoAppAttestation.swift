import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator

/// The tour's app attestation: the server's policy requires every registration to come from the bank's genuine app.
/// The virtual device's app passed (it attested with App Attest); a repackaged app without it, and one whose
/// attestation comes from a root the server does not trust (an emulator farm's), are refused.
extension DemoTour {
    func runAppAttestation(
        server: RunningFIDOServer, relyingParty: LocalRelyingParty, genuine: SoftwareAppAttestAuthority, storage: URL, narrator: Narrator
    ) async throws {
        let impostors: [(title: String, attest: SimulatedAppAttest?)] = [
            ("A repackaged copy of the app (no App Attest key Apple certified) tries to register mallory", nil),
            (
                "An emulator farm fakes App Attest under a root of its own and tries to register mallory",
                SimulatedAppAttest(authority: try SoftwareAppAttestAuthority(), appID: SoftwareAppAttestAuthority.virtualDeviceAppID)
            ),
        ]
        for (index, impostor) in impostors.enumerated() {
            narrator.step(impostor.title)
            let platform = SimulatedPlatform(storageDirectory: storage.appendingPathComponent("device-\(index)"))
            platform.useAppAttest(impostor.attest)
            try await withClient(server: server, platform: platform, narrator: narrator) { client in
                let jwt = try await relyingParty.token(for: "mallory")
                do {
                    try await client.operations.registration.username("mallory")
                        .deviceInformation(DeviceInformation(name: "not the bank's app"))
                        .authorizationProvider(JwtAuthorizationProvider(jwt: jwt))
                        .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
                        .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
                    throw DemoFailure("the server registered a key from an app that is not genuine")
                } catch OperationError.AppAttestationError {
                    narrator.line("app", "refused as expected (UAF 1497): the server's policy requires the genuine app")
                }
            }
        }
    }
}
