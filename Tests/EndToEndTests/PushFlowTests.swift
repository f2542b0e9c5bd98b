import DevelopmentStandIns
import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import UAF
import XCTest

/// Push end to end over loopback TLS: the relying party dispatches with `firebase-cloud-messaging`, the server goes
/// through the service-account flow to the local FCM stand-in, the "phone" receives the data map, decrypts it,
/// shows the transaction, and confirms or denies; a push that never reaches the phone is found as pending.
final class PushFlowTests: BackendTestCase {
    override class var withPush: Bool { true }

    /// Registers `username` on a device whose push token is `fcm-<username>` and returns its dispatch target.
    private func registerWithPush(_ client: any MobileAuthenticationClient, _ username: String) async throws -> String {
        try await client.authorizedRegistration(username, choose: AuthenticatorAaid.Pin.rawValue)
            .deviceInformation(DeviceInformation(name: "\(username)'s phone", fcmRegistrationToken: "fcm-\(username)"))
            .pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        return try XCTUnwrap(client.localData.deviceInformation?.idUsernamePairs.first { $0.username == username }?.identifier)
    }

    /// What the app does with an FCM data message: the map as a JSON object, into the payload decoder.
    private func received(_ client: any MobileAuthenticationClient, _ message: FirebaseStandIn.Message) async throws -> OutOfBandAuthentication {
        let json = String(decoding: try JSONEncoder().encode(message.data), as: UTF8.self)
        let payload = try await client.operations.outOfBandPayloadDecode.json(json).executeAsync()
        XCTAssertEqual(payload.contentType, "application/jose")
        let operation = try await client.operations.outOfBandOperation.payload(payload).executeAsync()
        guard case .authentication(let authentication) = operation else {
            struct NotAnAuthentication: Error {}
            XCTFail("the push stands for an authentication, not \(operation)")
            throw NotAnAuthentication()
        }
        return authentication
    }

    func testAPushedTransactionIsDecryptedShownAndConfirmed() async throws {
        let client = try await environment.client()
        let target = try await registerWithPush(client, "alice")
        let dispatched = try await backend.dispatch(
            .authentication, username: "alice", dispatcher: "firebase-cloud-messaging", targetID: target,
            transaction: "Pay CHF 250.00 to Example Shop")
        XCTAssertEqual(dispatched.dispatchResult, "dispatched")
        let firebase = try XCTUnwrap(environment.firebase)
        let arrived = await firebase.messages(atLeast: 1)
        let message = try XCTUnwrap(arrived.first)
        XCTAssertEqual(message.registrationToken, "fcm-alice")
        XCTAssertFalse(message.data.values.contains { $0.contains(dispatched.token!) }, "the token is not readable in transit")

        let authentication = try await received(client, message)
        let selector = ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue)
        _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        XCTAssertEqual(
            selector.shownContexts.compactMap(\.transactionConfirmationData).map { String(decoding: $0, as: UTF8.self) },
            ["Pay CHF 250.00 to Example Shop"])
        let status = try await backend.status(try XCTUnwrap(dispatched.sessionId))
        XCTAssertEqual(status.status, "succeeded")
        XCTAssertEqual(status.userId, "alice")
    }

    func testAPushedTransactionTheUserDeniesIsNotConfirmed() async throws {
        let client = try await environment.client()
        let target = try await registerWithPush(client, "bob")
        let dispatched = try await backend.dispatch(
            .authentication, username: "bob", dispatcher: "firebase-cloud-messaging", targetID: target,
            transaction: "Pay CHF 9,999.00 to Unknown Ltd")
        let arrived = await environment.firebase?.messages(atLeast: 1)
        let message = try XCTUnwrap(arrived?.first)
        let authentication = try await received(client, message)
        let selector = ScriptedAuthenticatorSelector(choose: nil)
        let error = await captureError {
            _ = try await authentication.authenticatorSelector(selector).pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        }
        XCTAssertEqual(fidoCode(try XCTUnwrap(error)), .userCanceled)
        XCTAssertEqual(
            selector.shownContexts.compactMap(\.transactionConfirmationData).map { String(decoding: $0, as: UTF8.self) },
            ["Pay CHF 9,999.00 to Unknown Ltd"], "the user saw what they denied")
        let status = try await backend.status(try XCTUnwrap(dispatched.sessionId)).status
        XCTAssertEqual(status, "failed", "nothing was signed, and the device reported the decline")
    }

    func testAPushThatNeverArrivesIsFoundByPendingOperationsAndCompleted() async throws {
        let client = try await environment.client()
        let target = try await registerWithPush(client, "carol")
        let dispatched = try await backend.dispatch(
            .authentication, username: "carol", dispatcher: "firebase-cloud-messaging", targetID: target,
            transaction: "Pay CHF 12.00 to Example Shop")
        XCTAssertEqual(dispatched.dispatchResult, "dispatched")
        // The message reached FCM but never the phone: the app fetches what is pending when it comes to the foreground.
        let result = await client.operations.pendingOutOfBandOperations.executeAsync()
        XCTAssertTrue(result.errors.isEmpty, "\(result.errors)")
        let operation = try XCTUnwrap(result.operations.first)
        XCTAssertEqual(operation.dispatcherName, "firebase-cloud-messaging")
        // The list can say whom and what it is for before anything is redeemed.
        XCTAssertEqual(operation.operationKind, .authentication)
        XCTAssertEqual(operation.username, "carol")
        XCTAssertEqual(operation.transactionText, "Pay CHF 12.00 to Example Shop")
        XCTAssertEqual(operation.payload.redeemData.token, dispatched.token)
        guard case .authentication(let authentication) = try await client.operations.outOfBandOperation.payload(operation.payload).executeAsync()
        else {
            return XCTFail("the pending operation is an authentication")
        }
        _ = try await authentication.authenticatorSelector(ScriptedAuthenticatorSelector(choose: AuthenticatorAaid.Pin.rawValue))
            .pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        let status = try await backend.status(try XCTUnwrap(dispatched.sessionId)).status
        XCTAssertEqual(status, "succeeded")
    }

    func testDisablingPushStopsPushesToTheDevice() async throws {
        let client = try await environment.client()
        let target = try await registerWithPush(client, "dina")
        try await client.operations.deviceInformationChange.disablePushNotifications().executeAsync()
        let dispatched = try await backend.dispatch(.authentication, username: "dina", dispatcher: "firebase-cloud-messaging", targetID: target)
        XCTAssertEqual(dispatched.dispatchResult, "dispatchTargetNotFound")
        XCTAssertEqual(environment.firebase?.messages.count, 0)
    }
}
