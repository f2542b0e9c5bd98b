import FIDOServerCore
import Foundation
import WireJSON

/// The files with which the relying party's domain vouches for the bank's apps, so that they share the site's
/// passkeys: Apple's `apple-app-site-association` (`webcredentials`) and Google's Digital Asset Links
/// (`assetlinks.json`, `delegate_permission/common.get_login_creds`). Made once from the configuration.
enum AppAssociation {
    static let applePath = "/.well-known/apple-app-site-association"
    static let androidPath = "/.well-known/assetlinks.json"

    private struct AppleDocument: Encodable {
        struct WebCredentials: Encodable { var apps: [String] }
        var webcredentials: WebCredentials
    }

    private struct Statement: Encodable {
        struct Target: Encodable {
            var namespace = "android_app"
            var package_name: String
            var sha256_cert_fingerprints: [String]
        }
        /// Credential sharing only: `common.handle_all_urls` would also claim every link of the domain for the app
        /// (App Links), which is the bank's choice to make elsewhere.
        var relation = ["delegate_permission/common.get_login_creds"]
        var target: Target
    }

    /// `{"webcredentials":{"apps":["TEAMID.bundle.id", …]}}`.
    static func apple(_ apps: [ServerConfiguration.AppleApp]) throws -> [UInt8] {
        try WireJSONEncoder().encode(AppleDocument(webcredentials: .init(apps: apps.map(\.appID))))
    }

    /// One statement per app, its digests as Google writes fingerprints there: upper-case hex pairs joined by colons.
    static func android(_ apps: [ServerConfiguration.AndroidApp]) throws -> [UInt8] {
        try WireJSONEncoder().encode(
            apps.map { app in
                Statement(target: .init(package_name: app.packageName, sha256_cert_fingerprints: app.digests.map(fingerprint)))
            })
    }

    /// `AB:CD:…`: 32 bytes as 95 characters.
    static func fingerprint(_ digest: [UInt8]) -> String {
        digest.map { byte in
            let hex = String(byte, radix: 16, uppercase: true)
            return hex.count == 1 ? "0" + hex : hex
        }.joined(separator: ":")
    }
}
