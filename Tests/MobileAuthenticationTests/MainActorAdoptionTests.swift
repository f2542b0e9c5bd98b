import Dispatch
import Foundation
import MobileAuthenticationSimulator
import XCTest

@testable import MobileAuthentication
@testable import MobileAuthenticationCore

/// A view controller as an iOS app writes it under Swift 6: isolated to the main actor, with state of its own, adopting
/// the interaction protocols with `@preconcurrency`. That compiles (this file is the proof), and the Swift runtime
/// then checks every call the SDK makes into it to be on the main actor, which the SDK's default callback queue
/// (the main queue on Apple platforms) gives. A call from anywhere else traps, so the flows below prove the SDK
/// never makes one: not for a question, not for a policy.
@MainActor
final class ScreenInteraction {
    var shown: [String] = []
    var pins: [String]
    init(pins: [String]) { self.pins = pins }
    func next() -> String { pins.isEmpty ? "" : pins.removeFirst() }
}

extension ScreenInteraction: @preconcurrency AuthenticatorSelector {
    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler) {
        shown.append("select")
        handler.aaid("F1D0#1001")
    }
}

extension ScreenInteraction: @preconcurrency AccountSelector {
    func selectAccount(context: any AccountSelectionContext, handler: any AccountSelectionHandler) {
        shown.append("account")
        handler.username(context.accounts[0].username)
    }
}

extension ScreenInteraction: @preconcurrency PinEnroller {
    func enrollPin(context: any PinEnrollmentContext, handler: any PinEnrollmentHandler) {
        shown.append("enrollPin")
        handler.pin(next())
    }
    func pinPolicy() -> PinPolicy {
        shown.append("pinPolicy")
        return PinPolicy()
    }
    func onValidCredentialsProvided() { shown.append("valid") }
}

extension ScreenInteraction: @preconcurrency PinUserVerifier {
    func verifyPin(context: any PinUserVerificationContext, handler: any PinUserVerificationHandler) {
        shown.append("verifyPin")
        handler.verify(next())
    }
}

extension ScreenInteraction: @preconcurrency PinChanger {
    func changePin(context: any PinChangeContext, handler: any PinChangeHandler) {
        shown.append("changePin")
        handler.pins(next(), next())
    }
}

/// The remaining app-implemented protocols, adopted the same way: that they compile is what this type proves.
@MainActor
final class EveryOtherScreen {}

extension EveryOtherScreen: @preconcurrency PasswordEnroller {
    func enrollPassword(context: any PasswordEnrollmentContext, handler: any PasswordEnrollmentHandler) { handler.cancel() }
    func passwordPolicy() -> any PasswordPolicy { ScriptedPasswordPolicy() }
}
extension EveryOtherScreen: @preconcurrency PasswordUserVerifier {
    func verifyPassword(context: any PasswordUserVerificationContext, handler: any PasswordUserVerificationHandler) { handler.cancel() }
}
extension EveryOtherScreen: @preconcurrency PasswordChanger {
    func changePassword(context: any PasswordChangeContext, handler: any PasswordChangeHandler) { handler.cancel() }
}
extension EveryOtherScreen: @preconcurrency BiometricUserVerifier {
    func verifyBiometric(context: any BiometricUserVerificationContext, handler: any BiometricUserVerificationHandler) { handler.verify() }
}
extension EveryOtherScreen: @preconcurrency DevicePasscodeUserVerifier {
    func verifyDevicePasscode(context: any DevicePasscodeUserVerificationContext, handler: any DevicePasscodeUserVerificationHandler) {
        handler.verify()
    }
}
extension EveryOtherScreen: @preconcurrency FingerprintUserVerifier {
    func verifyFingerprint(context: any FingerprintUserVerificationContext, handler: any FingerprintUserVerificationHandler) { handler.cancel() }
}

final class MainActorAdoptionTests: XCTestCase {
    var directory: URL!
    override func setUp() { directory = FileManager.default.temporaryDirectory.appendingPathComponent("mauth-mainactor-\(UUID().uuidString)") }
    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    @MainActor
    func testAMainActorScreenRegistersAuthenticatesAndChangesItsPin() async throws {
        let (client, _, _) = try await makeInMemoryClient(in: directory, callbackQueue: .main)
        let screen = ScreenInteraction(pins: ["123456", "123456", "123456", "654321"])
        let registered = expectation(description: "registered")
        client.operations.registration.username("alice").deviceInformation(DeviceInformation(name: "unit"))
            .authenticatorSelector(screen).pinEnroller(screen)
            .onSuccess { registered.fulfill() }
            .onError {
                XCTFail("\($0)")
                registered.fulfill()
            }
            .execute()
        await fulfillment(of: [registered], timeout: 20)

        let authenticated = expectation(description: "authenticated")
        client.operations.authentication.accountSelector(screen).authenticatorSelector(screen).pinUserVerifier(screen)
            .onSuccess { _ in authenticated.fulfill() }
            .onError {
                XCTFail("\($0)")
                authenticated.fulfill()
            }
            .execute()
        await fulfillment(of: [authenticated], timeout: 20)

        let changed = expectation(description: "changed")
        client.operations.pinChange.username("alice").pinChanger(screen)
            .onSuccess { changed.fulfill() }
            .onError {
                XCTFail("\($0)")
                changed.fulfill()
            }
            .execute()
        await fulfillment(of: [changed], timeout: 20)

        XCTAssertEqual(screen.shown, ["select", "pinPolicy", "enrollPin", "valid", "select", "verifyPin", "valid", "pinPolicy", "changePin"])
        await client.shutdown()
    }

    @MainActor
    func testEveryInteractionProtocolTakesAMainActorType() {
        let other = EveryOtherScreen()
        let adopted: [Any] = [
            other as any PasswordEnroller, other as any PasswordUserVerifier, other as any PasswordChanger,
            other as any BiometricUserVerifier, other as any DevicePasscodeUserVerifier, other as any FingerprintUserVerifier,
        ]
        XCTAssertEqual(adopted.count, 6)
    }
}
