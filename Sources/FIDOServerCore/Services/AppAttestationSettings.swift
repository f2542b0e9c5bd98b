import AppAttestation
import Crypto
import FIDOAttestation
import Foundation
import Primitives

/// App attestation as configured, read once at start (a root file that cannot be read refuses the start): the
/// policy sets that say when it is asked, and Apple's verifier with its apps, environments and roots.
package struct AppAttestationSettings: Sendable {
    let policies: [String: ServerConfiguration.NamedPolicy]
    let apple: AppleAppAttest?
    let android: PlayIntegrity?
    /// The Android app a UAF key's Android key attestation must name, and the boot it must have seen.
    let androidKey: ServerConfiguration.AppAttestation.Android?
    /// Its signing-certificate digests, decoded once.
    let androidKeyDigests: Set<[UInt8]>

    package init(_ configuration: ServerConfiguration, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        policies = configuration.policies
        android = try configuration.appAttestation?.android.map { try Self.playIntegrity($0, environment: environment) }
        androidKey = configuration.appAttestation?.android
        androidKeyDigests = Set((androidKey?.certificateSha256Digests ?? []).compactMap(Base64URL.decodeBytes))
        guard let settings = configuration.appAttestation?.apple else {
            apple = nil
            return
        }
        let roots =
            try settings.rootCertificatesPath.map {
                try ServerConfiguration.readCertificates($0, setting: "appAttestation.apple.rootCertificatesPath")
            } ?? [AppleAppAttest.appleRoot]
        apple = AppleAppAttest(
            appIDs: settings.appIDs, environments: Set(settings.environments.compactMap(AppAttestEnvironment.init(rawValue:))), roots: roots)
    }
}

extension AppAttestationSettings {
    /// Play Integrity with the keys from the environment or the files the configuration names: a key that is
    /// missing or not what the Play Console shows refuses the start.
    static func playIntegrity(_ android: ServerConfiguration.AppAttestation.Android, environment: [String: String]) throws -> PlayIntegrity {
        func base64(_ variable: String, _ path: String?, setting: String) throws -> Data {
            let text: String
            if let value = environment[variable] {
                text = value
            } else if let path {
                text = String(decoding: try ServerConfiguration.readFile(path, setting: setting), as: UTF8.self)
            } else {
                throw ServerConfiguration.ConfigurationError.invalid("appAttestation.android needs \(setting) or \(variable)")
            }
            guard let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                // The value is a secret: the message names where it came from, never what it holds.
                throw ServerConfiguration.ConfigurationError.invalid("\(environment[variable] != nil ? variable : setting) is not base64")
            }
            return data
        }
        let decryption = try base64(
            "MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY", android.decryptionKeyPath, setting: "appAttestation.android.decryptionKeyPath")
        guard decryption.count == 32 else {
            throw ServerConfiguration.ConfigurationError.invalid("the Play Integrity decryption key is not 32 bytes (AES-256)")
        }
        let verification = try base64(
            "MAUTH_PLAY_INTEGRITY_VERIFICATION_KEY", android.verificationKeyPath, setting: "appAttestation.android.verificationKeyPath")
        guard let verificationKey = try? P256.Signing.PublicKey(derRepresentation: verification) else {
            throw ServerConfiguration.ConfigurationError.invalid("the Play Integrity verification key is not a DER P-256 public key")
        }
        let requirements = PlayIntegrity.Requirements(
            packageName: android.packageName, certificateSha256Digests: Set(android.certificateSha256Digests), appRecognized: android.appRecognized,
            deviceIntegrity: android.deviceIntegrity, licensed: android.licensed, maximumAge: TimeInterval(android.maximumAgeSeconds))
        return PlayIntegrity(decryptionKey: SymmetricKey(data: decryption), verificationKey: verificationKey, requirements: requirements)
    }
}

extension AppAttestationSettings {
    /// The app and boot an Android key attestation of a registered UAF key names, against `appAttestation.android`:
    /// the package, one signing-certificate digest among the configured ones, and the boot state it requires.
    package func keyAttestationVerdict(_ description: AndroidKeyDescription) throws(AppAttestationGate.Refused) -> String {
        guard let android = androidKey else { return "Android key attestation not checked (appAttestation.android is not configured)" }
        guard let application = description.applicationID else {
            throw AppAttestationGate.Refused(reason: "the Android key attestation names no app")
        }
        guard application.packages.contains(where: { $0.name == android.packageName }) else {
            let names = application.packages.prefix(4).map { UntrustedText.quoted($0.name, limit: 64) }.joined(separator: ", ")
            throw AppAttestationGate.Refused(reason: "the Android key attestation names another app (\(names))")
        }
        guard application.signatureDigests.contains(where: androidKeyDigests.contains) else {
            throw AppAttestationGate.Refused(reason: "the app in the Android key attestation is signed with a certificate not configured")
        }
        let boot = description.rootOfTrust
        if android.requireVerifiedBoot, boot?.verifiedBootState != .verified {
            throw AppAttestationGate.Refused(
                reason: "the device did not boot a verified system (\(boot.map { "\($0.verifiedBootState)" } ?? "no root of trust"))")
        }
        if android.requireLockedBootloader, boot?.deviceLocked != true {
            throw AppAttestationGate.Refused(reason: "the device's bootloader is unlocked")
        }
        return "Android key attestation: \(android.packageName), boot \(boot.map { "\($0.verifiedBootState)" } ?? "unknown")"
            + (boot?.deviceLocked == true ? ", bootloader locked" : "")
    }
}
