import Foundation
import Primitives

extension ServerConfiguration {
    /// The apps whose genuineness the server can check (App attestation, `appAttestation`): which apps, which
    /// environments and which root. Whether an operation asks for it is each policy's choice
    /// (``NamedPolicy/appAttestation``); this section alone asks for nothing.
    public struct AppAttestation: Codable, Sendable, Equatable {
        /// Apple's App Attest, for the iOS apps.
        public var apple: Apple?
        /// Google's Play Integrity, for the Android app.
        public var android: Android?

        public init(apple: Apple? = nil, android: Android? = nil) {
            self.apple = apple
            self.android = android
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case apple, android }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            apple = try c.decodeIfPresent(Apple.self, forKey: .apple)
            android = try c.decodeIfPresent(Android.self, forKey: .android)
        }

        /// Google's Play Integrity in "local decryption" mode: the app, its signing certificates, the two keys from
        /// the Play Console and the verdicts required.
        public struct Android: Codable, Sendable, Equatable {
            /// The Android package name.
            public var packageName: String
            /// SHA-256 digests of the app's signing certificates, base64url without padding as Google writes them
            /// (the Play Console's "App signing key certificate").
            public var certificateSha256Digests: [String]
            /// A file holding the decryption key as the Play Console shows it (base64 of 32 bytes); or the
            /// environment variable `MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY`, which wins.
            public var decryptionKeyPath: String?
            /// A file holding the verification key as the Play Console shows it (base64 of a DER P-256 public key); or
            /// `MAUTH_PLAY_INTEGRITY_VERIFICATION_KEY`, which wins.
            public var verificationKeyPath: String?
            /// `appRecognitionVerdict` must be `PLAY_RECOGNIZED`.
            public var appRecognized: Bool
            /// The least `deviceRecognitionVerdict` (`MEETS_BASIC_INTEGRITY`, `MEETS_DEVICE_INTEGRITY`,
            /// `MEETS_STRONG_INTEGRITY`); null accepts any device.
            public var deviceIntegrity: String?
            /// `appLicensingVerdict` must be `LICENSED`.
            public var licensed: Bool
            /// How old a token may be, in seconds.
            public var maximumAgeSeconds: Int
            /// A registration whose UAF key comes with an Android key attestation: the secure hardware must have seen a
            /// verified boot (`rootOfTrust.verifiedBootState` Verified).
            public var requireVerifiedBoot: Bool
            /// The same: the bootloader must be locked (`rootOfTrust.deviceLocked`).
            public var requireLockedBootloader: Bool

            public init(
                packageName: String, certificateSha256Digests: [String], decryptionKeyPath: String? = nil, verificationKeyPath: String? = nil,
                appRecognized: Bool = true, deviceIntegrity: String? = "MEETS_DEVICE_INTEGRITY", licensed: Bool = false, maximumAgeSeconds: Int = 120,
                requireVerifiedBoot: Bool = true, requireLockedBootloader: Bool = true
            ) {
                self.packageName = packageName
                self.certificateSha256Digests = certificateSha256Digests
                self.decryptionKeyPath = decryptionKeyPath
                self.verificationKeyPath = verificationKeyPath
                self.appRecognized = appRecognized
                self.deviceIntegrity = deviceIntegrity
                self.licensed = licensed
                self.maximumAgeSeconds = maximumAgeSeconds
                self.requireVerifiedBoot = requireVerifiedBoot
                self.requireLockedBootloader = requireLockedBootloader
            }

            enum CodingKeys: String, CodingKey, CaseIterable {
                case packageName, certificateSha256Digests, decryptionKeyPath, verificationKeyPath, appRecognized, deviceIntegrity, licensed
                case maximumAgeSeconds, requireVerifiedBoot, requireLockedBootloader
            }

            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                let d = Android(packageName: "", certificateSha256Digests: [])
                self.init(
                    packageName: try c.decode(String.self, forKey: .packageName),
                    certificateSha256Digests: try c.decode([String].self, forKey: .certificateSha256Digests),
                    decryptionKeyPath: try c.decodeIfPresent(String.self, forKey: .decryptionKeyPath),
                    verificationKeyPath: try c.decodeIfPresent(String.self, forKey: .verificationKeyPath),
                    appRecognized: try c.decodeIfPresent(Bool.self, forKey: .appRecognized) ?? d.appRecognized,
                    deviceIntegrity: c.contains(.deviceIntegrity) ? try c.decodeIfPresent(String.self, forKey: .deviceIntegrity) : d.deviceIntegrity,
                    licensed: try c.decodeIfPresent(Bool.self, forKey: .licensed) ?? d.licensed,
                    maximumAgeSeconds: try c.decodeIfPresent(Int.self, forKey: .maximumAgeSeconds) ?? d.maximumAgeSeconds,
                    requireVerifiedBoot: try c.decodeIfPresent(Bool.self, forKey: .requireVerifiedBoot) ?? d.requireVerifiedBoot,
                    requireLockedBootloader: try c.decodeIfPresent(Bool.self, forKey: .requireLockedBootloader) ?? d.requireLockedBootloader)
            }

