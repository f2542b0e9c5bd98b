import FIDOServer
import Foundation
import MobileAuthentication
import MobileAuthenticationSimulator
import TestSupport
import UAF
import XCTest

/// Every interaction kind can be cancelled by its handler's `cancel()` and by cancelling the task awaiting
/// `executeAsync()`: the operation ends with `userCanceled` at once and leaves nothing half-written.
final class CancellationTests: XCTestCase {
    var env: Environment!
    override func setUp() async throws { env = try await Environment() }
    override func tearDown() async throws { try await env.shutdown() }

    enum Way { case handler, task }

    /// One interaction kind: `run(cancel)` runs an operation whose interaction object of that kind either cancels
    /// (`.handler`) or stays silent (`.task`); `asked` tells when the silent object has been asked.
    struct Kind: @unchecked Sendable {
        let name: String
        let run: (Way) async throws -> Void
        let asked: () -> Bool
    }

    /// Runs `kind` both ways and checks the outcome is a cancellation.
    /// `reset` forgets the interaction objects of the previous run, so that `asked` sees only the silent one.
    func check(_ kind: Kind, reset: () -> Void, file: StaticString = #filePath, line: UInt = #line) async throws {
        reset()
        let byHandler = await captureError { try await kind.run(.handler) }
        XCTAssertTrue(isCancellation(byHandler), "\(kind.name) by handler: \(String(describing: byHandler))", file: file, line: line)
        reset()
        let started = Date()
        let task = Task { await captureError { try await kind.run(.task) } }
        let asked = try await eventually(within: .seconds(20), every: .milliseconds(10)) { kind.asked() }
        task.cancel()
        guard asked else { return XCTFail("\(kind.name) was never asked", file: file, line: line) }
        let byTask = await task.value
        XCTAssertTrue(isCancellation(byTask), "\(kind.name) by task: \(String(describing: byTask))", file: file, line: line)
        XCTAssertLessThan(
            Date().timeIntervalSince(started), 4.5, "\(kind.name): the pending prompt ended at once, not at the 5 s timeout",
            file: file, line: line)
    }

    func isCancellation(_ error: (any Error)?) -> Bool {
        if let error, fidoCode(error) == .userCanceled { return true }
        if case .UserCanceled? = error as? PinChangeError { return true }
        if case .UserCanceled? = error as? PasswordChangeError { return true }
        return false
    }

    func registration(_ client: any MobileAuthenticationClient, _ username: String, aaid: String) async throws -> Registration {
        try await client.authorizedRegistration(username, choose: aaid)
    }

    func testRegistrationInteractionsCancelAndLeaveNothing() async throws {
        let client = try await env.client()
        let selectorWay = Box<(any AuthenticatorSelector)?>(nil)
        let pinEnroller = Box<ScriptedPinEnroller?>(nil)
        let passwordEnroller = Box<ScriptedPasswordEnroller?>(nil)
        let os = Box<ScriptedOSVerifier?>(nil)
        let kinds = [
            Kind(
                name: "authenticator selector",
                run: { way in
                    let selector: any AuthenticatorSelector = way == .handler ? ScriptedAuthenticatorSelector(choose: nil) : SilentSelector()
                    selectorWay.value = selector
                    try await self.registration(client, "reg", aaid: "F1D0#1001").authenticatorSelector(selector).executeAsync()
                }, asked: { (selectorWay.value as? SilentSelector)?.asked ?? false }),
            Kind(
                name: "PIN enroller",
                run: { way in
                    pinEnroller.value = ScriptedPinEnroller(pins: way == .handler ? [nil] : [])
                    try await self.registration(client, "reg", aaid: "F1D0#1001").pinEnroller(pinEnroller.value!).executeAsync()
                }, asked: { !(pinEnroller.value?.shownContexts.isEmpty ?? true) }),
            Kind(
                name: "password enroller",
                run: { way in
                    passwordEnroller.value = ScriptedPasswordEnroller(passwords: way == .handler ? [nil] : [])
                    try await self.registration(client, "reg", aaid: "F1D0#1005").passwordEnroller(passwordEnroller.value!).executeAsync()
                }, asked: { !(passwordEnroller.value?.shownContexts.isEmpty ?? true) }),
            Kind(
                name: "biometric verifier",
                run: { way in
                    os.value = ScriptedOSVerifier([way == .handler ? .cancel : .silent])
                    try await self.registration(client, "reg", aaid: "F1D0#1003").biometricUserVerifier(os.value!).executeAsync()
                }, asked: { !(os.value?.shownAuthenticators.isEmpty ?? true) }),
            Kind(
                name: "device passcode verifier",
                run: { way in
                    os.value = ScriptedOSVerifier([way == .handler ? .cancel : .silent])
                    try await self.registration(client, "reg", aaid: "F1D0#1004").devicePasscodeUserVerifier(os.value!).executeAsync()
                }, asked: { !(os.value?.shownAuthenticators.isEmpty ?? true) }),
        ]
        for kind in kinds {
            try await check(
                kind,
                reset: {
                    selectorWay.value = nil
                    pinEnroller.value = nil
                    passwordEnroller.value = nil
                    os.value = nil
                })
        }
        XCTAssertTrue(client.localData.accounts.isEmpty)
        XCTAssertNil(client.localData.deviceInformation)
        let stored = try await env.server.stores.registrations.registrations(username: "reg")
        XCTAssertTrue(stored.isEmpty)
        let store = try await SecureStorageAccess.open(env.platform)
        let keys = try await store.keys()
        XCTAssertEqual(keys.filter { $0 != "state" }, [], "no key or verifier was written")
    }

