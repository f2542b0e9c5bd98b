import ArgumentParser
import DevelopmentStandIns
import FIDOServer
import FIDOSimulation
import Foundation

/// `mauth demo web`: a server with the relying party's web demo ("Example Bank") at /demo, whose pushes go to a local
/// stand-in for Google's OAuth and FCM endpoints, so a headless phone (`mauth device pending` / `approve`) can answer
/// them. A development tool: the production `mauth server` has no stand-in and needs real Firebase credentials.
struct DemoWeb: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "web",
        abstract: "Serve the relying party's web demo at /demo, with push to a local stand-in for Firebase (never in production).",
        discussion: """
            The server takes the same options, configuration file and MAUTH_* variables as `mauth server`. Without \
            configured facets it trusts the virtual devices' (\(SoftwareAuthenticator.virtualDeviceFacetID) and \(SoftwareAuthenticator.virtualAndroidDeviceFacetID)). \
            Nothing reaches a real phone: devices fetch the operation as pending (mauth device pending / approve).
            """)

    @OptionGroup var options: ServerOptions
    @Option(help: "Where the push stand-in keeps its key and certificate (default: a temporary directory).") var pushDirectory: String?

    func run() async throws {
        var configuration = try options.configuration()
        configuration.demoSite = true
        if configuration.facets.isEmpty && configuration.facetsPath == nil {
            configuration.facets = [SoftwareAuthenticator.virtualDeviceFacetID, SoftwareAuthenticator.virtualAndroidDeviceFacetID]
        }
        // Passkeys for the bank's pages at https://localhost:PORT (an IP address cannot have passkeys: WebAuthn needs a
        // domain as its RP ID), unless the configuration names its own.
        if configuration.fido2 == nil, configuration.port != 0 {
            // The page's origin, and the virtual device's apps: iOS writes https://<rpId>, Android its apk-key-hash
            // (`mauth device passkey` on either profile).
            configuration.fido2 = .init(
                rpId: "localhost", rpName: "Example Bank", origins: ["https://localhost:\(configuration.port)", "https://localhost"],
                apps: .virtualDevice)
        }
        guard configuration.dispatch.firebase == nil else {
            throw ValidationError("mauth demo web sends push to its own stand-in: remove dispatch.firebase from the configuration")
        }
        let directory =
            pushDirectory.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("mauth-push-\(UUID().uuidString.prefix(8))")
        let standIn = try await FirebaseStandIn.start(directory: directory)
        configuration.dispatch.firebase = standIn.configuration
        let served: Result<Void, any Error>
        do {
            try await options.serve(
                configuration,
                beside: [
                    "push: FCM stand-in at \(standIn.baseURL) (nothing reaches a phone; devices fetch pending operations)"
                ] + (configuration.fido2.map { ["passkeys: open \($0.origins[0])/demo (rpId \($0.rpId))"] } ?? []))
            served = .success(())
        } catch {
            served = .failure(error)
        }
        try? await standIn.stop()
        if pushDirectory == nil { try? FileManager.default.removeItem(at: directory) }
        try served.get()
    }
}
