import FIDOSimulation
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import XCTest

/// A backup of one phone restored onto another: the SDK's storage comes along, its Keychain secret and its keys do
/// not. The app hears it once, typed, and starts clean; the folder is kept out of backups in the first place.
final class RestoredBackupTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    /// The first phone's storage folder copied to a new phone (another device fingerprint), as a restore does.
    func restoredPhone() async throws -> SimulatedPlatform {
        let first = try await env.client()
        try await first.register("alice")
        await first.shutdown()
        let folder = env.directory.appendingPathComponent("restored")
        try FileManager.default.copyItem(at: env.platform.storageDirectory, to: folder)
        return SimulatedPlatform(storageDirectory: folder, applicationFacetId: env.platform.applicationFacetId, deviceFingerprint: "another-phone")
    }

    func testARestoredStorageFailsOnceWithATypedError() async throws {
        let phone = try await restoredPhone()
        let error = await captureError { _ = try await self.env.client(platform: phone) }
        guard case .Unknown(let cause as StorageResetError)? = error as? InitializationError else {
            return XCTFail("expected InitializationError.Unknown(StorageResetError), got \(String(describing: error))")
        }
        XCTAssertTrue(cause.description.contains("register this device again"), cause.description)
        XCTAssertTrue(FileManager.default.fileExists(atPath: cause.setAsidePath), "the unreadable file is set aside, not deleted")
    }

    func testTheNextInitializationStartsClean() async throws {
        let phone = try await restoredPhone()
        _ = await captureError { _ = try await self.env.client(platform: phone) }
        let client = try await env.client(platform: phone)
        XCTAssertEqual(client.localData.accounts.map(\.username), [])
        try await client.register("alice")
        XCTAssertEqual(client.localData.accounts.map(\.username), ["alice"])
    }

    func testTheStorageFolderIsKeptOutOfBackups() async throws {
        _ = try await env.client()
        XCTAssertEqual(env.platform.foldersExcludedFromBackup, [env.platform.storageDirectory])
    }
}
