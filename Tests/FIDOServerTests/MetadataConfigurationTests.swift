import FIDOServerTesting
import FIDOSimulation
import Foundation
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// The server loads MDS3-form statements from a directory, skips other protocol families, and the loaded
/// statements drive the registration policy and verification.
final class MetadataConfigurationTests: XCTestCase {
    static let mds3 = """
        {"aaid": "ABCD#0001", "description": "MDS3 test authenticator", "authenticatorVersion": 1, "protocolFamily": "uaf", "schema": 3,
         "upv": [{"major": 1, "minor": 1}], "authenticationAlgorithms": ["secp256r1_ecdsa_sha256_der"], "publicKeyAlgAndEncodings": ["ecc_x962_der"],
         "attestationTypes": ["basic_surrogate"], "userVerificationDetails": [[{"userVerificationMethod": "passcode_internal"}]],
         "keyProtection": ["software"], "matcherProtection": ["software"], "attachmentHint": ["internal"], "tcDisplay": ["any"],
         "tcDisplayContentType": "text/plain", "attestationRootCertificates": []}
        """
    static let fido2 = #"{"aaguid": "0132d110-bf4e-4208-a403-ab4f5f12efe5", "description": "A FIDO2 key", "protocolFamily": "fido2", "schema": 3}"#

    func testMDS3StatementsFromADirectoryDrivePolicyAndVerification() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-mds3-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(Self.mds3.utf8).write(to: directory.appendingPathComponent("a-uaf.json"))
        try Data(Self.fido2.utf8).write(to: directory.appendingPathComponent("b-fido2.json"))
        var skipped: [String] = []
        var configuration = InProcessServer.configuration()
        configuration.metadataPath = directory.path
        let store = try configuration.loadMetadata { skipped.append($0) }
        XCTAssertEqual(store.all.map(\.aaid), ["ABCD#0001"])
        XCTAssertEqual(skipped.count, 1)
        XCTAssertTrue(skipped[0].contains("fido2 statement A FIDO2 key"), skipped[0])

        try await InProcessServer.with(configuration) { loopback in
            let request = try await loopback.registrationRequest(username: "alice")
            XCTAssertEqual(request.policy.accepted, [[MatchCriteria(aaid: ["ABCD#0001"])]])
            var authenticator = SoftwareAuthenticator()
            authenticator.aaid = "ABCD#0001"
            let accepted = try await loopback.send(
                "/nevisfido/uaf/1.1/registration", try authenticator.register(request, serverAppID: loopback.server.appID))
            XCTAssertEqual(accepted.statusCode, 1200)
            // An AAID the MDS3 directory does not list is unknown to this server.
            let second = try await loopback.registrationRequest(username: "bob")
            var pin = SoftwareAuthenticator()
            pin.aaid = "F1D0#1001"
            let refused = try await loopback.send("/nevisfido/uaf/1.1/registration", try pin.register(second, serverAppID: loopback.server.appID))
            XCTAssertEqual(refused.statusCode, 1480)
        }
    }

    func testInlineMetadataWinsOverThePath() throws {
        var configuration = ServerConfiguration(facets: [testFacet], metadataPath: "/nonexistent")
        configuration.metadataJSON = Self.mds3
        XCTAssertEqual(try configuration.loadMetadata().all.map(\.aaid), ["ABCD#0001"])
    }
}
