#if APPLE_FRAMEWORKS_SHIM
import AppleFrameworksShim
import Foundation
import MobileAuthenticationCore
import XCTest

/// `AppleAppAttestService`, compiled from its own source (`AppleSources/`) against the scripted DeviceCheck: the
/// calls reach the service unchanged, and only `DCError.invalidKey` becomes `AppAttestKeyInvalid`. That the real
/// service answers as Apple documents is verified only on a device.
final class AppleAppAttestServiceTests: XCTestCase {
    override func setUp() { DCAppAttestService.shared.script = .init() }

    func testTheCallsReachDeviceCheckUnchanged() async throws {
        let service = AppleAppAttestService()
        let keyId = try await service.generateKey()
        _ = try await service.attestKey(keyId, clientDataHash: Data(repeating: 1, count: 32))
        _ = try await service.generateAssertion(keyId, clientDataHash: Data(repeating: 2, count: 32))
        XCTAssertEqual(DCAppAttestService.shared.script.calls, ["generateKey", "attestKey \(keyId) 32", "generateAssertion \(keyId) 32"])
    }

    func testTheSimulatorsUnsupportedServiceIsReported() {
        DCAppAttestService.shared.script.isSupported = false
        XCTAssertFalse(AppleAppAttestService().isSupported)
        XCTAssertFalse(ApplePlatform(storageDirectory: FileManager.default.temporaryDirectory).appAttest?.isSupported ?? true)
    }

    func testAnInvalidKeyBecomesAppAttestKeyInvalid() async {
        DCAppAttestService.shared.script.failure = DCError(.invalidKey)
        do {
            _ = try await AppleAppAttestService().generateAssertion("key", clientDataHash: Data())
            XCTFail("no error")
        } catch { XCTAssertTrue(error is AppAttestKeyInvalid, "\(error)") }
    }

    func testEveryOtherDeviceCheckErrorPassesThrough() async {
        for code in [DCError.Code.featureUnsupported, .serverUnavailable, .invalidInput, .unknownSystemFailure] {
            DCAppAttestService.shared.script.failure = DCError(code)
            do {
                _ = try await AppleAppAttestService().attestKey("key", clientDataHash: Data())
                XCTFail("no error for \(code)")
            } catch { XCTAssertEqual((error as? DCError)?.code, code) }
        }
    }
}
#endif