            func validate() throws {
                let path = "appAttestation.android"
                try AndroidApp(packageName: packageName, certificateSha256Digests: certificateSha256Digests).validate(at: path)
                if let deviceIntegrity, !["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"].contains(deviceIntegrity) {
                    throw ConfigurationError.invalid(
                        "\(path).deviceIntegrity must be MEETS_BASIC_INTEGRITY, MEETS_DEVICE_INTEGRITY, MEETS_STRONG_INTEGRITY or null, not \(deviceIntegrity)"
                    )
                }
                guard (10...3600).contains(maximumAgeSeconds) else { throw ConfigurationError.invalid("\(path).maximumAgeSeconds must be 10...3600") }
            }
        }

        /// Apple's App Attest (DeviceCheck): the app IDs, the environments and the root.
        public struct Apple: Codable, Sendable, Equatable {
            /// The iOS apps, each by Team ID and bundle ID: the App Attest app ID is `teamId.bundleId`.
            public var apps: [App]
            /// `production` (App Store and TestFlight builds) and/or `development` (builds run from Xcode); a
            /// development key must not pass where only the store's build is meant to (the AAGUID tells them apart).
            public var environments: [String]
            /// PEM roots that replace Apple's App Attestation Root CA (shipped, the default): for a test or a
            /// simulated device, never for a production app.
            public var rootCertificatesPath: String?

            public init(apps: [App], environments: [String] = ["production"], rootCertificatesPath: String? = nil) {
                self.apps = apps
                self.environments = environments
                self.rootCertificatesPath = rootCertificatesPath
            }

            enum CodingKeys: String, CodingKey, CaseIterable { case apps, environments, rootCertificatesPath }

            public init(from decoder: any Decoder) throws {
                try decoder.refuseUnknownKeys(CodingKeys.self)
                let c = try decoder.container(keyedBy: CodingKeys.self)
                self.init(
                    apps: try c.decode([App].self, forKey: .apps),
                    environments: try c.decodeIfPresent([String].self, forKey: .environments) ?? ["production"],
                    rootCertificatesPath: try c.decodeIfPresent(String.self, forKey: .rootCertificatesPath))
            }

            /// `teamId.bundleId` of each app.
            public var appIDs: [String] { apps.map(\.appID) }

            func validate() throws {
                guard !apps.isEmpty else { throw ConfigurationError.invalid("appAttestation.apple.apps is empty: it accepts no app") }
                for (index, app) in apps.enumerated() { try app.validate(at: "appAttestation.apple.apps[\(index)]") }
                guard Set(appIDs).count == appIDs.count else { throw ConfigurationError.invalid("appAttestation.apple.apps names an app twice") }
                guard !environments.isEmpty, Set(environments).count == environments.count,
                    environments.allSatisfy({ ["production", "development"].contains($0) })
                else {
                    throw ConfigurationError.invalid(
                        "appAttestation.apple.environments must list production and/or development, each once, not \(environments)")
                }
            }
        }

        /// An iOS app by Team ID and bundle ID (``ServerConfiguration/AppleApp``).
        public typealias App = AppleApp

        func validate() throws {
            guard apple != nil || android != nil else {
                throw ConfigurationError.invalid("appAttestation configures no platform: set appAttestation.apple or appAttestation.android")
            }
            try apple?.validate()
            try android?.validate()
        }
    }

    /// What a policy set asks of the app for each operation: `off` (nothing, the default), `report` (the app is asked
    /// to attest; the verdict is checked, recorded and audited, and the operation goes on whatever it is: for rolling
    /// out without locking anyone out) or `require` (an operation without a valid attestation is refused). A
    /// transaction confirmation falls back to the set's `authentication` mode.
    public struct AppAttestationModes: Codable, Sendable, Equatable {
        public var registration: AppAttestationMode?
        public var authentication: AppAttestationMode?
        public var transaction: AppAttestationMode?

        public init(registration: AppAttestationMode? = nil, authentication: AppAttestationMode? = nil, transaction: AppAttestationMode? = nil) {
            self.registration = registration
            self.authentication = authentication
            self.transaction = transaction
        }

        enum CodingKeys: String, CodingKey, CaseIterable { case registration, authentication, transaction }

        public init(from decoder: any Decoder) throws {
            try decoder.refuseUnknownKeys(CodingKeys.self)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                registration: try c.decodeIfPresent(AppAttestationMode.self, forKey: .registration),
                authentication: try c.decodeIfPresent(AppAttestationMode.self, forKey: .authentication),
                transaction: try c.decodeIfPresent(AppAttestationMode.self, forKey: .transaction))
        }

        var asksAnything: Bool { [registration, authentication, transaction].contains { $0 != nil && $0 != .off } }
    }

    /// See ``AppAttestationModes``.
    public enum AppAttestationMode: String, Codable, Sendable, Equatable {
        case off, report, require
    }
}
