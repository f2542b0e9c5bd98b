import FIDOAttestation
import Foundation
import UAF
import XCTest

@testable import FIDOServerCore

/// The providers' names: the bundled list, an operator's file over it, the Metadata Service's description after them.
final class PasskeyProvidersTests: XCTestCase {
    let iCloud = "fbfc3007-154e-4ecc-8c0b-6e020557d7bd"
    let yubiKey = "cb69481e-8ff7-4039-93ec-0a2729a154a8"

    func file(_ text: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("providers-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url.path
    }

    func testTheBundledListNamesTheSyncedProvidersWhatEverCaseTheAAGUIDIsIn() throws {
        let providers = try PasskeyProviders()
        XCTAssertEqual(providers.name(aaguid: iCloud, metadata: nil), "iCloud Keychain")
        XCTAssertEqual(providers.name(aaguid: iCloud.uppercased(), metadata: nil), "iCloud Keychain")
        XCTAssertEqual(providers.name(aaguid: "ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4", metadata: nil), "Google Password Manager")
        XCTAssertNil(providers.name(aaguid: "00000000-0000-0000-0000-000000000000", metadata: nil))
        XCTAssertNil(providers.name(aaguid: yubiKey, metadata: nil))
    }

    func testTheMetadataServiceNamesASecurityKeyTheListsDoNot() throws {
        let store = MetadataStore(
            uaf: try UAFMetadata([]),
            fido2: [
                FIDO2Metadata(aaguid: AAGUID.bytes(yubiKey)!, description: " YubiKey 5 Series "),
                FIDO2Metadata(aaguid: AAGUID.bytes(iCloud)!, description: "Apple's own words"),
            ])
        let providers = try PasskeyProviders()
        XCTAssertEqual(providers.name(aaguid: yubiKey, metadata: store), "YubiKey 5 Series")
        XCTAssertEqual(providers.name(aaguid: iCloud, metadata: store), "iCloud Keychain", "the lists come first")
    }

    func testAnOperatorsFileAddsAndReplacesNames() throws {
        let path = try file(
            #"{"\#(iCloud)": {"name": "Apple Passwords", "icon_dark": "data:…"}, "\#(yubiKey.uppercased())": {"name": "Staff key"}, "note": "x"}"#)
        let providers = try PasskeyProviders(file: path)
        XCTAssertEqual(providers.name(aaguid: iCloud, metadata: nil), "Apple Passwords")
        XCTAssertEqual(providers.name(aaguid: yubiKey, metadata: nil), "Staff key")
        XCTAssertEqual(providers.name(aaguid: "d548826e-79b4-db40-a3d8-11116f7e8349", metadata: nil), "Bitwarden")
    }

    func testAFileThatIsNotTheListsFormatStopsTheStart() throws {
        for (text, expected) in [
            ("[]", "is not a JSON object of AAGUIDs"), ("{", "is not JSON"), (#"{"\#(iCloud)": {"icon": "x"}}"#, "\(iCloud) has no name"),
            (#"{"\#(iCloud)": {"name": ""}}"#, "has no name"),
        ] {
            let path = try file(text)
            XCTAssertThrowsError(try PasskeyProviders(file: path), text) { error in
                XCTAssertTrue("\(error)".contains("fido2.providerNamesPath"), "\(error)")
                XCTAssertTrue("\(error)".contains(expected), "\(error)")
            }
        }
        XCTAssertThrowsError(try PasskeyProviders(file: "/nonexistent/providers.json"))
    }

    func testALongNameIsCut() throws {
        let path = try file(#"{"\#(yubiKey)": {"name": "\#(String(repeating: "n", count: 300))"}}"#)
        XCTAssertEqual(try PasskeyProviders(file: path).name(aaguid: yubiKey, metadata: nil)?.count, 64)
    }
}
