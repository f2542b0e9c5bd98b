import Crypto
import FIDOAttestation
import FIDOServerCore
import FIDOServerTesting
import Foundation
import Primitives
import XCTest

/// The app and boot a registered UAF key's Android key attestation must name (`appAttestation.android`): one test per
/// refusal, each changing one field of a description that passes.
final class AndroidKeyAttestationRuleTests: XCTestCase {
    static let digest = [UInt8](repeating: 0xF0, count: 32)

    func settings(requireVerifiedBoot: Bool = true, requireLockedBootloader: Bool = true) throws -> AppAttestationSettings {
        var configuration = InProcessServer.configuration()
        configuration.appAttestation = .init(
            android: .init(
                packageName: "ch.example.bank", certificateSha256Digests: [Base64URL.encode(Self.digest)],
                requireVerifiedBoot: requireVerifiedBoot, requireLockedBootloader: requireLockedBootloader))
        let google = (key: Data(count: 32).base64EncodedString(), verification: try Self.verificationKey())
        return try AppAttestationSettings(
            configuration,
            environment: ["MAUTH_PLAY_INTEGRITY_DECRYPTION_KEY": google.key, "MAUTH_PLAY_INTEGRITY_VERIFICATION_KEY": google.verification])
    }

    static func verificationKey() throws -> String { P256.Signing.PrivateKey().publicKey.derRepresentation.base64EncodedString() }

    var passing: AndroidKeyDescription {
        AndroidKeyDescription(
            attestationSecurityLevel: .trustedEnvironment, attestationChallenge: [1], hardwarePurposes: [2], hardwareOrigin: 0,
            applicationID: .init(packages: [.init(name: "ch.example.bank", version: 3)], signatureDigests: [Self.digest]),
            rootOfTrust: .init(verifiedBootKey: [1], deviceLocked: true, verifiedBootState: .verified))
    }

    func reason(_ description: AndroidKeyDescription, settings: AppAttestationSettings? = nil) throws -> String? {
        let settings = try settings ?? self.settings()
        do {
            _ = try settings.keyAttestationVerdict(description)
            return nil
        } catch { return error.reason }
    }

    func testTheBanksAppOnAVerifiedLockedDevicePasses() throws {
        XCTAssertEqual(try settings().keyAttestationVerdict(passing), "Android key attestation: ch.example.bank, boot verified, bootloader locked")
    }

    func testAKeyAttestationWithoutAnAppIsRefused() throws {
        var description = passing
        description.applicationID = nil
        XCTAssertEqual(try reason(description), "the Android key attestation names no app")
    }

    func testAKeyMadeForAnotherAppIsRefused() throws {
        var description = passing
        description.applicationID?.packages = [.init(name: "com.attacker.bank", version: 1)]
        XCTAssertEqual(try reason(description), "the Android key attestation names another app (\"com.attacker.bank\")")
    }

    func testAnAppSignedWithAnotherCertificateIsRefused() throws {
        var description = passing
        description.applicationID?.signatureDigests = [[UInt8](repeating: 1, count: 32)]
        XCTAssertEqual(try reason(description), "the app in the Android key attestation is signed with a certificate not configured")
    }

    func testADeviceThatDidNotBootAVerifiedSystemIsRefusedUnlessAllowed() throws {
        var description = passing
        description.rootOfTrust?.verifiedBootState = .unverified
        XCTAssertEqual(try reason(description), "the device did not boot a verified system (unverified)")
        XCTAssertNil(try reason(description, settings: try settings(requireVerifiedBoot: false)))
    }

    func testAnUnlockedBootloaderIsRefusedUnlessAllowed() throws {
        var description = passing
        description.rootOfTrust?.deviceLocked = false
        XCTAssertEqual(try reason(description), "the device's bootloader is unlocked")
        XCTAssertNil(try reason(description, settings: try settings(requireLockedBootloader: false)))
    }

    func testAKeyAttestationWithoutARootOfTrustIsRefusedWhereTheBootMatters() throws {
        var description = passing
        description.rootOfTrust = nil
        XCTAssertEqual(try reason(description), "the device did not boot a verified system (no root of trust)")
    }
}
