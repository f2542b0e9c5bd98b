import CBOR
import Crypto
import WebAuthn
import XCTest

/// Authenticator data: a valid registration's and assertion's parts, and each refusal from one changed field.
final class AuthenticatorDataTests: XCTestCase {
    static let rpIDHash = Array(SHA256.hash(data: Data("example.org".utf8)))
    static let aaguid = Array(repeating: UInt8(0xAA), count: 16)

    /// Registration authenticator data: flags, counter, attested credential data with `credentialID` and `key`, then
    /// `extensions` (ED set when given) and `extra` bytes.
    static func registration(
        flags: UInt8 = 0x45, signCount: UInt32 = 7, credentialID: [UInt8] = Array(repeating: 0x42, count: 16),
        key: [UInt8] = COSEKeyTests.ec2(), extensions: [UInt8]? = nil, extra: [UInt8] = []
    ) -> [UInt8] {
        let counter = (0..<4).map { UInt8(truncatingIfNeeded: signCount >> (24 - 8 * $0)) }
        let length = [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xff)]
        return rpIDHash + [flags | (extensions == nil ? 0 : 0x80)] + counter + aaguid + length + credentialID + key + (extensions ?? []) + extra
    }

    func reason(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> AuthenticatorDataError.Reason? {
        do {
            _ = try AuthenticatorData(bytes: bytes)
            XCTFail("accepted", file: file, line: line)
            return nil
        } catch { return error.reason }
    }

    func testARegistrationsPartsAreRead() throws {
        let extensions = CBOREncoder.encode(.map(CBORMap([.init(.text("credProtect"), .unsigned(2))])))
        let parsed = try AuthenticatorData(bytes: Self.registration(extensions: extensions))
        XCTAssertEqual(parsed.rpIDHash, Self.rpIDHash)
        XCTAssertEqual(parsed.flags, [.userPresent, .userVerified, .attestedCredentialData, .extensionData])
        XCTAssertEqual(parsed.signCount, 7)
        XCTAssertEqual(parsed.attestedCredentialData?.aaguid, Self.aaguid)
        XCTAssertEqual(parsed.attestedCredentialData?.credentialID, Array(repeating: 0x42, count: 16))
        XCTAssertEqual(parsed.attestedCredentialData?.publicKey.encoded, COSEKeyTests.ec2())
        XCTAssertEqual(parsed.extensions?[text: "credProtect"], .unsigned(2))
    }

    func testAnAssertionIsExactly37Bytes() throws {
        let parsed = try AuthenticatorData(bytes: Self.rpIDHash + [0x1d, 0, 0, 1, 0])
        XCTAssertEqual(parsed.signCount, 256)
        XCTAssertEqual(parsed.flags, [.userPresent, .userVerified, .backupEligible, .backupState])
        XCTAssertNil(parsed.attestedCredentialData)
    }

    func testACredentialIDOf1023BytesIsAccepted() throws {
        XCTAssertEqual(
            try AuthenticatorData(bytes: Self.registration(credentialID: Array(repeating: 1, count: 1023))).attestedCredentialData?.credentialID
                .count, 1023)
    }

    func testFewerThan37BytesAreRefused() { XCTAssertEqual(reason(Self.rpIDHash + [0x01, 0, 0, 0]), .tooShort(length: 36)) }
    func testBackupStateWithoutEligibilityIsRefused() {
        XCTAssertEqual(reason(Self.rpIDHash + [0x11, 0, 0, 0, 0]), .backupStateWithoutEligibility)
    }
    func testBytesAfterAnAssertionAreRefused() { XCTAssertEqual(reason(Self.rpIDHash + [0x01, 0, 0, 0, 0, 0xa0]), .trailingBytes(count: 1)) }
    func testBytesAfterTheCredentialKeyAreRefused() { XCTAssertEqual(reason(Self.registration(extra: [0x00])), .trailingBytes(count: 1)) }
    func testBytesAfterTheExtensionsAreRefused() {
        XCTAssertEqual(reason(Self.registration(extensions: [0xa0], extra: [0xa0])), .trailingBytes(count: 1))
    }
    func testAttestedCredentialDataCutShortIsRefused() {
        XCTAssertEqual(reason(Array(Self.registration().prefix(37 + 17))), .attestedCredentialDataTruncated)
    }
    func testACredentialIDLongerThanTheInputIsRefused() {
        var bytes = Self.registration()
        bytes[37 + 16] = 0x03  // length 0x0310 = 784: more than what follows
        XCTAssertEqual(reason(bytes), .attestedCredentialDataTruncated)
    }
    func testACredentialIDOver1023BytesIsRefused() {
        XCTAssertEqual(reason(Self.registration(credentialID: Array(repeating: 1, count: 1024))), .credentialIDTooLong(length: 1024))
    }
    func testACredentialKeyCutShortIsRefused() {
        XCTAssertEqual(
            reason(Array(Self.registration().dropLast(1))), .credentialPublicKey(.malformed(CBORError(.truncated, at: 37 + 18 + 16 + 77 - 1))))
    }
    func testAnInvalidCredentialKeyIsRefusedWithItsReason() {
        XCTAssertEqual(reason(Self.registration(key: COSEKeyTests.ec2 { $0[3] = .int(-53) })), .credentialPublicKey(.algorithmUnavailable(-53)))
    }
    func testTheExtensionFlagWithoutExtensionsIsRefused() {
        XCTAssertEqual(reason(Self.rpIDHash + [0x81, 0, 0, 0, 0]), .extensionsMalformed(CBORError(.truncated, at: 37)))
    }
    func testExtensionsThatAreNotAMapAreRefused() {
        XCTAssertEqual(reason(Self.registration(extensions: [0x80])), .extensionsNotAMap)
    }
    func testExtensionsWithARepeatedKeyAreRefused() {
        let bytes = Self.registration(extensions: [0xa2, 0x61, 0x61, 0x01, 0x61, 0x61, 0x02])
        XCTAssertEqual(reason(bytes), .extensionsMalformed(CBORError(.duplicateMapKey, at: bytes.count - 3)))
    }
}
