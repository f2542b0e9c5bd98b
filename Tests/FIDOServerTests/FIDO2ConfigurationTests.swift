import Foundation
import XCTest

@testable import FIDOServerCore

/// The `fido2` section: a valid one loads with its defaults, and each wrong value (one change to a valid section)
/// stops the start with the key's path, as every other setting does.
final class FIDO2ConfigurationTests: XCTestCase {
    static let valid = #"{"rpId": "bank.example", "origins": ["https://bank.example", "https://www.bank.example:8443"]}"#

    struct Refused: Error { let text: String }

    /// The configuration `fido2` (a JSON object's text) makes, or the refusal's text.
    func load(_ fido2: String, developmentMode: Bool = false) -> Result<ServerConfiguration, Refused> {
        let json = #"{"facets": ["ios:bundle-id:x"], "authorization": {"developmentMode": \#(developmentMode)}, "fido2": \#(fido2)}"#
        do {
            let configuration = try JSONDecoder().decode(ServerConfiguration.self, from: Data(json.utf8))
            try configuration.validate()
            return .success(configuration)
        } catch {
            return .failure(Refused(text: "\(error)"))
        }
    }

    /// `valid` with `key` set to `value` (JSON text), replacing the member of that name.
    func changed(_ key: String, _ value: String) -> String {
        var object = try! JSONSerialization.jsonObject(with: Data(Self.valid.utf8)) as! [String: Any]
        object[key] = try! JSONSerialization.jsonObject(with: Data(value.utf8), options: .fragmentsAllowed)
        return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    func refusal(_ fido2: String, developmentMode: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> String {
        guard case .failure(let refused) = load(fido2, developmentMode: developmentMode) else {
            XCTFail("accepted: \(fido2)", file: file, line: line)
            return ""
        }
        return refused.text
    }

    func testAValidSectionLoadsWithItsDefaults() throws {
        let fido2 = try XCTUnwrap(try load(Self.valid).get().fido2)
        XCTAssertEqual(fido2.userVerification, "required")
        XCTAssertEqual(fido2.residentKey, "required")
        XCTAssertEqual(fido2.algorithms, ["ES256", "EdDSA"])
        XCTAssertEqual(fido2.timeoutSeconds, 300)
        XCTAssertEqual(fido2.attestationPolicy, "passkeys")
        XCTAssertEqual(fido2.allowCredentials, "list")
        XCTAssertNil(try load("null").get().fido2, "absent or null: passkeys off")
    }

    func testAnAndroidAppOriginIsAccepted() throws {
        _ = try load(changed("origins", #"["https://bank.example", "android:apk-key-hash:Rk9PQkFSLWJhc2U2NHVybC1zaGEyNTY"]"#)).get()
    }

    func testARelatedOriginOnAnotherDomainIsAccepted() throws {
        _ = try load(changed("relatedOrigins", #"["https://bank.example.co.uk"]"#)).get()
    }

    func testAMissingRPIDIsRefused() {
        XCTAssertTrue(refusal(#"{"origins": ["https://bank.example"]}"#).contains("rpId"))
    }

    func testAnRPIDWithASchemeIsRefused() {
        XCTAssertTrue(refusal(#"{"rpId": "https://bank.example", "origins": ["https://bank.example"]}"#).contains("fido2.rpId"))
    }

    func testAnRPIDWithAPortIsRefused() {
        XCTAssertTrue(refusal(#"{"rpId": "bank.example:443", "origins": ["https://bank.example"]}"#).contains("fido2.rpId"))
    }

    func testNoOriginIsRefused() {
        XCTAssertTrue(refusal(changed("origins", "[]")).contains("fido2.origins must list at least one origin"))
    }

    func testAnOriginOnAnotherDomainIsRefused() {
        let text = refusal(changed("origins", #"["https://bank.example.evil"]"#))
        XCTAssertTrue(text.contains("is not on bank.example or a subdomain of it"), text)
    }

    func testAnOriginThatOnlyEndsLikeTheRPIDIsRefused() {
        XCTAssertTrue(refusal(changed("origins", #"["https://evilbank.example"]"#)).contains("is not on bank.example"))
    }

    func testAnOriginWithAPathIsRefused() {
        XCTAssertTrue(refusal(changed("origins", #"["https://bank.example/login"]"#)).contains("is not an origin"))
    }

    func testAnHTTPOriginIsRefusedOutsideDevelopmentMode() {
        let localhost = #"{"rpId": "localhost", "origins": ["http://localhost:8080"]}"#
        XCTAssertTrue(refusal(localhost).contains("is not an origin"))
        XCTAssertNotNil(try? load(localhost, developmentMode: true).get())
    }

    func testAnHTTPOriginOtherThanLocalhostIsRefusedEvenInDevelopmentMode() {
        XCTAssertTrue(refusal(changed("origins", #"["http://bank.example"]"#), developmentMode: true).contains("is not an origin"))
    }

    func testAnAndroidOriginWithoutAHashIsRefused() {
        XCTAssertTrue(refusal(changed("origins", #"["android:apk-key-hash:"]"#)).contains("has no key hash"))
    }

    func testAnHTTPRelatedOriginIsRefused() {
        XCTAssertTrue(refusal(changed("relatedOrigins", #"["http://bank.example.co.uk"]"#)).contains("fido2.relatedOrigins"))
    }

    func testAnUnknownUserVerificationIsRefused() {
        XCTAssertTrue(refusal(changed("userVerification", #""always""#)).contains("fido2.userVerification"))
    }

    func testAnUnknownResidentKeyIsRefused() {
        XCTAssertTrue(refusal(changed("residentKey", #""yes""#)).contains("fido2.residentKey"))
    }

    func testAnUnknownAlgorithmIsRefused() {
        XCTAssertTrue(refusal(changed("algorithms", #"["ES256", "Ed448"]"#)).contains("fido2.algorithms"))
    }

    func testRS1IsRefusedWithItsReason() {
        XCTAssertTrue(refusal(changed("algorithms", #"["ES256", "RS1"]"#)).contains("fido2.algorithms: RS1 (RSA with SHA-1) is not offered"))
    }

    func testMLDSA44IsRefusedWithItsReasonAndTheOtherTwoAreAccepted() throws {
        XCTAssertTrue(
            refusal(changed("algorithms", #"["ML-DSA-44"]"#)).contains("fido2.algorithms: ML-DSA-44 is not offered: swift-crypto cannot verify it"))
        let fido2 = try XCTUnwrap(try load(changed("algorithms", #"["ML-DSA-87", "ML-DSA-65", "ES256"]"#)).get().fido2)
        XCTAssertEqual(fido2.algorithms, ["ML-DSA-87", "ML-DSA-65", "ES256"])
    }

    func testEveryRSAHashNevisFIDONamesIsAccepted() throws {
        let fido2 = try XCTUnwrap(try load(changed("algorithms", #"["RS512", "RS384", "RS256"]"#)).get().fido2)
        XCTAssertEqual(fido2.algorithms, ["RS512", "RS384", "RS256"])
    }

    func testAnUnknownHintIsRefused() {
        XCTAssertTrue(refusal(changed("hints", #"["usb"]"#)).contains("fido2.hints: usb is not one of security-key, client-device, hybrid"))
        XCTAssertTrue(refusal(changed("hints", #"["hybrid", "hybrid"]"#)).contains("fido2.hints: a hint is named twice"))
    }

    func testEnterprisePolicyDoesNotTakeAConveyanceThatStripsTheChain() {
        let enterprise = changed("attestationPolicy", #""enterprise""#).replacingOccurrences(of: "}", with: #", "attestationConveyance": "none"}"#)
        XCTAssertTrue(refusal(enterprise).contains("fido2.attestationConveyance none would strip the attestation chain"), refusal(enterprise))
        XCTAssertTrue(refusal(changed("attestationConveyance", #""always""#)).contains("fido2.attestationConveyance must be"))
    }

    func testAnUnknownCredentialProtectionPolicyOrLargeBlobIsRefused() {
        XCTAssertTrue(
            refusal(changed("credentialProtection", #"{"policy": "always"}"#)).contains(
                "fido2.credentialProtection.policy must be userVerificationOptional"))
        XCTAssertTrue(refusal(changed("credentialProtection", #"{"policy": "userVerificationRequired", "enforced": true}"#)).contains("enforced"))
        XCTAssertTrue(refusal(changed("largeBlob", #""yes""#)).contains("fido2.largeBlob must be preferred or required"))
    }

    func testARepeatedAlgorithmIsRefused() {
        XCTAssertTrue(refusal(changed("algorithms", #"["ES256", "ES256"]"#)).contains("fido2.algorithms"))
    }

    func testNoAlgorithmIsRefused() {
        XCTAssertTrue(refusal(changed("algorithms", "[]")).contains("fido2.algorithms"))
    }

    func testATimeoutOutOfRangeIsRefused() {
        XCTAssertTrue(refusal(changed("timeoutSeconds", "5")).contains("fido2.timeoutSeconds must be 10...3600"))
        XCTAssertTrue(refusal(changed("timeoutSeconds", "3601")).contains("fido2.timeoutSeconds"))
    }

    func testAnUnknownAttestationPolicyIsRefused() {
        XCTAssertTrue(refusal(changed("attestationPolicy", #""strict""#)).contains("fido2.attestationPolicy"))
    }

    func testAllowedAAGUIDsWithoutTheEnterprisePolicyAreRefused() {
        XCTAssertTrue(refusal(changed("allowedAAGUIDs", #"["cb69481e-8ff7-4039-93ec-0a2729a154a8"]"#)).contains("needs attestationPolicy enterprise"))
    }

    func testAMalformedAAGUIDIsRefused() {
        let section =
            #"{"rpId": "bank.example", "origins": ["https://bank.example"], "attestationPolicy": "enterprise", "allowedAAGUIDs": ["cb69481e"]}"#
        XCTAssertTrue(refusal(section).contains("is not an AAGUID"))
    }

    func testAnEmptyRPNameIsRefused() {
        XCTAssertTrue(refusal(changed("rpName", #""""#)).contains("fido2.rpName"))
    }

    // MARK: The apps that share the site's passkeys

    static let digest = "Rk9PQkFSLWJhc2U2NHVybC1zaGEyNTYtZGlnZXN0ISE"  // 32 bytes, base64url
    static let apps =
        #"{"apple": [{"teamId": "ABCDE12345", "bundleId": "ch.example.bank"}], "android": [{"packageName": "ch.example.bank", "certificateSha256Digests": ["\#(digest)"]}]}"#

    func testAppsLoadAndTheAndroidAppsOriginIsAccepted() throws {
        let fido2 = try XCTUnwrap(try load(changed("apps", Self.apps)).get().fido2)
        XCTAssertEqual(fido2.apps?.apple.map(\.appID), ["ABCDE12345.ch.example.bank"])
        XCTAssertTrue(fido2.acceptedOrigins.contains("android:apk-key-hash:\(Self.digest)"))
        XCTAssertTrue(fido2.acceptedOrigins.contains("https://bank.example"))
    }

    func testAppsThatNameNoAppAreRefused() {
        XCTAssertTrue(refusal(changed("apps", "{}")).contains("fido2.apps names no app"))
    }

    func testAnAppleAppWithABadTeamIDIsRefused() {
        let text = refusal(changed("apps", #"{"apple": [{"teamId": "abcde12345", "bundleId": "ch.example.bank"}]}"#))
        XCTAssertTrue(text.contains("fido2.apps.apple[0].teamId \"abcde12345\" is not a Team ID"), text)
    }

    func testAnAppleAppNamedTwiceIsRefused() {
        let app = #"{"teamId": "ABCDE12345", "bundleId": "ch.example.bank"}"#
        XCTAssertTrue(refusal(changed("apps", #"{"apple": [\#(app), \#(app)]}"#)).contains("fido2.apps.apple names an app twice"))
    }

    func testAnAndroidAppWithABadPackageNameIsRefused() {
        let text = refusal(changed("apps", #"{"android": [{"packageName": "bank", "certificateSha256Digests": ["\#(Self.digest)"]}]}"#))
        XCTAssertTrue(text.contains("fido2.apps.android[0].packageName \"bank\" is not an Android package name"), text)
    }

    func testAnAndroidDigestInHexIsRefused() {
        let hex = String(repeating: "AB:", count: 31) + "AB"
        let text = refusal(changed("apps", #"{"android": [{"packageName": "ch.example.bank", "certificateSha256Digests": ["\#(hex)"]}]}"#))
        XCTAssertTrue(text.contains("is not a SHA-256 digest in base64url without padding"), text)
    }

    func testAnAndroidPackageNamedTwiceIsRefused() {
        let app = #"{"packageName": "ch.example.bank", "certificateSha256Digests": ["\#(Self.digest)"]}"#
        XCTAssertTrue(refusal(changed("apps", #"{"android": [\#(app), \#(app)]}"#)).contains("fido2.apps.android names a package twice"))
    }

    func testAnUnknownAllowCredentialsModeIsRefused() {
        XCTAssertTrue(
            refusal(changed("allowCredentials", #""always""#)).contains("fido2.allowCredentials must be list, listWithDecoys or authorizedCallers"))
    }

    /// The earlier key still reads: `true` listed to anyone, `false` only to callers with credentials.
    func testTheEarlierAllowCredentialsForAnyCallerKeyStillReads() throws {
        XCTAssertEqual(try load(changed("allowCredentialsForAnyCaller", "true")).get().fido2?.allowCredentials, "list")
        XCTAssertEqual(try load(changed("allowCredentialsForAnyCaller", "false")).get().fido2?.allowCredentials, "authorizedCallers")
    }

    func testBothAllowCredentialsKeysAtOnceAreRefused() {
        var object = try! JSONSerialization.jsonObject(with: Data(Self.valid.utf8)) as! [String: Any]
        object["allowCredentials"] = "list"
        object["allowCredentialsForAnyCaller"] = true
        let text = refusal(String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        XCTAssertTrue(text.contains("give allowCredentials only"), text)
    }

    func testAMisspeltKeyIsRefusedWithASuggestion() {
        let text = refusal(changed("relatedOrigin", #"["https://bank.example.co.uk"]"#))
        XCTAssertTrue(text.contains("unknown key fido2.relatedOrigin (did you mean relatedOrigins?)"), text)
    }

    func testAttestationRootsThatAreNotPEMStopTheBuild() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-roots-\(UUID().uuidString).pem").path
        try Data("not a certificate".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var fido2 = try XCTUnwrap(try load(Self.valid).get().fido2)
        fido2.attestationRootsPath = path
        XCTAssertThrowsError(try PasskeySettings(fido2)) { error in
            XCTAssertTrue("\(error)".contains("fido2.attestationRootsPath \(path): no certificate"), "\(error)")
        }
        fido2.attestationRootsPath = path + ".missing"
        XCTAssertThrowsError(try PasskeySettings(fido2)) { error in
            XCTAssertTrue("\(error)".contains("no such file"), "\(error)")
        }
    }
}
