import ArgumentParser
import Foundation
import MobileAuthentication
import MobileAuthenticationCore

/// `mauth device trust`: which certificate the device trusts for its server, changed in place. A development
/// server makes a new certificate when it restarts; re-trusting it keeps the device's keys and accounts.
struct DeviceTrust: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Trust the server's certificate from a PEM file (a restarted development server), or only the system's roots.")
    @OptionGroup var options: DeviceOptions
    @Option(help: "A PEM file to trust for this server instead of the one trusted now.") var caFile: String?
    @Flag(help: "Trust only the system's roots (forget the PEM the device trusts).") var systemRoots = false

    func run() async throws {
        try await runDeviceCommand("trust", json: options.json) {
            guard (caFile != nil) != systemRoots else { throw DeviceCommandError("give either --ca-file FILE or --system-roots") }
            let device = try HeadlessDevice.open(options)
            var profile = device.profile
            profile.trustedCertificatesPEM = try caFile.map(readCertificatePEM)
            try HeadlessDevice.write(profile, to: device.directory)
            var report = DeviceReport()
            report["server"] = profile.server
            report["trust"] = caFile == nil ? "system roots" : "system roots and \(caFile!)"
            report.line("the device trusts \(report["trust"] as? String ?? "") for \(profile.server)")
            await checkServer(profile, report: &report)
            return report
        }
    }
}

/// The certificates of a PEM file, or why the file is not one.
func readCertificatePEM(_ path: String) throws -> String {
    let data = try DeviceCommandError.readFile(path)
    guard let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") else {
        throw DeviceCommandError("\(path) is not a PEM certificate file (no BEGIN CERTIFICATE block)")
    }
    return text
}

/// Reaches the device's server once over TLS with the device's trust and reports the outcome as `serverCheck`:
/// `reachable`, or a warning on standard error (the command still succeeds: the server may start later).
func checkServer(_ profile: HeadlessDeviceProfile, report: inout DeviceReport) async {
    let problem = await serverProblem(profile)
    report["serverCheck"] = problem ?? "reachable"
    if let problem {
        note("warning: \(problem)")
    } else {
        report.line("the server answers over TLS")
    }
}

/// Nil when the server answers over TLS with the device's trust, else what is wrong and what to do.
func serverProblem(_ profile: HeadlessDeviceProfile) async -> String? {
    guard let url = URL(string: profile.server) else { return "\(profile.server) is not a URL" }
    var configuration = Configuration(baseUrl: url, networkTimeoutInSeconds: 10, facetId: profile.facetId)
    if let pem = profile.trustedCertificatesPEM { configuration = configuration.withTransportSecurity(.debug(trustedCertificatesPEM: [pem])) }
    let transport: HTTPTransport
    do { transport = try HTTPTransport(configuration: configuration) } catch {
        return "the trusted certificate cannot be used: \(DeviceFailureText.withoutSourcePaths(String(describing: error)))"
    }
    let outcome: TransportFailure?
    do {
        // Any HTTP answer will do: the question is whether TLS with this trust reaches the server.
        _ = try await transport.send(HTTPRequest(method: .GET, url: url, body: nil, headers: [], accept: "*/*"))
        outcome = nil
    } catch { outcome = error }
    // Shut down before returning: the command exits right after, and a detached shutdown would not run.
    await transport.shutdown()
    if let error = outcome {
        switch error {
        case .insecure(let reason):
            return "\(profile.server): \(reason); if it uses a development certificate, trust it: mauth device trust --ca-file FILE"
        case .network:
            return "\(profile.server) does not answer now; the device is kept and will try again at its next command"
        }
    }
    return nil
}
