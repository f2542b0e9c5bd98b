import FIDOServer
import FIDOSimulation
import Foundation

/// The server settings that trust what the virtual devices of `mauth demo`, `mauth load` and `mauth device` attest
/// with: one home for the three, in the form the configuration file reads.
extension ServerConfiguration.AppAttestation {
    /// App Attest of the virtual device's app in the development environment, under the root in `rootPath` (a
    /// simulated authority's, never Apple's).
    static func virtualDevice(appAttestRoot rootPath: String) -> Self {
        Self(
            apple: .init(
                apps: [.init(teamId: SoftwareAppAttestAuthority.virtualDeviceTeamID, bundleId: SoftwareAppAttestAuthority.virtualDeviceBundleID)],
                environments: ["development"], rootCertificatesPath: rootPath))
    }

    /// The same, with `authority`'s root written to `root` first.
    static func virtualDevice(trusting authority: SoftwareAppAttestAuthority, writingRootTo root: URL) throws -> Self {
        try authority.rootPEM.write(to: root, atomically: true, encoding: .utf8)
        return virtualDevice(appAttestRoot: root.path)
    }

    /// Play Integrity of the virtual device's Android app, under the simulated issuer's keys in these files. The
    /// simulated device's UAF keys carry no Android key attestation, so no boot state is asked of them.
    static func virtualDevice(playIntegrityDecryptionKey decryption: String, verificationKey verification: String) -> Self {
        Self(
            android: .init(
                packageName: SoftwarePlayIntegrity.virtualDevicePackageName,
                certificateSha256Digests: [SoftwarePlayIntegrity.virtualDeviceCertificateDigest], decryptionKeyPath: decryption,
                verificationKeyPath: verification, requireVerifiedBoot: false, requireLockedBootloader: false))
    }

    /// These settings as the configuration file writes them (`{"appAttestation": …}`'s value), keys sorted.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, numbers and booleans cannot fail.
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }
}

extension ServerConfiguration.FIDO2.Apps {
    /// The virtual device's apps, whose passkeys `mauth device passkey` makes: the iOS app (origin `https://<rpId>`)
    /// and the Android app (origin `android:apk-key-hash:` of its signing certificate's digest).
    static var virtualDevice: Self {
        Self(
            apple: [.init(teamId: SoftwareAppAttestAuthority.virtualDeviceTeamID, bundleId: SoftwareAppAttestAuthority.virtualDeviceBundleID)],
            android: [
                .init(
                    packageName: SoftwarePlayIntegrity.virtualDevicePackageName,
                    certificateSha256Digests: [SoftwarePlayIntegrity.virtualDeviceCertificateDigest])
            ])
    }
}