    func testAuthenticationAndChangeInteractionsCancelAndSignNothing() async throws {
        let client = try await env.client()
        let os = ScriptedOSVerifier()
        for (user, aaid) in [("first", "F1D0#1001"), ("second", "F1D0#1001")] {
            try await registration(client, user, aaid: aaid).pinEnroller(ScriptedPinEnroller(pins: ["123456"])).executeAsync()
        }
        for aaid in ["F1D0#1003", "F1D0#1004", "F1D0#1005"] {
            try await registration(client, "first", aaid: aaid).biometricUserVerifier(os).devicePasscodeUserVerifier(os)
                .passwordEnroller(ScriptedPasswordEnroller(passwords: ["long enough 7"])).executeAsync()
        }
        let accountSelector = Box<AnyObject?>(nil)
        let pinVerifier = Box<ScriptedPinUserVerifier?>(nil)
        let passwordVerifier = Box<ScriptedPasswordUserVerifier?>(nil)
        let osBox = Box<ScriptedOSVerifier?>(nil)
        let pinChanger = Box<ScriptedPinChanger?>(nil)
        let passwordChanger = Box<ScriptedPasswordChanger?>(nil)
        let kinds = [
            Kind(
                name: "account selector",
                run: { way in
                    let selector: any AccountSelector = way == .handler ? ScriptedAccountSelector(choose: nil) : SilentAccountSelector()
                    accountSelector.value = selector as AnyObject
                    _ = try await client.operations.authentication.accountSelector(selector).executeAsync()
                }, asked: { (accountSelector.value as? SilentAccountSelector)?.asked ?? false }),
            Kind(
                name: "PIN verifier",
                run: { way in
                    pinVerifier.value = ScriptedPinUserVerifier(pins: way == .handler ? [nil] : [])
                    _ = try await client.operations.authentication.username("second").pinUserVerifier(pinVerifier.value!).executeAsync()
                }, asked: { !(pinVerifier.value?.shownContexts.isEmpty ?? true) }),
            Kind(
                name: "password verifier",
                run: { way in
                    passwordVerifier.value = ScriptedPasswordUserVerifier(passwords: way == .handler ? [nil] : [])
                    _ = try await client.operations.authentication.username("first").authenticatorSelector(
                        ScriptedAuthenticatorSelector(choose: "F1D0#1005")
                    )
                    .passwordUserVerifier(passwordVerifier.value!).executeAsync()
                }, asked: { !(passwordVerifier.value?.shownContexts.isEmpty ?? true) }),
            Kind(
                name: "biometric verifier",
                run: { way in
                    osBox.value = ScriptedOSVerifier([way == .handler ? .cancel : .silent])
                    _ = try await client.operations.authentication.username("first").authenticatorSelector(
                        ScriptedAuthenticatorSelector(choose: "F1D0#1003")
                    )
                    .biometricUserVerifier(osBox.value!).executeAsync()
                }, asked: { !(osBox.value?.shownAuthenticators.isEmpty ?? true) }),
            Kind(
                name: "device passcode verifier",
                run: { way in
                    osBox.value = ScriptedOSVerifier([way == .handler ? .cancel : .silent])
                    _ = try await client.operations.authentication.username("first").authenticatorSelector(
                        ScriptedAuthenticatorSelector(choose: "F1D0#1004")
                    )
                    .devicePasscodeUserVerifier(osBox.value!).executeAsync()
                }, asked: { !(osBox.value?.shownAuthenticators.isEmpty ?? true) }),
            Kind(
                name: "PIN changer",
                run: { way in
                    pinChanger.value = ScriptedPinChanger(pins: way == .handler ? [nil] : [])
                    try await client.operations.pinChange.username("first").pinChanger(pinChanger.value!).executeAsync()
                }, asked: { !(pinChanger.value?.shownContexts.isEmpty ?? true) }),
            Kind(
                name: "password changer",
                run: { way in
                    passwordChanger.value = ScriptedPasswordChanger(passwords: way == .handler ? [nil] : [])
                    try await client.operations.passwordChange.username("first").passwordChanger(passwordChanger.value!).executeAsync()
                }, asked: { !(passwordChanger.value?.shownContexts.isEmpty ?? true) }),
        ]
        for kind in kinds {
            try await check(
                kind,
                reset: {
                    accountSelector.value = nil
                    pinVerifier.value = nil
                    passwordVerifier.value = nil
                    osBox.value = nil
                    pinChanger.value = nil
                    passwordChanger.value = nil
                })
        }
        for user in ["first", "second"] {
            let stored = try await env.server.stores.registrations.registrations(username: user)
            XCTAssertEqual(stored.map(\.signCounter), stored.map { _ in 0 }, "nothing was signed for \(user)")
        }
        // The secrets are unchanged.
        try await client.authenticate("first", verifier: ScriptedPinUserVerifier(pins: ["123456"]))
    }
}

