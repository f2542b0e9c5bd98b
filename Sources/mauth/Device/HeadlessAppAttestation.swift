import Crypto
import FIDOServer
import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import Primitives

/// A headless device's app attestation (`mauth device init --app-attestation`): the iOS profile attests with App
/// Attest under a simulated authority, the Android profile with Play Integrity tokens under a simulated issuer's
/// keys. What a server needs to trust them (a root, or the Play Console's two keys) is written beside the device's
/// private material in `app-attestation/` (mode 0700), and `init` prints the server's `appAttestation` settings.
enum HeadlessAppAttestation {
    static let folder = "app-attestation"
    /// The Google Cloud project number the simulated Android app is built with.
    static let cloudProjectNumber: Int64 = 100_000_000_001

    /// How a device attests, as `device.json` keeps it: `app-attest` (iOS) or `play-integrity` (Android).
    enum Kind: String {
        case appAttest = "app-attest"
        case playIntegrity = "play-integrity"

        init(profile: String) { self = profile == "android" ? .playIntegrity : .appAttest }

        var name: String { self == .appAttest ? "App Attest" : "Play Integrity" }
    }

    /// Makes the files of `kind` in `directory`'s folder and returns the server's `appAttestation` settings for them.
    static func make(_ kind: Kind, in directory: URL) throws -> FIDOServer.ServerConfiguration.AppAttestation {
        let folder = directory.appendingPathComponent(folder)
        do {
            // Private keys live here: the folder is the owner's only.
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch { throw DeviceCommandError("cannot make \(folder.path): \(SystemErrorText.reason(error))") }
        switch kind {
        case .playIntegrity:
            let issuer = SoftwarePlayIntegrity()
            let stored = StoredIssuer(decryptionKey: issuer.decryptionKeyBase64, signingKey: issuer.signingKey.pemRepresentation)
            let (decryption, verification) = (folder.appendingPathComponent("decryption.key"), folder.appendingPathComponent("verification.key"))
            try write(try JSONEncoder().encode(stored), to: folder.appendingPathComponent("play-integrity.json"))
            try write(Data(issuer.decryptionKeyBase64.utf8), to: decryption)
            try write(Data(issuer.verificationKeyBase64.utf8), to: verification)
            return .virtualDevice(playIntegrityDecryptionKey: decryption.path, verificationKey: verification.path)
        case .appAttest:
            let authority = try SoftwareAppAttestAuthority()
            let root = folder.appendingPathComponent("root.pem")
            try write(Data(authority.pemBundle.utf8), to: folder.appendingPathComponent("authority.pem"))
            try write(Data(authority.rootPEM.utf8), to: root)
            return .virtualDevice(appAttestRoot: root.path)
        }
    }

    /// A device's attestation for one command: the SDK's setting, and what to keep once the command ends.
    struct Attached {
        let configuration: AppAttestation
        let save: () throws -> Void
    }

    /// Gives `platform` the services of `kind` from `directory`'s folder.
    static func attach(_ named: String, directory: URL, to platform: SimulatedPlatform) throws -> Attached {
        let folder = directory.appendingPathComponent(folder)
        guard let kind = Kind(rawValue: named) else {
            throw DeviceCommandError("device.json names app attestation \"\(named)\"; this mauth knows app-attest and play-integrity")
        }
        if kind == .playIntegrity {
            let stored = try JSONDecoder().decode(StoredIssuer.self, from: try read(folder.appendingPathComponent("play-integrity.json")))
            guard let decryption = Data(base64Encoded: stored.decryptionKey), decryption.count == 32,
                let signing = try? P256.Signing.PrivateKey(pemRepresentation: stored.signingKey)
            else { throw DeviceCommandError("\(folder.path)/play-integrity.json is damaged: make the device again") }
            let issuer = SoftwarePlayIntegrity(decryptionKey: SymmetricKey(data: decryption), signingKey: signing)
            platform.usePlayIntegrity(
                SimulatedPlayIntegrity(
                    issuer: issuer, cloudProjectNumber: cloudProjectNumber,
                    verdicts: .init(
                        packageName: SoftwarePlayIntegrity.virtualDevicePackageName,
                        certificateSha256Digests: [SoftwarePlayIntegrity.virtualDeviceCertificateDigest]),
                    clock: { platform.now() }))
            return Attached(configuration: .playIntegrity(cloudProjectNumber: cloudProjectNumber), save: {})
        }
        let bundle = String(decoding: try read(folder.appendingPathComponent("authority.pem")), as: UTF8.self)
        let authority: SoftwareAppAttestAuthority
        do { authority = try SoftwareAppAttestAuthority(pemBundle: bundle) } catch {
            throw DeviceCommandError("\(folder.path)/authority.pem: \(error)")
        }
        let service = SimulatedAppAttest(authority: authority, appID: SoftwareAppAttestAuthority.virtualDeviceAppID, clock: { platform.now() })
        let keys = folder.appendingPathComponent("keys.json")
        // No keys yet (or lost): the SDK makes a key and attests it again, as after a restore onto another device.
        if let data = FileManager.default.contents(atPath: keys.path),
            let state = try? JSONDecoder().decode(SimulatedAppAttest.State.self, from: data)
        {
            service.restore(state)
        }
        platform.useAppAttest(service)
        return Attached(configuration: .appAttest, save: { try write(try JSONEncoder().encode(service.state), to: keys) })
    }

    /// The simulated Play Integrity issuer's keys.
    struct StoredIssuer: Codable {
        var decryptionKey: String
        var signingKey: String
    }

    static func write(_ data: Data, to file: URL) throws {
        do { try data.write(to: file, options: .atomic) } catch {
            throw DeviceCommandError("cannot write \(file.path): \(SystemErrorText.reason(error))")
        }
    }

    static func read(_ file: URL) throws -> Data {
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw DeviceCommandError("\(file.path) is missing: make the device again with mauth device init --app-attestation")
        }
        return data
    }
}
