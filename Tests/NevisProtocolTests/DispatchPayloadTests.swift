import Crypto
import Foundation
import JOSE
import NevisProtocol
import Primitives
import XCTest

/// The out-of-band payload codec: the two documented forms, and one rejection per changed field.
final class DispatchPayloadTests: XCTestCase {
    let content = DispatchPayload.Content(token: "tok", redeemURL: "https://fido.example/nevisfido/token/redeem/registration", data: "app data")
    let deviceKey = P256.KeyAgreement.PrivateKey()

    private func object(_ json: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(json.utf8)) as! [String: Any]
    }

    private func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    private func assertMalformed(_ json: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try DispatchPayload.parse(json: json), file: file, line: line) { error in
            guard case .malformed? = error as? DispatchPayloadError else { return XCTFail("\(error)", file: file, line: line) }
        }
    }

    func testThePlainFormIsTheSeedsJSON() throws {
        let plain = DispatchPayload.plain(content)
        XCTAssertEqual(
            plain,
            #"{"nma_data":{"data":"app data","redeem_url":"https://fido.example/nevisfido/token/redeem/registration","token":"tok"},"nma_data_content_type":"application/json","nma_data_version":"1"}"#
        )
        XCTAssertEqual(try DispatchPayload.parse(json: plain), .plain(content, version: "1"))
    }

    func testTheEncryptedFormOpensOnlyWithTheDevicesKey() throws {
        let encrypted = try DispatchPayload.encrypted(content, to: deviceKey.publicKey, keyID: "target-1")
        XCTAssertEqual(try object(encrypted)["nma_data_content_type"] as? String, "application/jose")
        let envelope = try DispatchPayload.parse(json: encrypted)
        XCTAssertEqual(try envelope.open { self.deviceKey }, content)
        XCTAssertThrowsError(try envelope.open { P256.KeyAgreement.PrivateKey() }) {
            guard case .decryption(let cause)? = $0 as? DispatchPayloadError, cause == JOSEError(.decryptionFailed) else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try envelope.open { nil }) {
            guard case .noDecryptionKey? = $0 as? DispatchPayloadError else { return XCTFail("\($0)") }
        }
    }

    func testALinkCarriesThePayloadBase64URLEncoded() throws {
        let link = DispatchPayload.link(base: "mauth://oob", payload: DispatchPayload.plain(content))
        XCTAssertTrue(link.hasPrefix("mauth://oob?dispatchTokenResponse="))
        XCTAssertEqual(try DispatchPayload.parse(base64URL: link), .plain(content, version: "1"))
        let bare = String(link.dropFirst("mauth://oob?dispatchTokenResponse=".count))
        XCTAssertEqual(try DispatchPayload.parse(base64URL: bare), .plain(content, version: "1"))
        XCTAssertEqual(
            DispatchPayload.link(base: "https://app.example/oob?x=1", payload: "{}"), "https://app.example/oob?x=1&dispatchTokenResponse=e30")
    }

    func testAnotherVersionIsMalformed() throws {
        var fields = try object(DispatchPayload.plain(content))
        fields["nma_data_version"] = "2"
        assertMalformed(try json(fields))
    }

    func testAContentTypeThatDoesNotMatchTheDataIsMalformed() throws {
        var fields = try object(DispatchPayload.plain(content))
        fields["nma_data_content_type"] = "application/jose"
        assertMalformed(try json(fields))
        fields["nma_data_content_type"] = "text/plain"
        assertMalformed(try json(fields))
    }

    func testARedeemURLThatIsNotHTTPSIsMalformed() throws {
        var fields = try object(DispatchPayload.plain(content))
        var data = fields["nma_data"] as! [String: Any]
        data["redeem_url"] = "http://fido.example/nevisfido/token/redeem/registration"
        fields["nma_data"] = data
        assertMalformed(try json(fields))
    }

    func testAnEmptyTokenIsMalformed() throws {
        var fields = try object(DispatchPayload.plain(content))
        var data = fields["nma_data"] as! [String: Any]
        data["token"] = ""
        fields["nma_data"] = data
        assertMalformed(try json(fields))
    }

    func testAMissingMemberIsMalformed() throws {
        for member in ["nma_data", "nma_data_content_type", "nma_data_version"] {
            var fields = try object(DispatchPayload.plain(content))
            fields[member] = nil
            assertMalformed(try json(fields))
        }
    }

    func testAnOversizedPayloadIsMalformedBeforeParsing() {
        assertMalformed(String(repeating: " ", count: DispatchPayload.maximumLength + 1))
    }

    func testTextThatIsNotBase64URLIsMalformed() {
        for text in ["", "%%%", Base64URL.encode(Array("not json".utf8)), Base64URL.encode([0xFF, 0xFE])] {
            XCTAssertThrowsError(try DispatchPayload.parse(base64URL: text)) {
                guard case .malformed? = $0 as? DispatchPayloadError else { return XCTFail("\($0)") }
            }
        }
    }

    func testADeviceSignatureNamesItsTargetAndVerifies() throws {
        let key = P256.Signing.PrivateKey()
        let claims = DeviceSignature.Claims(
            dispatchTargetId: "t-9", now: Date(timeIntervalSince1970: 1_700_000_000), method: "GET",
            path: "/nevisfido/devices/credentials/d-1", body: [])
        XCTAssertEqual(claims.creationTimeInEpochMillis, 1_700_000_000_000)
        XCTAssertEqual(claims.htm, "GET")
        XCTAssertEqual(claims.htu, "/nevisfido/devices/credentials/d-1")
        XCTAssertLessThanOrEqual(claims.requestId.count, DeviceSignature.maximumRequestIDLength)
        let jws = try DeviceSignature.sign(claims, dispatchTargetId: "t-9", key: key)
        XCTAssertEqual(DeviceSignature.unverifiedTargetID(jws), "t-9")
        let verified = try JWS.verify(jws, key: key.publicKey)
        XCTAssertEqual(verified.header.kid, "t-9")
        XCTAssertEqual(try JSONDecoder().decode(DeviceSignature.Claims.self, from: Data(verified.payload)), claims)
        XCTAssertNil(DeviceSignature.unverifiedTargetID("a.b.c"))
    }

    /// The body hash is base64url SHA-256 (the empty input's digest is the well-known e3b0c442…).
    func testTheBodyHashIsTheBase64URLSHA256OfTheBody() {
        XCTAssertEqual(DeviceSignature.bodyHash([]), "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
        XCTAssertEqual(DeviceSignature.bodyHash(Array("abc".utf8)), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")
    }

    /// The signed path is the URL's percent-encoded path, without the query.
    func testTheSignedPathIsThePercentEncodedPathWithoutTheQuery() throws {
        let url = try XCTUnwrap(URL(string: "https://h.example/_app/token/dispatch/targets/a%2Fb?username=x"))
        XCTAssertEqual(DeviceSignature.path(of: url), "/_app/token/dispatch/targets/a%2Fb")
    }
}