extension CancellationTests {
    /// A user who cancels more registrations than `limits.outstandingRequestsPerUsername` (10) allows at once can
    /// still register: the SDK reports each cancel, and the server ends that request, so none is left to count.
    func testCancellingMoreRegistrationsThanTheUsersCapDoesNotLockHerOut() async throws {
        let client = try await env.client()
        for attempt in 1...11 {
            let error = await captureError { try await client.register("patient", pins: [nil]) }
            XCTAssertTrue(isCancellation(error), "attempt \(attempt): \(String(describing: error))")
        }
        try await client.register("patient")
        let stored = try await env.server.stores.registrations.registrations(username: "patient")
        XCTAssertEqual(stored.count, 1)
    }

    func testTheAndroidFingerprintPromptCancels() async throws {
        try await env.shutdown()
        env = try await Environment(profile: .android)
        let client = try await env.client()
        let os = Box<ScriptedOSVerifier?>(nil)
        try await check(
            Kind(
                name: "fingerprint verifier",
                run: { way in
                    os.value = ScriptedOSVerifier([way == .handler ? .cancel : .silent])
                    try await self.registration(client, "finger", aaid: "F1D0#0002").fingerprintUserVerifier(os.value!).executeAsync()
                }, asked: { !(os.value?.shownAuthenticators.isEmpty ?? true) }), reset: { os.value = nil })
        XCTAssertTrue(client.localData.accounts.isEmpty)
    }
}

/// A mutable holder the test closures share.
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

/// Selectors that never answer and say when they were asked.
final class SilentSelector: AuthenticatorSelector, @unchecked Sendable {
    private let lock = NSLock()
    private var wasAsked = false
    var asked: Bool { lock.withLock { wasAsked } }
    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        lock.withLock { wasAsked = true }
    }
}

final class SilentAccountSelector: AccountSelector, @unchecked Sendable {
    private let lock = NSLock()
    private var wasAsked = false
    var asked: Bool { lock.withLock { wasAsked } }
    func selectAccount(context: any AccountSelectionContext, handler: any AccountSelectionHandler) { lock.withLock { wasAsked = true } }
}
