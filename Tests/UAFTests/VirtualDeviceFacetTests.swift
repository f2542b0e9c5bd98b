import Crypto
import FIDOSimulation
import Foundation
import XCTest

/// The virtual devices' facets have the form their platform's apps have (uaf-spec, AppID and Facets).
final class VirtualDeviceFacetTests: XCTestCase {
    func testTheAndroidFacetIsTheUnpaddedBase64OfASHA1() {
        let digest = Data(Insecure.SHA1.hash(data: Data("ch.nevis.mauth.virtualdevice".utf8)))
        let expected = "android:apk-key-hash:" + digest.base64EncodedString().replacingOccurrences(of: "=", with: "")
        XCTAssertEqual(SoftwareAuthenticator.virtualAndroidDeviceFacetID, expected)
        XCTAssertEqual(SoftwareAuthenticator.virtualAndroidDeviceFacetID.dropFirst("android:apk-key-hash:".count).count, 27)
    }

    func testTheIOSFacetIsABundleID() {
        XCTAssertTrue(SoftwareAuthenticator.virtualDeviceFacetID.hasPrefix("ios:bundle-id:"))
    }
}
