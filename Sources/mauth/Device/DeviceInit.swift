import ArgumentParser
import FIDOSimulation
import Foundation
import MobileAuthentication
import Primitives

struct DeviceInit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "init", abstract: "Create a device in a directory.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "The server's base URL, https://host:port.") var server: String
    @Option(help: "A PEM file to trust for this server (its development certificate).") var caFile: String?
    @Option(help: "Device profile: ios or android.") var profile = "ios"
    @Option(help: "The device's name, shown in the user's list of devices.") var name = "mauth headless device"
    @Option(help: "The push (FCM registration) token to publish.") var pushToken: String?
    @Flag(
        help:
            "Prove the app genuine when a server asks: App Attest (ios) or Play Integrity (android) under simulated keys made here; prints the server's appAttestation settings that trust them."
    )
    var appAttestation = false
    @Option(help: "The app's facet ID (default: the virtual device's, ios:bundle-id:… or android:apk-key-hash:… by profile).") var facetId: String?

    func run() async throws {
        try await runDeviceCommand("init", json: options.json) {
            let directory = try options.directoryURL
            guard let url = URL(string: server), url.scheme == "https", url.host != nil else {
                throw DeviceCommandError("--server must be an https:// URL")
            }
            guard profile == "ios" || profile == "android" else { throw DeviceCommandError("--profile must be ios or android") }
            let file = directory.appendingPathComponent(HeadlessDevice.profileFile)
            // Never overwrite: the old keys would stay in storage/ under a new fingerprint, unusable and unremovable.
            guard !FileManager.default.fileExists(atPath: file.path) else { throw DeviceCommandError("\(directory.path) already holds a device") }
            let pem = try caFile.map(readCertificatePEM)
            // Each profile reports its platform's kind of facet, as a real app does.
            let facet =
                facetId ?? (profile == "android" ? SoftwareAuthenticator.virtualAndroidDeviceFacetID : SoftwareAuthenticator.virtualDeviceFacetID)
            let kind = appAttestation ? HeadlessAppAttestation.Kind(profile: profile) : nil
            let device = HeadlessDeviceProfile(
                version: HeadlessDeviceProfile.currentVersion, server: server.hasSuffix("/") ? String(server.dropLast()) : server,
                trustedCertificatesPEM: pem, facetId: facet, profile: profile, name: name,
                fingerprint: UUID().uuidString.lowercased(), pushToken: pushToken,
                appAttestation: kind?.rawValue)
            do { try FileManager.default.createDirectory(at: directory.appendingPathComponent("storage"), withIntermediateDirectories: true) } catch {
                throw DeviceCommandError("cannot make the device's folder \(directory.path): \(SystemErrorText.reason(error))")
            }
            let serverSettings = try kind.map { try HeadlessAppAttestation.make($0, in: directory) }
            try HeadlessDevice.write(device, to: directory)
            var report = DeviceReport()
            report["directory"] = directory.path
            report["server"] = device.server
            report["profile"] = profile
            report["name"] = name
            report["facetId"] = facet
            report.line("device \"\(name)\" (\(profile), facet \(facet)) created in \(directory.path) for \(device.server)")
            if let kind, let serverSettings {
                report["appAttestation"] = kind.rawValue
                report["serverAppAttestation"] = try? JSONSerialization.jsonObject(with: Data(serverSettings.json.utf8))
                report.line("app attestation: \(kind.name) under simulated keys; a server trusts it with")
                report.line("  \"appAttestation\": \(serverSettings.json)")
            }
            await checkServer(device, report: &report)
            return report
        }
    }
}
