import Foundation
import Primitives

extension ServerConfiguration {
    /// An iOS app: its Team ID (10 upper-case letters and digits, from the Apple Developer account) and bundle ID.
    public struct AppleApp: Codable, Sendable, Equatable {
        public var teamId: String
        public var bundleId: String

        public init(teamId: String, bundleId: String) {
            self.teamId = teamId
            self.bundleId = bundleId
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case teamId, bundleId }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(teamId: try c.decode(String.self, forKey: .teamId), bundleId: try c.decode(String.self, forKey: .bundleId))
        }

        /// `teamId.bundleId`: the app's ID in Apple's files (App Attest, `apple-app-site-association`).
        public var appID: String { "\(teamId).\(bundleId)" }

        func validate(at path: String) throws {
            // A typo here would make every attestation of the app fail its rpIdHash, so the shapes are checked at start.
            guard teamId.utf8.count == 10, teamId.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) }) else {
                throw ConfigurationError.invalid("\(path).teamId \"\(teamId)\" is not a Team ID (10 of A-Z 0-9)")
            }
            let allowed = { (c: UInt8) in
                (48...57).contains(c) || (65...90).contains(c) || (97...122).contains(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
            }
            guard (1...155).contains(bundleId.utf8.count), bundleId.utf8.allSatisfy(allowed), !bundleId.hasPrefix("."), !bundleId.hasSuffix(".")
            else {
                throw ConfigurationError.invalid(
                    "\(path).bundleId \"\(bundleId)\" is not a bundle ID (A-Z a-z 0-9 - . and no leading or trailing dot)")
            }
        }
    }

    /// An Android app: its package name and the SHA-256 digests of its signing certificates, base64url without padding
    /// as Google writes them (the Play Console's "App signing key certificate"; `apksigner verify --print-certs` prints
    /// them in hex).
    public struct AndroidApp: Codable, Sendable, Equatable {
        public var packageName: String
        public var certificateSha256Digests: [String]

        public init(packageName: String, certificateSha256Digests: [String]) {
            self.packageName = packageName
            self.certificateSha256Digests = certificateSha256Digests
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case packageName, certificateSha256Digests }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                packageName: try c.decode(String.self, forKey: .packageName),
                certificateSha256Digests: try c.decode([String].self, forKey: .certificateSha256Digests))
        }

        /// The digests' bytes (each 32, as the start checked).
        public var digests: [[UInt8]] { certificateSha256Digests.compactMap(Base64URL.decodeBytes) }

        func validate(at path: String) throws {
            let parts = packageName.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 2, packageName.utf8.count <= 255,
                parts.allSatisfy({ part in
                    !part.isEmpty && part.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 }
                })
            else { throw ConfigurationError.invalid("\(path).packageName \"\(packageName)\" is not an Android package name") }
            guard !certificateSha256Digests.isEmpty else {
                throw ConfigurationError.invalid("\(path).certificateSha256Digests is empty: it accepts no app")
            }
            for digest in certificateSha256Digests where Base64URL.decodeBytes(digest)?.count != 32 || digest.hasSuffix("=") {
                throw ConfigurationError.invalid(
                    "\(path).certificateSha256Digests: \"\(digest)\" is not a SHA-256 digest in base64url without padding")
            }
        }
    }
}
