import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import NevisProtocol
import UAF
import XCTest

/// The device's own view of the server over loopback TLS: pending out-of-band operations, device information change,
/// check (each mismatch kind produced by a real divergence) and sync, deregistration authorized by the device's
/// signature, and out-of-band deregistration.
final class DeviceInformationFlowTests: BackendTestCase {

    private var stores: Stores { environment.server.stores }

    private func target(_ client: any MobileAuthenticationClient, _ username: String) throws -> String {
        try XCTUnwrap(client.localData.deviceInformation?.idUsernamePairs.first { $0.username == username }?.identifier)
    }

    private func registerPassword(_ client: any MobileAuthenticationClient, _ username: String) async throws {
        try await client.authorizedRegistration(username, choose: AuthenticatorAaid.Password.rawValue)
            .passwordEnroller(ScriptedPasswordEnroller(passwords: ["correct horse 1"])).executeAsync()
    }

    /// A second device of `username`, named "Tablet".
    private func tablet(registering username: String) async throws -> any MobileAuthenticationClient {
        let platform = SimulatedPlatform(
            storageDirectory: environment.directory.appendingPathComponent("tablet"),
            applicationFacetId: environment.platform.applicationFacetId, deviceProfile: .ios)
        let tablet = try await environment.client(platform: platform)
        try await tablet.authorizedRegistration(username, choose: AuthenticatorAaid.Pin.rawValue)
            .deviceInformation(DeviceInformation(name: "Tablet")).pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        return tablet
    }

    // MARK: Pending operations (a push that never arrives: PushFlowTests)

    func testPendingOperationsOfADeviceWithoutRegistrationsAreEmpty() async throws {
        let client = try await environment.client()
        let result = await client.operations.pendingOutOfBandOperations.executeAsync()
        XCTAssertTrue(result.operations.isEmpty && result.errors.isEmpty)
    }

    func testADeviceClockAnHourOffIsClockSkewTooBig() async throws {
        let client = try await environment.client()
        try await client.register("alice")
        environment.platform.advanceClock(by: 3600)
        let pending = await client.operations.pendingOutOfBandOperations.executeAsync()
        guard case .ClockSkewTooBig? = pending.errors.first else { return XCTFail("\(pending.errors)") }
        XCTAssertEqual(pending.errors.first?.httpError?.statusCode, 401, "the refused request is there to log")
        let check = await client.operations.deviceInformationCheck.executeAsync()
        guard case .ClockSkewTooBig? = check.errors.first else { return XCTFail("\(check.errors)") }
        let error = await captureError { try await client.operations.deviceInformationChange.name("x").executeAsync() }
        guard case .ClockSkewTooBig? = error as? DeviceInformationChangeError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(client.localData.deviceInformation?.name, "e2e device", "nothing changed on the device")
    }

    func testAServerWithoutTheDeviceServiceIsOperationNotSupportedByBackend() async throws {
        let client = try await environment.client()
        try await client.register("alice")
        await client.shutdown()
        try await assertNoDeviceService(try await environment.clientWithoutDeviceService(base: environment.server.baseURL))
    }

    // MARK: Change

    func testChangingTheNameAndPushTokenChangesEveryTargetAndTheDevice() async throws {
        let client = try await environment.client()
        try await client.register("alice")
        try await client.register("bob")
        try await client.operations.deviceInformationChange.name("Work phone").fcmRegistrationToken("fcm-new").executeAsync()
        XCTAssertEqual(client.localData.deviceInformation?.name, "Work phone")
        XCTAssertEqual(client.localData.deviceInformation?.fcmRegistrationToken, "fcm-new")
        for username in ["alice", "bob"] {
            let record = try await stores.dispatchTargets.target(id: try target(client, username))
            XCTAssertEqual(record?.name, "Work phone")
            XCTAssertEqual(record?.target, "fcm-new")
        }
        try await client.operations.deviceInformationChange.disablePushNotifications().executeAsync()
        XCTAssertNil(client.localData.deviceInformation?.fcmRegistrationToken)
        let record = try await stores.dispatchTargets.target(id: try target(client, "alice"))
        XCTAssertNil(record?.target)
    }

    func testANameAnotherDeviceOfTheUserHasIsNameAlreadyExistsAndChangesNothing() async throws {
        let phone = try await environment.client()
        try await phone.register("alice")
        _ = try await self.tablet(registering: "alice")
        let error = await captureError { try await phone.operations.deviceInformationChange.name("Tablet").executeAsync() }
        guard case .NameAlreadyExists? = error as? DeviceInformationChangeError else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(phone.localData.deviceInformation?.name, "e2e device")
    }

