import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import NevisProtocol
import Primitives
import UAF
import XCTest

/// Out-of-band flows end to end over loopback TLS: the relying party's backend dispatches, the virtual device reads
/// the QR code (decoded by zbarimg) or link, redeems, and runs the UAF operation; the status service follows.
final class OutOfBandFlowTests: BackendTestCase {

    /// Registers `username` in-band (which creates the device's dispatch target) and returns the target's id.
    private func registeredTarget(_ client: any MobileAuthenticationClient, _ username: String) async throws -> String {
        try await client.register(username)
        let targets = try await backend.targets(of: username)
        XCTAssertEqual(targets.count, 1)
        return try XCTUnwrap(targets.first?.id)
    }

    private func redeem(_ client: any MobileAuthenticationClient, link: String) async throws -> OutOfBandOperation.Redeemed {
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(link).executeAsync()
        return try await client.operations.outOfBandOperation.payload(payload).executeAsync()
    }

    func testQRCodeRegistrationRegistersTheDeviceAndCreatesItsDispatchTarget() async throws {
        let client = try await environment.client()
        let dispatched = try await backend.dispatch(.registration, username: "alice", dispatcher: "link-png-qr-code")
        XCTAssertEqual(dispatched.dispatchResult, "dispatched")
        let sessionID = try XCTUnwrap(dispatched.sessionId)
        let observed1 = try await backend.status(sessionID).status
        XCTAssertEqual(observed1, "tokenCreated")

        // The phone's camera: zbarimg reads the PNG the server drew.
        let link = try QRReader.read(dataURI: try XCTUnwrap(dispatched.dispatcherInformation?.response))
        XCTAssertTrue(link.hasPrefix("mauth://oob?dispatchTokenResponse="), link)
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(link).executeAsync()
        XCTAssertEqual(payload.contentType, "application/json", "a first registration has no device key to encrypt to")
        XCTAssertEqual(payload.redeemData.redeemUrl.path, "/nevisfido/token/redeem/registration")

        guard case .registration(let registration) = try await client.operations.outOfBandOperation.payload(payload).executeAsync() else {
            return XCTFail("the token stands for a registration")
        }
        XCTAssertEqual(registration.username, "alice")
        let observed2 = try await backend.status(sessionID).status
        XCTAssertEqual(observed2, "clientRegistering")
        try await registration.deviceInformation(DeviceInformation(name: "Alice's phone"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()

        let status = try await backend.status(sessionID)
        XCTAssertEqual(status.status, "succeeded")
        XCTAssertEqual(status.userId, "alice")
        XCTAssertEqual(status.authenticators.map(\.aaid), [AuthenticatorAaid.Pin.rawValue])
        XCTAssertEqual(status.tokenInformation?.tokenResult, "tokenRedeemed")
        // The device created its dispatch target with the registration's session, and knows it.
        let targets = try await backend.targets(of: "alice")
        XCTAssertEqual(targets.map(\.name), ["Alice's phone"])
        XCTAssertEqual(client.localData.deviceInformation?.idUsernamePairs.map(\.identifier), targets.map(\.id))
        XCTAssertEqual(client.localData.accounts.map(\.username), ["alice"])
    }

    func testAPNGQRCodeCarriesThePayloadJSON() async throws {
        let client = try await environment.client()
        let dispatched = try await backend.dispatch(.registration, username: "bob", dispatcher: "png-qr-code")
        let json = try QRReader.read(dataURI: try XCTUnwrap(dispatched.dispatcherInformation?.response))
        XCTAssertTrue(json.contains("\"nma_data_content_type\":\"application/json\""), json)
        let payload = try await client.operations.outOfBandPayloadDecode.json(json).executeAsync()
        XCTAssertEqual(payload.redeemData.token, dispatched.token)
    }

    func testLinkAuthenticationWithATransactionIsEncryptedToTheDeviceAndConfirmed() async throws {
        let client = try await environment.client()
        let target = try await registeredTarget(client, "carol")
        let dispatched = try await backend.dispatch(
            .authentication, username: "carol", dispatcher: "link", targetID: target,
            transaction: "Pay CHF 120.00 to Example Shop")
        XCTAssertEqual(dispatched.dispatchResult, "dispatched")
        let link = try XCTUnwrap(dispatched.dispatcherInformation?.response)
        // What the link carries is a JWE: the token is not readable without the device's key.
        let envelope = try DispatchPayload.parse(base64URL: link)
        guard case .encrypted = envelope else { return XCTFail("the payload must be encrypted to the device") }
        XCTAssertFalse(
            String(decoding: Base64URL.decodeBytes(String(link.split(separator: "=").last!)) ?? [], as: UTF8.self).contains(dispatched.token!))

        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(link).executeAsync()
        XCTAssertEqual(payload.contentType, "application/jose")
        guard case .authentication(let authentication) = try await client.operations.outOfBandOperation.payload(payload).executeAsync() else {
            return XCTFail("the token stands for an authentication")
        }
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        let provider = try await authentication.authenticatorSelector(selector).pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"]))
            .executeAsync()
        XCTAssertNotNil(provider)
        let shown = selector.shownContexts.compactMap(\.transactionConfirmationData).map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(shown, ["Pay CHF 120.00 to Example Shop"])
        let status = try await backend.status(try XCTUnwrap(dispatched.sessionId))
        XCTAssertEqual(status.status, "succeeded")
        XCTAssertEqual(status.userId, "carol")
    }

    func testTheUserDenyingATransactionFailsTheOperation() async throws {
        let client = try await environment.client()
        let target = try await registeredTarget(client, "dina")
        let dispatched = try await backend.dispatch(
            .authentication, username: "dina", dispatcher: "link", targetID: target, transaction: "Pay CHF 9,999.00")
        guard case .authentication(let authentication) = try await redeem(client, link: dispatched.dispatcherInformation!.response!) else {
            return XCTFail("the token stands for an authentication")
        }
        let error = await captureError {
            _ = try await authentication.authenticatorSelector(ScriptedAuthenticatorSelector(choose: nil))
                .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .userCanceled)
        let status = try await backend.status(dispatched.sessionId!)
        XCTAssertEqual(status.status, "failed", "the device reports the decline, and the operation ends at once")
        XCTAssertEqual(status.clientErrorCode, FidoErrorCode.userCanceled.rawValue)
        XCTAssertEqual(status.asmStatusCode, 3)
    }

    func testARedeemedTokenCannotBeRedeemedAgain() async throws {
        let client = try await environment.client()
        let dispatched = try await backend.dispatch(.registration, username: "erin", dispatcher: "link")
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(dispatched.dispatcherInformation!.response!).executeAsync()
        _ = try await client.operations.outOfBandOperation.payload(payload).executeAsync()
        let error = await captureError { _ = try await client.operations.outOfBandOperation.payload(payload).executeAsync() }
        guard case .TokenAlreadyRedeemed? = error as? OutOfBandOperationError else { return XCTFail("\(String(describing: error))") }
    }

    func testAnExpiredTokenIsTokenExpiredAndTheStatusSaysTimedOut() async throws {
        let client = try await environment.client()
        let dispatched = try await backend.dispatch(.registration, username: "fred", dispatcher: "link")
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(dispatched.dispatcherInformation!.response!).executeAsync()
        environment.clock.advance(301)
        let observed4 = try await backend.status(dispatched.sessionId!).tokenInformation?.tokenResult
        XCTAssertEqual(observed4, "tokenTimedOut")
        let error = await captureError { _ = try await client.operations.outOfBandOperation.payload(payload).executeAsync() }
        guard case .TokenExpired? = error as? OutOfBandOperationError else { return XCTFail("\(String(describing: error))") }
        let status = try await backend.status(dispatched.sessionId!)
        XCTAssertEqual(status.status, "failed")
        XCTAssertEqual(status.tokenInformation?.tokenResult, "tokenTimedOut")
    }

    func testATamperedJWEIsADecryptionErrorAndNothingIsRedeemed() async throws {
        let client = try await environment.client()
        let target = try await registeredTarget(client, "gina")
        let dispatched = try await backend.dispatch(.authentication, username: "gina", dispatcher: "link", targetID: target)
        let link = dispatched.dispatcherInformation!.response!
        let json = String(decoding: Base64URL.decodeBytes(String(link.split(separator: "=").last!))!, as: UTF8.self)
        guard case .encrypted(let jwe, _) = try DispatchPayload.parse(json: json) else { return XCTFail("encrypted") }
        var parts = jwe.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var ciphertext = Base64URL.decodeBytes(parts[3])!
        ciphertext[0] ^= 0x01
        parts[3] = Base64URL.encode(ciphertext)
        let tampered = json.replacingOccurrences(of: jwe, with: parts.joined(separator: "."))
        let error = await captureError { _ = try await client.operations.outOfBandPayloadDecode.json(tampered).executeAsync() }
        guard case .DecryptionError? = error as? OutOfBandPayloadError else { return XCTFail("\(String(describing: error))") }
        let observed5 = try await backend.status(dispatched.sessionId!).status
        XCTAssertEqual(observed5, "tokenCreated", "nothing was redeemed")
    }

    func testAPayloadForAnotherDeviceDoesNotDecrypt() async throws {
        let alicePhone = try await environment.client()
        let target = try await registeredTarget(alicePhone, "hank")
        let dispatched = try await backend.dispatch(.authentication, username: "hank", dispatcher: "link", targetID: target)
        let otherPlatform = SimulatedPlatform(
            storageDirectory: environment.directory.appendingPathComponent("other-device"),
            applicationFacetId: environment.platform.applicationFacetId)
        let otherPhone = try await environment.client(platform: otherPlatform)
        try await otherPhone.register("ivan")  // it has device keys of its own, not hank's
        let error = await captureError {
            _ = try await otherPhone.operations.outOfBandPayloadDecode.base64UrlEncoded(dispatched.dispatcherInformation!.response!).executeAsync()
        }
        guard case .DecryptionError? = error as? OutOfBandPayloadError else { return XCTFail("\(String(describing: error))") }
    }

    func testAMalformedPayloadIsMalformedPayload() async throws {
        let client = try await environment.client()
        for text in [
            "", "not base64!", Base64URL.encode(Array("{\"nma_data\":1}".utf8)),
            Base64URL.encode(
                Array(
                    #"{"nma_data":{"token":"t","redeem_url":"http://plain.example/r"},"nma_data_content_type":"application/json","nma_data_version":"1"}"#
                        .utf8)),
        ] {
            let error = await captureError { _ = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(text).executeAsync() }
            guard case .MalformedPayload? = error as? OutOfBandPayloadError else { return XCTFail("\(text): \(String(describing: error))") }
        }
    }

    func testAnAndroidFingerprintRegistersAndConfirmsOutOfBand() async throws {
        try await backend.shutdown()
        try await environment.shutdown()
        environment = try await Environment(profile: .android)
        backend = try RelyingPartyBackend(environment.server)
        let client = try await environment.client()
        let os = ScriptedOSVerifier()
        let registrationLink = try await backend.dispatch(.registration, username: "frank", dispatcher: "link")
        guard case .registration(let registration) = try await redeem(client, link: try XCTUnwrap(registrationLink.dispatcherInformation?.response))
        else {
            return XCTFail("the token stands for a registration")
        }
        try await registration.deviceInformation(DeviceInformation(name: "Frank's Android"))
            .authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#0002")).fingerprintUserVerifier(os).executeAsync()
        let target = try XCTUnwrap(client.localData.deviceInformation?.idUsernamePairs.first?.identifier)
        let dispatched = try await backend.dispatch(
            .authentication, username: "frank", dispatcher: "link", targetID: target, transaction: "Pay CHF 5.00")
        guard case .authentication(let authentication) = try await redeem(client, link: try XCTUnwrap(dispatched.dispatcherInformation?.response))
        else {
            return XCTFail("the token stands for an authentication")
        }
        _ = try await authentication.authenticatorSelector(ScriptedAuthenticatorSelector(choose: "F1D0#0002")).fingerprintUserVerifier(os)
            .executeAsync()
        XCTAssertEqual(os.shownAuthenticators, ["F1D0#0002", "F1D0#0002"], "the fingerprint prompt was shown for both")
        let status = try await backend.status(try XCTUnwrap(dispatched.sessionId)).status
        XCTAssertEqual(status, "succeeded")
    }
}
