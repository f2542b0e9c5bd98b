import AppAttestation
import Crypto
import FIDOSimulation
import Foundation
import XCTest

/// The simulated App Attest authority kept as a PEM file (`mauth load --app-attest-authority`): read back, it attests
/// under the root a server was configured with before; any other text is refused with its reason.
final class AppAttestAuthorityBundleTests: XCTestCase {
    let appID = SoftwareAppAttestAuthority.virtualDeviceAppID
    let now = Date(timeIntervalSince1970: 1_790_000_000)
    let clientDataHash = Array(SHA256.hash(data: Array("a UAF operation's final challenge".utf8)))

    func testABundleReadBackAttestsUnderTheRootItWasMadeWith() async throws {
        let original = try SoftwareAppAttestAuthority()
        let restored = try SoftwareAppAttestAuthority(pemBundle: original.pemBundle)
        XCTAssertEqual(restored.rootPEM, original.rootPEM)
        let key = SoftwareAppAttestKey()
        let object = try restored.attest(key, appID: appID, environment: .development, clientDataHash: clientDataHash, now: now)
        // The server holds only the original's root, as a file written before the bundle was read back.
        let verifier = AppleAppAttest(appIDs: [appID], environments: [.development], roots: [original.rootCertificate])
        let attested = try await verifier.verifyAttestation(object, keyID: key.keyID, clientDataHash: clientDataHash, at: now)
        XCTAssertEqual(attested.appID, appID)
    }

    func testTheBundleHoldsOneKeyAndTwoCertificates() throws {
        let bundle = try SoftwareAppAttestAuthority().pemBundle
        XCTAssertEqual(bundle.components(separatedBy: "-----BEGIN PRIVATE KEY-----").count - 1, 1)
        XCTAssertEqual(bundle.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1, 2)
    }

    func testTextThatIsNotPEMIsRefused() {
        XCTAssertThrowsError(try SoftwareAppAttestAuthority(pemBundle: "not a bundle")) { error in
            XCTAssertEqual((error as? AuthorityBundleError)?.reason, "is not PEM")
        }
    }

    func testABundleWithoutTheRootIsRefused() throws {
        let authority = try SoftwareAppAttestAuthority()
        let withoutRoot = authority.pemBundle.replacingOccurrences(of: authority.rootPEM, with: "")
        XCTAssertThrowsError(try SoftwareAppAttestAuthority(pemBundle: withoutRoot)) { error in
            XCTAssertEqual(
                (error as? AuthorityBundleError)?.reason, "must hold one PRIVATE KEY and two CERTIFICATEs (the intermediate, then the root)")
        }
    }

    func testABundleWhoseKeyIsNotTheIntermediatesIsRefused() throws {
        let authority = try SoftwareAppAttestAuthority()
        let otherKey = P256.Signing.PrivateKey().pemRepresentation
        let keyEnd = authority.pemBundle.range(of: "-----END PRIVATE KEY-----\n")!.upperBound
        let swapped = otherKey + "\n" + authority.pemBundle[keyEnd...]
        XCTAssertThrowsError(try SoftwareAppAttestAuthority(pemBundle: swapped)) { error in
            XCTAssertEqual((error as? AuthorityBundleError)?.reason, "holds a private key that is not the intermediate's")
        }
    }

    func testABundleWhoseCertificatesAreSwappedIsRefused() throws {
        let authority = try SoftwareAppAttestAuthority()
        let parts = authority.pemBundle.components(separatedBy: "-----BEGIN CERTIFICATE-----")
        XCTAssertEqual(parts.count, 3)
        let swapped = parts[0] + "-----BEGIN CERTIFICATE-----" + parts[2] + "\n-----BEGIN CERTIFICATE-----" + parts[1]
        XCTAssertThrowsError(try SoftwareAppAttestAuthority(pemBundle: swapped)) { error in
            XCTAssertEqual((error as? AuthorityBundleError)?.reason, "does not hold an intermediate issued by a self-signed root")
        }
    }
}