    func testChangingADeviceWithoutDeviceInformationIsNotFound() async throws {
        let client = try await environment.client()
        let error = await captureError { try await client.operations.deviceInformationChange.name("x").executeAsync() }
        guard case .NotFound? = error as? DeviceInformationChangeError else { return XCTFail("\(String(describing: error))") }
    }

    // MARK: Check and sync

    func testCheckFindsEachKindOfMismatchAndSyncResolvesThem() async throws {
        let client = try await environment.client()
        try await client.register("alice")
        try await registerPassword(client, "alice")
        try await client.register("bob")
        try await client.register("carol")
        let check0 = await client.operations.deviceInformationCheck.executeAsync()
        XCTAssertEqual(check0.mismatches, [])
        XCTAssertTrue(check0.errors.isEmpty, "\(check0.errors)")
        let server = try XCTUnwrap(client.localData.accounts.first?.server)
        let aliceTarget = try target(client, "alice")
        let bobTarget = try target(client, "bob")
        let carolTarget = try target(client, "carol")

        // Bob's authenticator is deleted on the device only: the server still has his credential and his target.
        let bobKey = try await stores.registrations.registrations(username: "bob")[0].keyID
        try await client.localData.deleteAuthenticator(username: "bob", aaid: nil)
        // Alice's password credential is deleted on the server only.
        let alicePassword = try await stores.registrations.registrations(username: "alice").first { $0.aaid == AuthenticatorAaid.Password.rawValue }!
        _ = try await stores.registrations.delete(aaid: alicePassword.aaid, keyID: alicePassword.keyID)
        // Carol's dispatch target is deleted on the server only.
        _ = try await stores.dispatchTargets.delete(id: carolTarget)
        // Alice's target was renamed and given another push token on the server.
        _ = try await stores.dispatchTargets.update(id: aliceTarget, name: "Renamed", target: "server-token", now: Date())

        let check = await client.operations.deviceInformationCheck.executeAsync()
        XCTAssertTrue(check.errors.isEmpty, "\(check.errors)")
        XCTAssertEqual(
            Set(check.mismatches),
            [
                .MissingAuthenticatorInMobileDevice(keyId: bobKey, aaid: AuthenticatorAaid.Pin.rawValue, username: "bob", server: server),
                .MissingAuthenticatorInServer(
                    keyId: alicePassword.keyID, aaid: AuthenticatorAaid.Password.rawValue, username: "alice", server: server),
                .MissingDeviceInformationInMobileDevice(dispatchTargetId: bobTarget, username: "bob", server: server),
                .MissingDeviceInformationInServer(idUsernamePair: IdUsernamePair(identifier: carolTarget, username: "carol"), server: server),
                .DeviceNameMismatch(nameInServer: "Renamed", nameInMobileDevice: "e2e device", server: server),
                .FcmRegistrationTokenMismatch(tokenInServer: "server-token", tokenInMobileDevice: nil, server: server),
            ])

        let sync = await client.operations.deviceInformationSync.mismatches(check.mismatches).executeAsync()
        XCTAssertTrue(sync.errors.isEmpty, "\(sync.errors)")
        let bobRegistrations = try await stores.registrations.registrations(username: "bob")
        XCTAssertEqual(bobRegistrations, [], "the credential the device had no key for is deregistered")
        let bobServerTarget = try await stores.dispatchTargets.target(id: bobTarget)
        XCTAssertNil(bobServerTarget, "the target the device did not know is deleted")
        XCTAssertFalse(
            client.localData.authenticators.contains { $0.aaid == AuthenticatorAaid.Password.rawValue && $0.registration.isRegistered("alice") })
        let alice = try await stores.dispatchTargets.target(id: aliceTarget)
        XCTAssertEqual(alice?.name, "e2e device")
        XCTAssertNil(alice?.target)
        XCTAssertFalse(client.localData.deviceInformation!.idUsernamePairs.contains { $0.username == "carol" })

        // Carol's next authentication creates her target again with its session.
        try await client.authenticate("carol", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
        let carolTargets = try await backend.targets(of: "carol")
        XCTAssertEqual(carolTargets.count, 1)
        let check2 = await client.operations.deviceInformationCheck.executeAsync()
        XCTAssertEqual(check2.mismatches, [])
        XCTAssertTrue(check2.errors.isEmpty, "\(check2.errors)")
    }

    // MARK: Deregistration by the device

    func testJwsAuthorizationDeregistersWithoutTheUserAndOnlyThisDevicesCredentials() async throws {
        let phone = try await environment.client()
        try await phone.register("alice")
        let tablet = try await self.tablet(registering: "alice")
        let tabletDevice = try XCTUnwrap(tablet.localData.deviceInformation?.deviceId)
        let tabletKey = try await stores.registrations.registrations(username: "alice").first { $0.deviceId == tabletDevice }?.keyID
        XCTAssertNotNil(tabletKey, "the registration recorded the device that made it")

        try await phone.operations.deregistration.username("alice").authorizationProvider(JwsAuthorizationProvider()).executeAsync()
        XCTAssertTrue(phone.localData.accounts.isEmpty)
        let remaining = try await stores.registrations.registrations(username: "alice").map(\.keyID)
        XCTAssertEqual(remaining, [tabletKey!], "the tablet's credential stays")
    }

    func testAJwsDeregistrationWithTheClockAnHourOffIsClockSkewTooBig() async throws {
        let phone = try await environment.client()
        try await phone.register("alice")
        environment.platform.advanceClock(by: 3600)
        let error = await captureError {
            try await phone.operations.deregistration.username("alice").authorizationProvider(JwsAuthorizationProvider()).executeAsync()
        }
        guard case .ClockSkewTooBig? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        let request = (error as? OperationError)?.httpError
        XCTAssertEqual(request?.statusCode, 401, "the refused request is there to log")
        XCTAssertEqual(request?.requestUrl.path, "/nevisfido/uaf/1.1/request/deregistration")
        XCTAssertEqual(phone.localData.accounts.map(\.username), ["alice"], "nothing was removed on the device")
        let onServer = try await stores.registrations.registrations(username: "alice")
        XCTAssertEqual(onServer.count, 1, "nor on the server")
    }

    func testAServerWithoutTheDeregistrationEndpointIsOperationNotSupportedByBackend() async throws {
        let phone = try await environment.client()
        try await phone.register("alice")
        await phone.shutdown()
        let older = Configuration(
            baseUrl: environment.server.baseURL, authenticationRequestPath: "/nevisfido/uaf/1.0/request/authentication/",
            deregistrationRequestPath: "/nevisfido/uaf/1.0/request/deregistration/",
            userInteractionTimeoutInSeconds: 5, facetId: environment.platform.applicationFacetId
        )
        .withTransportSecurity(.debug(trustedCertificatesPEM: [environment.server.certificatePEM]))
        let client = try await environment.client(configuration: older)
        let error = await captureError {
            try await client.operations.deregistration.username("alice").authorizationProvider(JwsAuthorizationProvider()).executeAsync()
        }
        guard case .OperationNotSupportedByBackend? = error as? OperationError else { return XCTFail("\(String(describing: error))") }
        let authentication = await captureError {
            _ = try await client.operations.authentication.username("alice").pinUserVerifier(ScriptedPinUserVerifier(pins: ["123456"])).executeAsync()
        }
        guard case .Unknown(let cause)? = authentication as? AuthenticationError, case .OperationNotSupportedByBackend? = cause as? OperationError
        else {
            return XCTFail("authentication has no such case; its cause tells it: \(String(describing: authentication))")
        }
        XCTAssertEqual(client.localData.accounts.map(\.username), ["alice"])
    }

    func testAnOutOfBandDeregistrationRemovesTheKeysOnTheDevice() async throws {
        let client = try await environment.client()
        try await client.register("alice")
        try await client.register("bob")
        let dispatched = try await backend.dispatch(.deregistration, username: "alice", dispatcher: "link", targetID: try target(client, "alice"))
        let payload = try await client.operations.outOfBandPayloadDecode.base64UrlEncoded(try XCTUnwrap(dispatched.dispatcherInformation?.response))
            .executeAsync()
        guard case .deregistration(let usernames) = try await client.operations.outOfBandOperation.payload(payload).executeAsync() else {
            return XCTFail("the token stands for a deregistration")
        }
        XCTAssertEqual(usernames, ["alice"])
        XCTAssertEqual(client.localData.accounts.map(\.username), ["bob"])
        let onServer = try await stores.registrations.registrations(username: "alice")
        XCTAssertEqual(onServer, [])
    }
}
