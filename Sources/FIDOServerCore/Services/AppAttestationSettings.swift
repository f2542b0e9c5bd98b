import AppAttestation
import Foundation
import SwiftASN1
import X509

/// App attestation as configured, read once at start (a root file that cannot be read refuses the start): the
/// policy sets that say when it is asked, and Apple's verifier with its apps, environments and roots.
package struct AppAttestationSettings: Sendable {
    let policies: [String: ServerConfiguration.NamedPolicy]
    let apple: AppleAppAttest?

    package init(_ configuration: ServerConfiguration) throws {
        policies = configuration.policies
        guard let settings = configuration.appAttestation?.apple else {
            apple = nil
            return
        }
        var roots = [AppleAppAttest.appleRoot]
        if let path = settings.rootCertificatesPath {
            let text = String(decoding: try ServerConfiguration.readFile(path, setting: "appAttestation.apple.rootCertificatesPath"), as: UTF8.self)
            do { roots = try PEMDocument.parseMultiple(pemString: text).map { try Certificate(pemDocument: $0) } } catch {
                throw ServerConfiguration.ConfigurationError.invalid(
                    "appAttestation.apple.rootCertificatesPath \(path): not PEM certificates (\(error))")
            }
            guard !roots.isEmpty else {
                throw ServerConfiguration.ConfigurationError.invalid("appAttestation.apple.rootCertificatesPath \(path): no certificate")
            }
        }
        apple = AppleAppAttest(
            appIDs: settings.appIDs, environments: Set(settings.environments.compactMap(AppAttestEnvironment.init(rawValue:))), roots: roots)
    }
}
